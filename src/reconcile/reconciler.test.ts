// The reconciler's decisions, against a fake KubeClient that answers as the
// apiserver does (409 on a stale resourceVersion, 422 on a failed JSON Patch
// test) and the real memory data plane. What it must never do is the point:
// write a status twice, drop a finalizer before the push, or throw on a
// conflict that the next reconcile settles.

import { describe, expect, it } from "vitest";
import { FINALIZER, type EdgeRouteV2 } from "../api/types.js";
import { MemoryDataPlane } from "../dataplane/memory.js";
import { silentLogger } from "../observability/logger.js";
import { apiError, FakeKube } from "../../test/fixtures/fake-kube.js";
import { kubeEventRecorder } from "./events.js";
import { SNAPSHOT_KEY } from "./protocol.js";
import { ApiserverView, type ClusterView } from "./cluster-view.js";
import { ReconcileAbortedError, Reconciler, type ReconcilerOptions } from "./reconciler.js";

const log = silentLogger();

function route(name: string, extra: Partial<EdgeRouteV2["metadata"]> = {}): EdgeRouteV2 {
  return {
    apiVersion: "net.10xdev.io/v2",
    kind: "EdgeRoute",
    metadata: {
      namespace: "shop",
      name,
      uid: `uid-${name}`,
      creationTimestamp: "2026-01-01T00:00:00Z",
      finalizers: [FINALIZER],
      ...extra,
    },
    spec: {
      hostnames: [`${name}.example.com`],
      rules: [
        {
          matches: [{ path: { type: "PathPrefix", value: "/" } }],
          backends: [{ name: "checkout", port: 80 }],
        },
      ],
    },
  };
}

const checkout = {
  metadata: { namespace: "shop", name: "checkout" },
  spec: { ports: [{ port: 80, targetPort: 8080 }] },
};

function setup(opts: ReconcilerOptions = {}): {
  kube: FakeKube;
  dataPlane: MemoryDataPlane;
  reconciler: Reconciler;
} {
  const kube = new FakeKube();
  kube.services.push(checkout);
  const dataPlane = new MemoryDataPlane();
  const reconciler = new Reconciler(kube, dataPlane, kubeEventRecorder(kube, log), log, opts);
  return { kube, dataPlane, reconciler };
}

const conditionsOf = (r: EdgeRouteV2 | undefined): string[] =>
  (r?.status?.conditions ?? []).map((c) => `${c.type}=${c.status}(${c.reason})`).sort();

