// Fault suite (BENCHMARKS.md, Fault suite; the stale read of snapshot-race.test.ts): two server replicas racing snapshot
// reconciles on one ConfigMap data plane. Replica A stalls between its reads
// and its push (a fault injected in the server); while it waits, a route is
// deleted and replica B pushes the snapshot without it and releases its
// finalizer. When A wakes, the newest read must win: the deleted route is
// never served again. Then both replicas are called at once, over and over,
// while routes come and go, and the data plane ends up with exactly the routes
// that exist.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify as toYaml } from "yaml";
import { startControlPlane } from "../harness/control-plane.js";
import type { ControlPlane } from "../../tools/testenv/control-plane.js";
import { reconcileCall } from "../harness/reconcile-call.js";
import { startOperatorStack, SYSTEM_NAMESPACE, type OperatorStack } from "../harness/operator-stack.js";
import { startServe, type ServeProcess } from "../../tools/testenv/operator.js";
import { waitFor } from "../../tools/testenv/process.js";
import { configMapRoutes, readConfigMap } from "../harness/served-routes.js";
import { compareServed, printFaultSummary } from "../harness/fault-summary.js";
import { endpointSlice, service, v2Route } from "./routes.js";
import type { EdgeRouteV2 } from "../../src/api/types.js";
import type { KubeClient } from "../../src/kube/client.js";
import { parseReadRevision, notOlder, type ReadRevision } from "../../src/dataplane/read-revision.js";
import { READ_REVISION_ANNOTATION } from "../../src/dataplane/envoy-configmap.js";
import { STALLING_SERVE, STALL_ENV, STALL_LINE } from "../harness/stalling-serve.js";

const NS = "race";
const CONFIGMAP = "edge-xds";
const DATA_PLANE = [
  "--dataplane",
  "envoy-configmap",
  "--dataplane-namespace",
  SYSTEM_NAMESPACE,
  "--dataplane-configmap",
  CONFIGMAP,
];

async function listRoutes(kube: KubeClient): Promise<EdgeRouteV2[]> {
  return (
    await kube.json<{ items: EdgeRouteV2[] }>("GET", `/apis/net.10xdev.io/v2/namespaces/${NS}/edgeroutes`)
  ).items;
}

