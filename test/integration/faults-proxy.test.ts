// Fault suite, part 1: a proxy in front of the real apiserver that the test
// controls. The operator's server and watchers reach the apiserver only
// through it; kubectl (the load) goes straight. Under routes being created and
// deleted: watch streams and connections reset mid-flight; a stretch of 429s
// with Retry-After; the leader watcher killed. After each, nothing stranded,
// nothing served that is gone, nothing missing, nothing crashed.

import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startControlPlane } from "../harness/control-plane.js";
import type { ControlPlane } from "../../tools/testenv/control-plane.js";
import { awaitConvergence, kubeconfigVia, summaryLine, type FaultOutcome } from "../harness/fault-checks.js";
import { startFaultProxy, type FaultProxy } from "../harness/fault-proxy.js";
import { startOperatorStack, SYSTEM_NAMESPACE, type OperatorStack } from "../harness/operator-stack.js";
import { sleep, waitFor } from "../../tools/testenv/process.js";
import { createRoutes, deleteRoutes, routeName } from "./fault-load.js";
import { apply, service } from "./routes.js";

let cp: ControlPlane;
let proxy: FaultProxy;
let stack: OperatorStack;
let dir: string;

function expectClean(o: FaultOutcome): void {
  expect(o.strandedFinalizers, "stranded finalizers").toEqual([]);
  expect(o.servedGone, "served but gone").toEqual([]);
  expect(o.missing, "missing from the data plane").toEqual([]);
  expect(o.crashed, "crashed processes").toEqual([]);
}

const names = (prefix: string, from: number, to: number): string[] =>
  Array.from({ length: to - from }, (_, i) => routeName(prefix, from + i));

async function leaseHolder(): Promise<string> {
  const r = await cp.kubectl([
    "get",
    "lease",
    "edge-operator-watcher",
    "-n",
    SYSTEM_NAMESPACE,
    "-o",
    "jsonpath={.spec.holderIdentity}",
  ]);
  return r.stdout.trim();
}

beforeAll(async () => {
  cp = await startControlPlane();
  dir = mkdtempSync(path.join(os.tmpdir(), "edge-faults-proxy-"));
  const api = new URL(cp.server);
  proxy = await startFaultProxy({ host: api.hostname, port: Number(api.port) }, cp.servingCertFiles);
  const kubeconfig = kubeconfigVia(cp.kubeconfig, proxy.url, path.join(dir, "via-proxy.kubeconfig"));
  stack = await startOperatorStack(cp, { kubeconfig, watcher: false, watchArgs: ["--lease-duration", "6s"] });
  for (const ns of ["cuts", "storm", "leader"]) {
    expect((await cp.kubectl(["create", "namespace", ns])).code).toBe(0);
    await apply(cp, service("checkout", ns));
  }
});

afterAll(async () => {
  await stack?.stop();
  await proxy?.close();
  await cp?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("faults injected by a proxy in front of the apiserver", () => {
  it("watch streams cut mid-flight and connections reset: converges with nothing stranded, stale or missing", async () => {
    const watcher = stack.startWatcher(["--identity", "watcher-a"]);
    await waitFor(
      "watcher-a to lead",
      async () => ((await leaseHolder()) === "watcher-a" ? true : undefined),
      30_000,
    );

    // Faults in the background while the load runs: every connection reset every
    // 700 ms, and for the first half each one cut after 32 KiB (lists and watch
    // streams broken in the middle of an answer). Bounded: 20 rounds.
    let stop = false;
    const cutter = proxy.resetAfterBytes(32 * 1024);
    const faults = (async () => {
      for (let round = 0; round < 20 && !stop; round++) {
        await sleep(700);
        proxy.resetAll();
        if (round === 10) cutter.stop();
      }
      cutter.stop();
    })();
    const resetsBefore = proxy.stats.resets;
    await createRoutes(cp, "cuts", "c", 300);
    await deleteRoutes(cp, "cuts", names("c", 0, 100));
    stop = true;
    await faults;
    const injected = proxy.stats.resets - resetsBefore;
    expect(injected).toBeGreaterThan(10);

    const outcome = await awaitConvergence(cp, stack, ["cuts"], [stack.serve.process, watcher]);
    console.log(
      summaryLine("watch-cuts", `${injected} connections reset (mid-stream and all at once)`, outcome),
    );
    expectClean(outcome);
    expect(outcome.routesChecked).toBe(200);
  });

  it("429s with Retry-After for 8 s: the operator waits them out and converges", async () => {
    const watcher = stack.watchers[0];
    if (!watcher) throw new Error("no watcher");
    const before = proxy.stats.tooManyRequests;
    let storm: Promise<void> | undefined;
    await createRoutes(cp, "storm", "s", 150, (created) => {
      if (created === 50) storm = proxy.tooManyRequests(8, 1);
    });
    await deleteRoutes(cp, "storm", names("s", 0, 50));
    await storm;
    const refused = proxy.stats.tooManyRequests - before;
    expect(refused).toBeGreaterThan(0);

    const outcome = await awaitConvergence(cp, stack, ["storm"], [stack.serve.process, watcher]);
    console.log(
      summaryLine("429-storm", `${refused} requests answered 429 (Retry-After 1) over 8 s`, outcome),
    );
    expectClean(outcome);
    expect(outcome.routesChecked).toBe(100);
  });

  it("the leader watcher killed in the middle of a burst: the standby takes over and converges", async () => {
    await waitFor("a leader", async () => ((await leaseHolder()) !== "" ? true : undefined), 30_000);
    const leaderName = await leaseHolder();
    const leader = stack.watchers.find((w) => w.name === "watch-0");
    expect(leaderName).toBe("watcher-a");
    const standby = stack.startWatcher(["--identity", "watcher-b"]);
    await sleep(1000);
    let takeover: Promise<number> | undefined;
    await createRoutes(cp, "leader", "l", 200, async (created) => {
      if (created !== 100) return;
      await leader?.kill();
      const killedAt = Date.now();
      takeover = waitFor(
        "watcher-b to lead",
        async () => ((await leaseHolder()) === "watcher-b" ? (Date.now() - killedAt) / 1000 : undefined),
        30_000,
        200,
      );
    });
    await deleteRoutes(cp, "leader", names("l", 0, 80));
    const tookOver = (await takeover) ?? NaN;
    // The lease is 6 s; a standby takes it once it has seen no renewal for that long.
    expect(tookOver).toBeLessThan(6 + 5);

    const outcome = await awaitConvergence(cp, stack, ["leader"], [stack.serve.process, standby]);
    console.log(
      summaryLine(
        "leader-killed",
        `leader watcher SIGKILLed after 100 of 200 creates, standby led ${tookOver.toFixed(1)} s later`,
        outcome,
      ),
    );
    expectClean(outcome);
    expect(outcome.routesChecked).toBe(120);
  });
});