describe("Reconciler, the snapshot key", () => {
  it("writes within its budget, hands the rest to the next call, and never writes a status twice", async () => {
    const { kube, dataPlane, reconciler } = setup({ writeConcurrency: 1, writeBudgetMs: 30 });
    for (let i = 0; i < 40; i++) kube.addRoute(route(`r${String(i).padStart(2, "0")}`));
    // Each status write takes a while, as it does against a busy apiserver.
    kube.latency = (call) => (call.method === "PATCH" && call.path.endsWith("/status") ? 5 : 0);
    const first = await reconciler.reconcile(SNAPSHOT_KEY);
    const writtenFirst = kube.count("PATCH", "/status");
    expect(writtenFirst).toBeGreaterThan(0);
    expect(writtenFirst).toBeLessThan(40);
    expect(first).toMatchObject({ result: "done", enqueue: [SNAPSHOT_KEY] });
    expect(first.did.join(" ")).toContain(`${40 - writtenFirst} route(s) left for the next call`);

    kube.latency = undefined;
    // The next call, with time to spare, writes exactly the ones left.
    const unhurried = new Reconciler(kube, dataPlane, kubeEventRecorder(kube, log), log, {
      writeBudgetMs: 60_000,
    });
    const second = await unhurried.reconcile(SNAPSHOT_KEY);
    expect(second.enqueue).toBeUndefined();
    expect(kube.count("PATCH", "/status")).toBe(40);
    for (const r of kube.routes.values())
      expect(conditionsOf(r)).toEqual(["Accepted=True(Valid)", "Programmed=True(Synced)"]);
    const third = await reconciler.reconcile(SNAPSHOT_KEY);
    expect(third.did).toEqual([expect.stringMatching(/unchanged; nothing to write$/)]);
    expect(kube.count("PATCH", "/status")).toBe(40);
  });

  it("takes a 409 on a status write as 'the route moved on': no throw, no event, one more call, and the next reconcile writes", async () => {
    for (const status of [409]) {
      const { kube, reconciler } = setup();
      kube.addRoute(route("r1"));
      kube.intercept = (call) =>
        call.method === "PATCH" && call.path.endsWith("/status")
          ? Promise.reject(apiError(status, "Conflict"))
          : undefined;
      const out = await reconciler.reconcile(SNAPSHOT_KEY);
      // The read may be a cache a moment behind the write it raced: once more, from a fresher read.
      expect(out).toMatchObject({ result: "done", enqueue: ["$snapshot"] });
      expect(out.did.join(" ")).toContain("(409)");
      expect(out.did.join(" ")).not.toContain("status written");
      expect(kube.events).toEqual([]);
      expect(conditionsOf(kube.route("shop/r1"))).toEqual([]);

      kube.intercept = undefined;
      expect((await reconciler.reconcile(SNAPSHOT_KEY)).did.join(" ")).toContain(
        "status written on 1 route(s)",
      );
      expect(conditionsOf(kube.route("shop/r1"))).toEqual([
        "Accepted=True(Valid)",
        "Programmed=True(Synced)",
      ]);
    }
  });

  it("fails the reconcile on any other apiserver error, so the watcher retries it", async () => {
    const { kube, reconciler } = setup();
    kube.addRoute(route("r1"));
    kube.intercept = (call) =>
      call.method === "PATCH" && call.path.endsWith("/status")
        ? Promise.reject(apiError(500, "InternalError"))
        : undefined;
    await expect(reconciler.reconcile(SNAPSHOT_KEY)).rejects.toMatchObject({ status: 500 });
  });

  it("releases a deleted route's finalizer only once a snapshot without it is pushed", async () => {
    const { kube, dataPlane, reconciler } = setup();
    kube.addRoute(route("keep"));
    kube.addRoute(route("gone"));
    await reconciler.reconcile(SNAPSHOT_KEY);
    expect(dataPlane.state().routes).toEqual(["shop/gone", "shop/keep"]);

    const gone = kube.route("shop/gone") as EdgeRouteV2;
    kube.routes.set("shop/gone", {
      ...gone,
      metadata: { ...gone.metadata, deletionTimestamp: new Date().toISOString() },
    });
    const out = await reconciler.reconcile(SNAPSHOT_KEY);
    expect(out.did).toContain("released the finalizer of 1 deleted route(s)");
    expect(dataPlane.state().routes).toEqual(["shop/keep"]);
    expect(kube.route("shop/gone")).toBeUndefined();
    // It stopped saying Programmed=True as the push began, then the release carried its
    // preconditions (the resourceVersion that status write made): never a blind replace.
    const marked = kube.calls.findIndex(
      (c) => c.method === "PATCH" && c.path.endsWith("/edgeroutes/gone/status"),
    );
    const released = kube.calls.findIndex((c) => c.method === "PATCH" && c.path.endsWith("/edgeroutes/gone"));
    expect(marked).toBeGreaterThanOrEqual(0);
    expect(marked).toBeLessThan(released);
    const release = kube.calls[released];
    expect(release?.body).toEqual(
      expect.arrayContaining([
        { op: "test", path: "/metadata/resourceVersion", value: expect.any(String) },
        { op: "test", path: "/metadata/finalizers/0", value: FINALIZER },
      ]),
    );
    expect(release?.body).not.toContainEqual({
      op: "test",
      path: "/metadata/resourceVersion",
      value: gone.metadata.resourceVersion,
    });
  });

  it("keeps the finalizer while pushes fail, and says DeprogramStuck with a Warning past the deprogram timeout", async () => {
    const { kube, dataPlane, reconciler } = setup({ deprogramTimeoutMs: 60_000 });
    kube.addRoute(route("keep"));
    kube.addRoute(route("recent", { deletionTimestamp: new Date(Date.now() - 1_000).toISOString() }));
    kube.addRoute(route("old", { deletionTimestamp: new Date(Date.now() - 120_000).toISOString() }));
    dataPlane.failNext(1_000);

    const out = await reconciler.reconcile(SNAPSHOT_KEY);
    expect(out.result).toBe("requeue");
    expect(out.did).toContain("1 deleted route(s) stuck waiting for the data plane");
    expect(kube.route("shop/recent")?.metadata.finalizers).toEqual([FINALIZER]);
    expect(kube.route("shop/old")?.metadata.finalizers).toEqual([FINALIZER]);
    expect(conditionsOf(kube.route("shop/old"))).toEqual(["Programmed=False(DeprogramStuck)"]);
    // Not stuck yet, and no longer said to be served: some client may already have dropped it.
    expect(conditionsOf(kube.route("shop/recent"))).toEqual(["Programmed=False(Pending)"]);
    expect(kube.events).toContainEqual(
      expect.objectContaining({ name: "old", type: "Warning", reason: "DeprogramStuck" }),
    );
    // Said once: the next failing reconcile writes nothing new for it.
    const writes = kube.count("PATCH", "/edgeroutes/old/status");
    const recentWrites = kube.count("PATCH", "/edgeroutes/recent/status");
    await reconciler.reconcile(SNAPSHOT_KEY);
    expect(kube.count("PATCH", "/edgeroutes/old/status")).toBe(writes);
    expect(kube.count("PATCH", "/edgeroutes/recent/status")).toBe(recentWrites);
  });

  it("a status the apiserver refuses (422) is a failure of the reconcile, not 'the route moved on'", async () => {
    const { kube, reconciler } = setup();
    kube.addRoute(route("r1"));
    kube.intercept = (call) =>
      call.method === "PATCH" && call.path.endsWith("/edgeroutes/r1/status")
        ? Promise.reject(apiError(422, "Invalid"))
        : undefined;
    await expect(reconciler.reconcile(SNAPSHOT_KEY)).rejects.toThrow();
    expect(kube.route("shop/r1")?.status).toBeUndefined();
  });

  it("takes a failed release precondition (422) as 'the route moved on', and releases at the next reconcile", async () => {
    const { kube, reconciler } = setup();
    kube.addRoute(route("gone", { deletionTimestamp: new Date().toISOString() }));
    kube.addRoute(route("keep"));
    let refused = false;
    kube.intercept = (call) => {
      if (refused || call.method !== "PATCH" || !call.path.endsWith("/edgeroutes/gone")) return undefined;
      refused = true;
      return Promise.reject(apiError(422, "Invalid"));
    };
    const out = await reconciler.reconcile(SNAPSHOT_KEY);
    expect(out.did.join(" ")).not.toContain("released");
    expect(kube.route("shop/gone")).toBeDefined();
    expect((await reconciler.reconcile(SNAPSHOT_KEY)).did).toContain(
      "released the finalizer of 1 deleted route(s)",
    );
    expect(kube.route("shop/gone")).toBeUndefined();
  });
});

