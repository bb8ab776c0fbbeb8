// Stale reads (src/dataplane/read-revision.ts): a snapshot reconcile that read the routes before a delete,
// and stalled, must not push its old snapshot after a later reconcile pushed
// the snapshot without the route and released its finalizer. Two reconcilers
// (two replicas, or two overlapping calls in one) on a real apiserver, one
// held between its reads and its push while the other runs; for both sinks.
// And a /reconcile whose caller goes away stops before it pushes.

import https from "node:https";
import { silentLogger } from "../../src/observability/logger.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startControlPlane } from "../harness/control-plane.js";
import type { ControlPlane } from "../../tools/testenv/control-plane.js";
import { startOperatorStack, SYSTEM_NAMESPACE, type OperatorStack } from "../harness/operator-stack.js";
import { httpsJson } from "../../tools/testenv/https-json.js";
import { sleep, waitFor } from "../../tools/testenv/process.js";
import { apply, getRoute, service, v2Route } from "./routes.js";
import { configMapRoutes, readConfigMap } from "../harness/served-routes.js";
import type { DataPlane } from "../../src/dataplane/dataplane.js";
import { EnvoyConfigMapDataPlane } from "../../src/dataplane/envoy-configmap.js";
import { MemoryDataPlane } from "../../src/dataplane/memory.js";
import { kubeEventRecorder } from "../../src/reconcile/events.js";
import { Reconciler, ReconcileAbortedError, type ReconcileResult } from "../../src/reconcile/reconciler.js";
import { STALLING_SERVE, STALL_ENV } from "../harness/stalling-serve.js";
import type { KubeClient } from "../../src/kube/client.js";

const quiet = silentLogger();

/** A hook that holds a reconcile between its reads and its push until the test lets it go. */
function holdBeforePush() {
  let release!: () => void;
  let arrived!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const reached = new Promise<void>((r) => (arrived = r));
  const hook = async (signal: AbortSignal | undefined): Promise<void> => {
    arrived();
    await new Promise<void>((resolve, reject) => {
      void released.then(resolve);
      signal?.addEventListener("abort", () => reject(signal.reason), { once: true });
    });
  };
  return { hook, reached, release };
}

interface Case {
  readonly sink: "memory" | "envoy-configmap";
  /** One data plane per replica; the memory sink is one process's, so both share it. */
  planes(): [DataPlane, DataPlane];
  served(namespace: string): Promise<string[]>;
}