describe("fault: two server replicas racing snapshot reconciles", () => {
  let cp: ControlPlane;
  let stack: OperatorStack;
  let kube: KubeClient;
  /** A: stalls 1.5 s between its reads and its push. */
  let slow: ServeProcess;
  /** B: no stall. */
  let fast: ServeProcess;

  beforeAll(async () => {
    cp = await startControlPlane();
    // No watcher: the test is the caller, as a watcher whose calls time out and are retried on another replica.
    stack = await startOperatorStack(cp, {
      watcher: false,
      serveArgs: DATA_PLANE,
      serveEnv: { [STALL_ENV]: "1500" },
      serveCli: STALLING_SERVE,
    });
    slow = stack.serve;
    fast = await startServe({ args: ["--kubeconfig", cp.kubeconfig, ...DATA_PLANE] });
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
    await fast?.stop();
    await stack?.stop();
    await cp?.stop();
  });

  const call = async (replica: ServeProcess): Promise<{ result: string; did: string[] }> => {
    const r = await reconcileCall(
      `${replica.url}/reconcile`,
      replica.caPem,
      { key: "$snapshot" },
      stack.token,
    );
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body as { result: string; did: string[] };
  };

  const apply = async (...objects: object[]): Promise<void> => {
    const r = await cp.kubectl(["apply", "-f", "-"], { input: objects.map((o) => toYaml(o)).join("---\n") });
    expect(r.code, r.stderr).toBe(0);
  };

  const served = async (): Promise<string[]> =>
    configMapRoutes(await readConfigMap(kube, SYSTEM_NAMESPACE, CONFIGMAP));
  const recorded = async (): Promise<ReadRevision | undefined> =>
    parseReadRevision(
      (await readConfigMap(kube, SYSTEM_NAMESPACE, CONFIGMAP))?.metadata?.annotations?.[
        READ_REVISION_ANNOTATION
      ],
    );

  it("the newest read wins: a stalled replica never brings back a route the other released", async () => {
    const started = Date.now();
    const rounds = 5;
    let staleServed = 0;
    let supersededAnswers = 0;
    const history: ReadRevision[] = [];
    const checked = new Set<string>();

    await apply(v2Route("base", { namespace: NS }));
    await call(fast);
    for (let i = 0; i < rounds; i++) {
      // x-i is live and keep-i is new when A reads; A then stalls.
      await apply(v2Route(`x-${i}`, { namespace: NS }), v2Route(`keep-${i}`, { namespace: NS }));
      checked.add(`x-${i}`).add(`keep-${i}`);
      const stallsBefore = slow.output().split(STALL_LINE).length;
      const stale = call(slow);
      await waitFor("replica A to stall before its push", async () =>
        slow.output().split(STALL_LINE).length > stallsBefore ? true : undefined,
      );
      // x-i goes; B pushes without it and lets it go.
      const del = await cp.kubectl(["delete", "edgeroute", `x-${i}`, "-n", NS, "--wait=false"]);
      expect(del.code, del.stderr).toBe(0);
      const b = await call(fast);
      expect(b.did.join("; ")).toMatch(/released the finalizer of 1 deleted route/);
      const gone = (await listRoutes(kube)).every((r) => r.metadata.name !== `x-${i}`);
      expect(gone).toBe(true);
      const afterB = await recorded();
      if (afterB) history.push(afterB);

      const a = await stale;
      if (a.did.some((d) => d.includes("not pushed"))) supersededAnswers++;
      const now = await served();
      if (now.includes(`${NS}/x-${i}`)) staleServed++;
      const afterA = await recorded();
      if (afterA) history.push(afterA);
    }

    // Then both replicas at once, over and over, while routes come and go: bounded rounds.
    for (let i = 0; i < 6; i++) {
      const adds = [v2Route(`churn-${i}`, { namespace: NS })];
      checked.add(`churn-${i}`);
      await apply(...adds);
      const calls = [call(slow), call(fast)];
      if (i > 0) {
        const del = await cp.kubectl(["delete", "edgeroute", `churn-${i - 1}`, "-n", NS, "--wait=false"]);
        expect(del.code, del.stderr).toBe(0);
      }
      calls.push(call(fast));
      await Promise.all(calls);
      const rev = await recorded();
      if (rev) history.push(rev);
    }
    // A last call settles whatever a superseded call handed on (it asks for one more).
    await call(fast);

    const routes = await listRoutes(kube);
    const live = routes.filter((r) => !r.metadata.deletionTimestamp).map((r) => `${NS}/${r.metadata.name}`);
    const { stale, missing } = compareServed(await served(), live);
    const stranded = routes.length - live.length;
    const crashed = [slow.process.child, fast.process.child].filter(
      (c) => c.exitCode !== null || c.signalCode !== null,
    ).length;
    printFaultSummary({
      fault: "two server replicas racing snapshot reconciles (one stalled before its push)",
      faultsInjected: rounds,
      routesChecked: checked.size + 1,
      strandedFinalizers: stranded,
      staleRoutesServed: staleServed + stale.length,
      missingRoutes: missing.length,
      crashedProcesses: crashed,
      seconds: (Date.now() - started) / 1000,
    });
    expect(staleServed).toBe(0);
    expect(supersededAnswers).toBe(rounds);
    expect({ stale, missing, stranded, crashed }).toEqual({
      stale: [],
      missing: [],
      stranded: 0,
      crashed: 0,
    });
    // What the data plane records as read only ever moves forward.
    for (let i = 1; i < history.length; i++)
      expect(notOlder(history[i] as ReadRevision, history[i - 1] as ReadRevision), `step ${i}`).toBe(true);
  });
});