describe("Reconciler, status writes during an admission burst", () => {
  it("writes what the pace allows, leaves the rest to the next call, and writes them once the pace lifts", async () => {
    let allowed = 3;
    const { kube, reconciler } = setup({ statusPace: { tryTake: () => allowed-- > 0 } });
    for (let i = 0; i < 10; i++) kube.addRoute(route(`r${i}`));
    const first = await reconciler.reconcile(SNAPSHOT_KEY);
    expect(kube.count("PATCH", "/status")).toBe(3);
    expect(first).toMatchObject({ result: "done", enqueue: [SNAPSHOT_KEY] });
    expect(first.did.join(" ")).toContain("7 route(s) left for the next call: admission is busy");
    allowed = Infinity;
    const second = await reconciler.reconcile(SNAPSHOT_KEY);
    expect(second.enqueue).toBeUndefined();
    expect(kube.count("PATCH", "/status")).toBe(10);
    for (const r of kube.routes.values())
      expect(conditionsOf(r)).toEqual(["Accepted=True(Valid)", "Programmed=True(Synced)"]);
  });
});

describe("Reconciler, a cache behind its own status writes", () => {
  /** A view that holds the routes as first read, as a watch-fed cache does until the write's event arrives. */
  function laggingView(kube: FakeKube) {
    const live = new ApiserverView(kube);
    let frozen: EdgeRouteV2[] | undefined;
    let lagging = true;
    const view: ClusterView = {
      snapshotInputs: async (signal) => {
        const inputs = await live.snapshotInputs(signal);
        if (!lagging) return inputs;
        frozen ??= inputs.routes.map((r) => structuredClone(r));
        return { ...inputs, routes: frozen };
      },
      route: async (ns, name, signal) =>
        lagging ? frozen?.find((r) => r.metadata.name === name) : live.route(ns, name, signal),
      service: (ns, name, signal) => live.service(ns, name, signal),
    };
    return { view, catchUp: () => (lagging = false) };
  }

  it("does not write a status again, nor meet a 409, while its cache has not seen the write", async () => {
    const kube = new FakeKube();
    kube.services.push(checkout);
    for (const n of ["r1", "r2", "r3"]) kube.addRoute(route(n));
    const { view, catchUp } = laggingView(kube);
    const reconciler = new Reconciler(kube, new MemoryDataPlane(), kubeEventRecorder(kube, log), log, {
      view,
    });
    expect((await reconciler.reconcile(SNAPSHOT_KEY)).did.join(" ")).toContain(
      "status written on 3 route(s)",
    );
    // The cache still holds the routes as they were before those writes.
    const again = await reconciler.reconcile(SNAPSHOT_KEY);
    expect(again.did).toEqual([expect.stringMatching(/unchanged; nothing to write$/)]);
    expect(again.enqueue).toBeUndefined();
    expect(kube.count("PATCH", "/status")).toBe(3);
    catchUp();
    expect((await reconciler.reconcile(SNAPSHOT_KEY)).did).toEqual([
      expect.stringMatching(/unchanged; nothing to write$/),
    ]);
    expect(kube.count("PATCH", "/status")).toBe(3);
  });

  it("reads a route changed by someone else since its write as the cache has it", async () => {
    const kube = new FakeKube();
    kube.services.push(checkout);
    kube.addRoute(route("r1"));
    const { view, catchUp } = laggingView(kube);
    const reconciler = new Reconciler(kube, new MemoryDataPlane(), kubeEventRecorder(kube, log), log, {
      view,
    });
    await reconciler.reconcile(SNAPSHOT_KEY);
    // Someone clears the status (a newer resourceVersion): the cache, once it
    // shows that, is what counts, and the status is written again.
    const current = kube.route("shop/r1") as EdgeRouteV2;
    kube.routes.set("shop/r1", {
      ...current,
      metadata: { ...current.metadata, resourceVersion: "9999" },
      status: {},
    });
    catchUp();
    expect((await reconciler.reconcile(SNAPSHOT_KEY)).did.join(" ")).toContain(
      "status written on 1 route(s)",
    );
    expect(conditionsOf(kube.route("shop/r1"))).toEqual(["Accepted=True(Valid)", "Programmed=True(Synced)"]);
  });
});

