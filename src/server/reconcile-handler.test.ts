// /reconcile during an admission burst: the snapshot key is turned away with
// 503 + Retry-After (its build would hold the event loop that answers the
// webhooks), never for longer than the bound; route keys are answered.

import { describe, expect, it } from "vitest";
import { MemoryDataPlane } from "../dataplane/memory.js";
import { silentLogger } from "../observability/logger.js";
import { kubeEventRecorder } from "../reconcile/events.js";
import { Reconciler } from "../reconcile/reconciler.js";
import { FakeKube } from "../../test/fixtures/fake-kube.js";
import type { CallerAuth } from "./caller-auth.js";
import { reconcileHandler } from "./reconcile-handler.js";

const log = silentLogger();
const allow: CallerAuth = { check: () => Promise.resolve({ ok: true, user: "test" }) };

describe("reconcileHandler during an admission burst", () => {
  it("turns the snapshot key away while admission is busy, for at most maxMs, and answers route keys", async () => {
    const kube = new FakeKube();
    const reconciler = new Reconciler(kube, new MemoryDataPlane(), kubeEventRecorder(kube, log), log);
    let busy = true;
    const handler = reconcileHandler(reconciler, allow, undefined, { busy: () => busy, maxMs: 200 });
    const call = async (key: string) => await handler.handle({ key }, { headers: {}, log });

    const first = await call("$snapshot");
    expect(first.status).toBe(503);
    expect(first.headers?.["retry-after"]).toBe("1");
    expect(JSON.stringify(first.body)).toContain("AdmissionBusy");
    expect((await call("shop/r1")).status).toBe(200);
    // Still busy past the bound: it runs anyway, then waits again.
    await new Promise((r) => setTimeout(r, 250));
    expect((await call("$snapshot")).status).toBe(200);
    expect((await call("$snapshot")).status).toBe(503);
    // Quiet again: answered at once.
    busy = false;
    expect((await call("$snapshot")).status).toBe(200);
  });
});