describe("a stalled snapshot reconcile never undoes a newer one", () => {
  let cp: ControlPlane;
  let stack: OperatorStack;
  let kube: KubeClient;

  beforeAll(async () => {
    cp = await startControlPlane();
    // The server answers admission and conversion; the reconciles under test run here.
    stack = await startOperatorStack(cp, {
      watcher: false,
      serveEnv: { [STALL_ENV]: "2000" },
      serveCli: STALLING_SERVE,
    });
    kube = cp.kube();
  });
  afterAll(async () => {
    await stack?.stop();
    await cp?.stop();
  });

  const memory = new MemoryDataPlane();
  const cases: Case[] = [
    {
      sink: "memory",
      planes: () => [memory, memory],
      served: async (ns) => memory.state().routes.filter((k) => k.startsWith(`${ns}/`)),
    },
    {
      sink: "envoy-configmap",
      planes: () => [
        new EnvoyConfigMapDataPlane(kube, { namespace: SYSTEM_NAMESPACE, name: "race-xds" }),
        new EnvoyConfigMapDataPlane(kube, { namespace: SYSTEM_NAMESPACE, name: "race-xds" }),
      ],
      served: async (ns) => {
        const cm = await readConfigMap(kube, SYSTEM_NAMESPACE, "race-xds");
        return configMapRoutes(cm).filter((k) => k.startsWith(`${ns}/`));
      },
    },
  ];

  for (const c of cases) {
    describe(`${c.sink} sink`, () => {
      const ns = `race-${c.sink}`;
      let stalled: Reconciler;
      let gate: ReturnType<typeof holdBeforePush>;
      let fresh: Reconciler;

      beforeAll(async () => {
        expect((await cp.kubectl(["create", "namespace", ns])).code).toBe(0);
        await apply(cp, service("checkout", ns));
        const [a, b] = c.planes();
        const events = kubeEventRecorder(kube, quiet);
        // The held one gets a new gate for each test.
        stalled = new Reconciler(kube, a, events, quiet, { beforePush: (s) => gate.hook(s) });
        fresh = new Reconciler(kube, b, events, quiet);
      });

      // Hosts of their own: the same name in the other sink's namespace would conflict.
      const route = (name: string) => v2Route(name, { namespace: ns, host: `${name}.${ns}.example.com` });

      const deleteAndWaitTerminating = async (name: string): Promise<void> => {
        const del = await cp.kubectl(["delete", "edgeroute", name, "-n", ns, "--wait=false"]);
        expect(del.code, del.stderr).toBe(0);
        await waitFor(`${ns}/${name} to be terminating`, async () =>
          (await getRoute(cp, name, ns))?.metadata.deletionTimestamp ? true : undefined,
        );
      };

      it("refuses the old snapshot when the newer one pushed without the route and released it", async () => {
        await apply(cp, route("keep-1"), route("x"));
        await fresh.reconcile("$snapshot");
        expect(await c.served(ns)).toEqual([`${ns}/keep-1`, `${ns}/x`]);

        // A reads keep-1, keep-2 and x (live), then stalls before its push.
        await apply(cp, route("keep-2"));
        gate = holdBeforePush();
        const old: Promise<ReconcileResult> = stalled.reconcile("$snapshot");
        await gate.reached;

        // Meanwhile x is deleted, and B pushes without it and lets it go.
        await deleteAndWaitTerminating("x");
        const newer = await fresh.reconcile("$snapshot");
        expect(newer.did.join("; ")).toMatch(/released the finalizer of 1 deleted route/);
        expect(await getRoute(cp, "x", ns)).toBeUndefined();
        expect(await c.served(ns)).toEqual([`${ns}/keep-1`, `${ns}/keep-2`]);

        // A wakes: its snapshot (with x) was read before B's, and must not land.
        gate.release();
        const late = await old;
        expect(late.did.join("; ")).toMatch(
          /not pushed: read at routes=\d+.*before the data plane's snapshot/,
        );
        expect(late.enqueue).toEqual(["$snapshot"]);
        expect(await c.served(ns)).toEqual([`${ns}/keep-1`, `${ns}/keep-2`]);
      });

      it("refuses it too when the newer one had nothing to push: the release fences the data plane", async () => {
        // The data plane holds keep-1 and keep-2. yy is created, A reads it live and stalls.
        await apply(cp, route("yy"));
        gate = holdBeforePush();
        const old = stalled.reconcile("$snapshot");
        await gate.reached;

        // yy is deleted before any push held it: B's snapshot is the one the
        // data plane already serves, so B pushes nothing, yet releases yy.
        await deleteAndWaitTerminating("yy");
        const newer = await fresh.reconcile("$snapshot");
        expect(newer.did.join("; ")).not.toMatch(/pushed snapshot/);
        expect(newer.did.join("; ")).toMatch(/released the finalizer of 1 deleted route/);
        expect(await getRoute(cp, "yy", ns)).toBeUndefined();

        gate.release();
        const late = await old;
        expect(late.did.join("; ")).toMatch(/not pushed/);
        expect(await c.served(ns)).toEqual([`${ns}/keep-1`, `${ns}/keep-2`]);
      });

      it("stops, pushing and writing nothing, when its caller goes away", async () => {
        await apply(cp, route("z"));
        const before = await getRoute(cp, "z", ns);
        gate = holdBeforePush();
        const caller = new AbortController();
        const call = stalled.reconcile("$snapshot", caller.signal);
        await gate.reached;
        caller.abort();
        await expect(call).rejects.toBeInstanceOf(ReconcileAbortedError);
        gate.release();
        expect(await c.served(ns)).not.toContain(`${ns}/z`);
        expect((await getRoute(cp, "z", ns))?.metadata.resourceVersion).toBe(
          before?.metadata.resourceVersion,
        );
        // The next call does the work.
        await fresh.reconcile("$snapshot");
        expect(await c.served(ns)).toContain(`${ns}/z`);
      });
    });
  }

  it("the server stops a /reconcile whose caller hung up, before it pushes", async () => {
    // The server stalls 2 s before each push (STALL_ENV); this caller gives up after 300 ms.
    expect((await cp.kubectl(["create", "namespace", "hang-up"])).code).toBe(0);
    await apply(
      cp,
      service("checkout", "hang-up"),
      v2Route("w", { namespace: "hang-up", host: "w.hang-up.example.com" }),
    );
    const before = await stack.dataPlane();
    // A second without webhook calls: the server's admission-burst window (1 s) is empty, so the
    // snapshot key is run, not turned away with 503 AdmissionBusy (reconcile-handler.ts).
    await sleep(1500);
    const hungUp = await new Promise<string>((resolve) => {
      const ac = new AbortController();
      setTimeout(() => ac.abort(), 300);
      httpsReconcile(stack, ac.signal).then(
        () => resolve("answered"),
        (e: Error) => resolve(e.name),
      );
    });
    expect(hungUp).toBe("AbortError");
    await sleep(2500);
    const after = await stack.dataPlane();
    expect(after.pushes).toBe(before.pushes);
    expect(after.routes).not.toContain("hang-up/w");
    const metrics = String((await httpsJson(`${stack.serve.url}/metrics`, stack.serve.caPem, "GET")).body);
    expect(metrics).toMatch(
      /edge_operator_reconcile_duration_seconds_count\{kind="snapshot",result="aborted"\} [1-9]/,
    );
    // A caller that waits gets the push.
    const waited = await stack.reconcile("$snapshot");
    expect(waited.status).toBe(200);
    expect((await stack.dataPlane()).routes).toContain("hang-up/w");
  });
});

/** POST /reconcile with a signal of our own (httpsJson has none). */
async function httpsReconcile(stack: OperatorStack, signal: AbortSignal): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      `${stack.serve.url}/reconcile`,
      {
        method: "POST",
        ca: stack.serve.caPem,
        signal,
        headers: { "content-type": "application/json", authorization: `Bearer ${stack.token}` },
      },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
      },
    );
    req.on("error", reject);
    req.end(JSON.stringify({ key: "$snapshot" }));
  });
}