describe("Reconciler, a route key", () => {
  it("says ServiceNotFound at once and asks for nothing more: the watcher queued the snapshot key with it", async () => {
    const { kube, reconciler } = setup();
    kube.services.length = 0;
    kube.addRoute(route("r1"));
    const out = await reconciler.reconcile("shop/r1");
    expect(out).toEqual({
      result: "done",
      did: ["shop/r1: ServiceNotFound (status written)"],
    });
    expect(conditionsOf(kube.route("shop/r1"))).toEqual([
      "Accepted=False(ServiceNotFound)",
      "Programmed=False(Pending)",
    ]);
    expect(kube.events).toContainEqual(
      expect.objectContaining({ type: "Warning", reason: "ServiceNotFound" }),
    );
  });

  it("refuses a key that is neither namespace/name nor the snapshot key", async () => {
    const { reconciler } = setup();
    await expect(reconciler.reconcile("no-slash")).rejects.toThrow(
      /must be "namespace\/name" or "\$snapshot"/,
    );
  });
});

describe("Reconciler, a stale read and a failing data plane", () => {
  /** A hook that holds a reconcile between its reads and its push until released. */
  function hold() {
    let release!: () => void;
    let arrived!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const reached = new Promise<void>((r) => (arrived = r));
    const hook = (signal: AbortSignal | undefined): Promise<void> =>
      new Promise<void>((resolve, reject) => {
        arrived();
        void released.then(resolve);
        signal?.addEventListener("abort", () => reject(signal.reason), { once: true });
      });
    return { hook, reached, release };
  }

  const terminate = (kube: FakeKube, key: string): void => {
    const r = kube.route(key) as EdgeRouteV2;
    kube.addRoute({ ...r, metadata: { ...r.metadata, deletionTimestamp: new Date().toISOString() } });
  };

  it("a reconcile that read before the data plane's snapshot pushes nothing, writes nothing, and asks for one more call", async () => {
    const { kube, dataPlane, reconciler } = setup();
    kube.addRoute(route("keep"));
    kube.addRoute(route("x"));
    await reconciler.reconcile(SNAPSHOT_KEY);
    kube.addRoute(route("late"));
    const gate = hold();
    const stalled = new Reconciler(kube, dataPlane, kubeEventRecorder(kube, log), log, {
      beforePush: gate.hook,
    });
    const old = stalled.reconcile(SNAPSHOT_KEY);
    await gate.reached;
    terminate(kube, "shop/x");
    expect((await reconciler.reconcile(SNAPSHOT_KEY)).did).toContain(
      "released the finalizer of 1 deleted route(s)",
    );
    const callsBefore = kube.calls.length;
    gate.release();
    const out = await old;
    expect(out.result).toBe("done");
    expect(out.enqueue).toEqual([SNAPSHOT_KEY]);
    expect(out.did.join(" ")).toMatch(/not pushed: read at routes=\d+/);
    expect(dataPlane.state().routes).toEqual(["shop/keep", "shop/late"]);
    // Nothing but the data plane's own reads after waking: no status, no finalizer.
    expect(kube.calls.slice(callsBefore).filter((c) => c.method !== "GET")).toEqual([]);
  });

  it("fences before a release even when it has nothing to push", async () => {
    const { kube, dataPlane, reconciler } = setup();
    kube.addRoute(route("keep"));
    await reconciler.reconcile(SNAPSHOT_KEY);
    const heldBefore = dataPlane.state().readRevision;
    kube.addRoute(route("brief"));
    terminate(kube, "shop/brief");
    const out = await reconciler.reconcile(SNAPSHOT_KEY);
    expect(out.did).toContain("released the finalizer of 1 deleted route(s)");
    expect(out.did.join(" ")).not.toContain("pushed snapshot");
    expect(dataPlane.state().readRevision).not.toBe(heldBefore);
    // With nothing terminating, an unchanged state records nothing.
    kube.bump();
    const fenced = dataPlane.state().readRevision;
    await reconciler.reconcile(SNAPSHOT_KEY);
    expect(dataPlane.state().readRevision).toBe(fenced);
  });

  it("a failing data plane costs one status write per route, once, however its words change from push to push", async () => {
    const { kube, dataPlane, reconciler } = setup();
    for (let i = 0; i < 10; i++) kube.addRoute(route(`r${i}`));
    await reconciler.reconcile(SNAPSHOT_KEY);
    const synced = kube.count("PATCH", "/status");
    expect(synced).toBe(10);
    dataPlane.failNext(1_000);
    for (let i = 0; i < 6; i++) {
      // A new endpoint each time: a new snapshot, refused with a new detail.
      kube.endpointSlices.splice(0, kube.endpointSlices.length, {
        metadata: {
          namespace: "shop",
          name: "checkout-1",
          labels: { "kubernetes.io/service-name": "checkout" },
        },
        addressType: "IPv4",
        ports: [{ port: 8080 }],
        endpoints: [{ addresses: [`10.0.0.${i + 1}`], conditions: { ready: true } }],
      });
      kube.bump();
      const out = await reconciler.reconcile(SNAPSHOT_KEY);
      expect(out.result).toBe("requeue");
    }
    expect(dataPlane.state().failures).toBe(6);
    expect(kube.count("PATCH", "/status") - synced).toBe(10);
    expect(conditionsOf(kube.route("shop/r0"))).toEqual([
      "Accepted=True(Valid)",
      "Programmed=False(PushFailed)",
    ]);
  });

  it("stops when its caller goes away: no push, no write", async () => {
    const { kube, dataPlane } = setup();
    kube.addRoute(route("r1"));
    const gate = hold();
    const reconciler = new Reconciler(kube, dataPlane, kubeEventRecorder(kube, log), log, {
      beforePush: gate.hook,
    });
    const caller = new AbortController();
    const call = reconciler.reconcile(SNAPSHOT_KEY, caller.signal);
    await gate.reached;
    caller.abort();
    await expect(call).rejects.toBeInstanceOf(ReconcileAbortedError);
    expect(dataPlane.state().pushes).toBe(0);
    expect(kube.calls.filter((c) => c.method !== "GET")).toEqual([]);
  });
});
