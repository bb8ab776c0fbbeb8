// Events aggregated and rate-limited: a repeat is one PATCH of the first
// Event's count; a chatty route is held to its token bucket. The recorder's
// calls are captured by a fake KubeClient (the decision logic needs no cluster).

import { silentLogger } from "../observability/logger.js";
import { describe, expect, it } from "vitest";
import type { EdgeRouteV2 } from "../api/types.js";
import { KubeError, type KubeClient } from "../kube/client.js";
import { EventCorrelator } from "./event-correlator.js";
import { kubeEventRecorder } from "./events.js";

interface Call {
  method: string;
  path: string;
  body: Record<string, unknown>;
}

function fakeKube(calls: Call[], opts: { patchStatus?: number } = {}): KubeClient {
  return {
    json<T>(method: string, path: string, o?: { body?: unknown }): Promise<T> {
      calls.push({ method, path, body: o?.body as Record<string, unknown> });
      if (method === "PATCH" && opts.patchStatus)
        return Promise.reject(new KubeError(opts.patchStatus, "NotFound", "gone"));
      return Promise.resolve({} as T);
    },
    stream: () => Promise.reject(new Error("no streams")),
  };
}

const route = (name: string): EdgeRouteV2 =>
  ({
    apiVersion: "net.10xdev.io/v2",
    kind: "EdgeRoute",
    metadata: { name, namespace: "apps", uid: `uid-${name}` },
    spec: { hostnames: [], rules: [] },
  }) as unknown as EdgeRouteV2;

const log = silentLogger();

describe("event aggregation", () => {
  it("records a repeated reason once, then bumps its count", async () => {
    const calls: Call[] = [];
    const rec = kubeEventRecorder(fakeKube(calls), log, new EventCorrelator());
    for (let i = 0; i < 10; i++) await rec.record(route("a"), "Warning", "PushFailed", `attempt ${i}`);
    expect(calls.map((c) => c.method)).toEqual(["POST", ...Array<string>(9).fill("PATCH")]);
    const created = (calls[0]?.body.metadata as { name: string }).name;
    expect(calls[1]?.path).toBe(`/api/v1/namespaces/apps/events/${created}`);
    expect(calls.slice(1).map((c) => c.body.count)).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(calls[9]?.body.message).toBe("attempt 9");
    // Another reason, or another route, is an Event of its own.
    await rec.record(route("a"), "Warning", "DeprogramStuck", "x");
    await rec.record(route("b"), "Warning", "PushFailed", "x");
    expect(calls.slice(10).map((c) => c.method)).toEqual(["POST", "POST"]);
  });

  it("creates a new Event when the one to bump has expired", async () => {
    const calls: Call[] = [];
    const rec = kubeEventRecorder(fakeKube(calls, { patchStatus: 404 }), log, new EventCorrelator());
    await rec.record(route("a"), "Warning", "PushFailed", "1");
    await rec.record(route("a"), "Warning", "PushFailed", "2");
    expect(calls.map((c) => c.method)).toEqual(["POST", "PATCH", "POST"]);
    expect(calls[2]?.body.count).toBe(1);
  });

  it("starts a new Event after the window", () => {
    let now = 0;
    const c = new EventCorrelator({ now: () => now, windowMs: 600_000 });
    const key = { object: "u", type: "Warning", reason: "R" };
    expect(c.decide(key)).toEqual({ action: "create" });
    c.created(key, "e1");
    now = 600_000;
    expect(c.decide(key)).toEqual({ action: "bump", name: "e1", count: 2 });
    now = 1_200_001;
    expect(c.decide(key)).toEqual({ action: "create" });
  });

  it("holds each object to a token bucket: 25 at once, then one per 5 minutes", () => {
    let now = 0;
    const c = new EventCorrelator({ now: () => now });
    const decisions = Array.from({ length: 40 }, (_, i) =>
      c.decide({ object: "chatty", type: "Warning", reason: `R${i}` }),
    );
    expect(decisions.filter((d) => d.action !== "drop")).toHaveLength(25);
    expect(decisions.slice(25).every((d) => d.action === "drop")).toBe(true);
    // Another object is not held back by the chatty one.
    expect(c.decide({ object: "quiet", type: "Normal", reason: "R" }).action).toBe("create");
    now = 5 * 60_000;
    expect(c.decide({ object: "chatty", type: "Warning", reason: "later" }).action).toBe("create");
    expect(c.decide({ object: "chatty", type: "Warning", reason: "later2" }).action).toBe("drop");
  });

  it("stays bounded however many objects it sees", () => {
    const c = new EventCorrelator({ maxEntries: 100 });
    for (let i = 0; i < 10_000; i++) {
      const key = { object: `o${i}`, type: "Normal", reason: "R" };
      c.decide(key);
      c.created(key, `e${i}`);
    }
    // The oldest were forgotten: o0 starts afresh, the newest is still known.
    expect(c.decide({ object: "o0", type: "Normal", reason: "R" }).action).toBe("create");
    expect(c.decide({ object: "o9999", type: "Normal", reason: "R" })).toMatchObject({ action: "bump" });
  });
});
