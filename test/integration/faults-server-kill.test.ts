// Fault suite (BENCHMARKS.md, Fault suite): the server SIGKILLed in the middle of a snapshot
// reconcile that has terminating routes, three times, at three points: while
// it reads, while it waits between its reads and its push (a stall injected in
// the server), and just after its push, before or while it releases
// finalizers. After each kill the server comes back on the same port, and
// after the last everything converges: no finalizer stranded, no route served
// that no longer exists, none missing, no process crashed that was not killed.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify as toYaml } from "yaml";
import { startControlPlane } from "../harness/control-plane.js";
import type { ControlPlane } from "../../tools/testenv/control-plane.js";
import { startOperatorStack, SYSTEM_NAMESPACE, type OperatorStack } from "../harness/operator-stack.js";
import { startServe, type ServeProcess } from "../../tools/testenv/operator.js";
import { sleep, waitFor } from "../../tools/testenv/process.js";
import { configMapRoutes, readConfigMap } from "../harness/served-routes.js";
import { compareServed, printFaultSummary } from "../harness/fault-summary.js";
import { endpointSlice, service, v2Route } from "./routes.js";
import type { EdgeRouteV2 } from "../../src/api/types.js";
import { FINALIZER } from "../../src/api/types.js";
import type { KubeClient } from "../../src/kube/client.js";
import { STALLING_SERVE, STALL_ENV, STALL_LINE } from "../harness/stalling-serve.js";

const NS = "faults";
const CONFIGMAP = "edge-xds";
const STALL_MS = "1500";
const DATA_PLANE = [
  "--dataplane",
  "envoy-configmap",
  "--dataplane-namespace",
  SYSTEM_NAMESPACE,
  "--dataplane-configmap",
  CONFIGMAP,
];

async function listRoutes(kube: KubeClient): Promise<EdgeRouteV2[]> {
  const list = await kube.json<{ items: EdgeRouteV2[] }>(
    "GET",
    `/apis/net.10xdev.io/v2/namespaces/${NS}/edgeroutes`,
  );
  return list.items;
}

function manifests(names: readonly string[]): string {
  return names.map((n) => toYaml(v2Route(n, { namespace: NS, path: `/${n}` }))).join("---\n");
}

function stalls(serve: ServeProcess): number {
  return serve.output().split(STALL_LINE).length - 1;
}

describe("fault: the server killed in the middle of a snapshot reconcile with terminating routes", () => {
  let cp: ControlPlane;
  let stack: OperatorStack;
  let kube: KubeClient;
  let serve: ServeProcess;
  const restarted: ServeProcess[] = [];

  beforeAll(async () => {
    cp = await startControlPlane();
    stack = await startOperatorStack(cp, {
      serveArgs: DATA_PLANE,
      serveEnv: { [STALL_ENV]: STALL_MS },
      serveCli: STALLING_SERVE,
      watchArgs: ["--no-leader-elect"],
    });
    serve = stack.serve;
    kube = cp.kube();
    expect((await cp.kubectl(["create", "namespace", NS])).code).toBe(0);
    const base = await cp.kubectl(["apply", "-f", "-"], {
      input: [service("checkout", NS), endpointSlice("checkout", ["10.0.0.1"], NS)]
        .map((o) => toYaml(o))
        .join("---\n"),
    });
    expect(base.code, base.stderr).toBe(0);
  });
  afterAll(async () => {
    for (const s of restarted) await s.stop();
    await stack?.stop();
    await cp?.stop();
  });

  async function restartServe(): Promise<void> {
    serve = await startServe({
      port: stack.serve.port,
      tls: { caPem: stack.serve.caPem, certFile: stack.serve.certFile, keyFile: stack.serve.keyFile },
      args: ["--kubeconfig", cp.kubeconfig, ...DATA_PLANE],
      env: { [STALL_ENV]: STALL_MS },
      cli: STALLING_SERVE,
    });
    restarted.push(serve);
  }

  async function terminatingCount(): Promise<number> {
    return (await listRoutes(kube)).filter(
      (r) => r.metadata.deletionTimestamp && r.metadata.finalizers?.includes(FINALIZER),
    ).length;
  }

  it("converges after three kills: nothing stranded, nothing stale, nothing missing", async () => {
    const started = Date.now();
    const N = 150;
    let next = 0;
    const names = (n: number): string[] => Array.from({ length: n }, () => `r${next++}`);
    const created = await cp.kubectl(["apply", "-f", "-"], { input: manifests(names(N)) });
    expect(created.code, created.stderr).toBe(0);
    await waitFor(
      `${N} routes served`,
      async () =>
        configMapRoutes(await readConfigMap(kube, SYSTEM_NAMESPACE, CONFIGMAP)).length === N
          ? true
          : undefined,
      120_000,
      500,
    );

    const kills: { point: string; terminating: number }[] = [];
    let deleted = 0;
    for (const point of ["reading", "stalled before its push", "just after its push"] as const) {
      const live = (await listRoutes(kube)).filter((r) => !r.metadata.deletionTimestamp);
      const batch = live.slice(0, 30).map((r) => r.metadata.name ?? "");
      const versionBefore = (await readConfigMap(kube, SYSTEM_NAMESPACE, CONFIGMAP))?.metadata?.annotations;
      const stallsBefore = stalls(serve);
      // Some routes go, some come: the snapshot after them differs both ways.
      const del = await cp.kubectl(["delete", "edgeroutes", "-n", NS, "--wait=false", ...batch]);
      expect(del.code, del.stderr).toBe(0);
      deleted += batch.length;
      const add = await cp.kubectl(["apply", "-f", "-"], { input: manifests(names(10)) });
      expect(add.code, add.stderr).toBe(0);

      if (point === "stalled before its push") {
        await waitFor("a snapshot reconcile to stall before its push", async () =>
          stalls(serve) > stallsBefore ? true : undefined,
        );
        await sleep(200);
      } else if (point === "just after its push") {
        const was = JSON.stringify(versionBefore);
        await waitFor(
          "the data plane to take a new snapshot",
          async () => {
            const cm = await readConfigMap(kube, SYSTEM_NAMESPACE, CONFIGMAP);
            return JSON.stringify(cm?.metadata?.annotations) !== was ? true : undefined;
          },
          30_000,
          10,
        );
      }
      const terminating = await terminatingCount();
      await serve.process.kill();
      kills.push({ point, terminating });
      await sleep(500);
      await restartServe();
    }
    // Each kill found routes held by their finalizer: it was in the middle of deprogramming them.
    expect(kills.filter((k) => k.terminating > 0).map((k) => k.point)).toEqual(kills.map((k) => k.point));

    let last = { stale: [] as string[], missing: [] as string[], stranded: 0 };
    await waitFor(
      "everything to converge",
      async () => {
        const routes = await listRoutes(kube);
        const live = routes
          .filter((r) => !r.metadata.deletionTimestamp)
          .map((r) => `${NS}/${r.metadata.name}`);
        const stranded = routes.length - live.length;
        const served = configMapRoutes(await readConfigMap(kube, SYSTEM_NAMESPACE, CONFIGMAP));
        last = { ...compareServed(served, live), stranded };
        return stranded === 0 && last.stale.length === 0 && last.missing.length === 0 ? true : undefined;
      },
      180_000,
      500,
    ).catch((e: Error) => {
      throw new Error(`${e.message}: ${JSON.stringify(last)}; kills ${JSON.stringify(kills)}`);
    });

    const routes = await listRoutes(kube);
    const crashed = [...stack.watchers.map((w) => w.child), serve.process.child].filter(
      (c) => c.exitCode !== null || c.signalCode !== null,
    ).length;
    printFaultSummary({
      fault: "server SIGKILL mid-snapshot with terminating routes",
      faultsInjected: kills.length,
      // Every route ever made: the deleted ones checked gone, the others checked served.
      routesChecked: next,
      strandedFinalizers: last.stranded,
      staleRoutesServed: last.stale.length,
      missingRoutes: last.missing.length,
      crashedProcesses: crashed,
      seconds: (Date.now() - started) / 1000,
    });
    expect(routes.length).toBe(next - deleted);
    expect(crashed).toBe(0);
  });
});
