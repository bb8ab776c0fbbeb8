// The server's watch-fed cache against the real apiserver: it holds what the
// apiserver holds (routes read as v2, every Service's ready endpoints), drops
// what is deleted, says how far it has read, and /reconcile answers only from
// a cache that has seen what the caller saw (`seen`), else 503 + Retry-After.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { V1Service } from "@kubernetes/client-node";
import type { EdgeRouteV2 } from "../../src/api/types.js";
import type { KubeClient } from "../../src/kube/client.js";
import { MemoryDataPlane } from "../../src/dataplane/memory.js";
import { silentLogger } from "../../src/observability/logger.js";
import { ClusterCache } from "../../src/reconcile/cluster-cache.js";
import { kubeEventRecorder } from "../../src/reconcile/events.js";
import { Reconciler } from "../../src/reconcile/reconciler.js";
import { reconcileHandler } from "../../src/server/reconcile-handler.js";
import type { CallerAuth } from "../../src/server/caller-auth.js";
import { startControlPlane } from "../harness/control-plane.js";
import type { ControlPlane } from "../../tools/testenv/control-plane.js";
import { startOperatorStack, type OperatorStack } from "../harness/operator-stack.js";
import { waitFor } from "../../tools/testenv/process.js";
import { apply, endpointSlice, getRoute, service, v2Route } from "./routes.js";

const log = silentLogger();
const NS = "cache";

let cp: ControlPlane;
let stack: OperatorStack;
let kube: KubeClient;

beforeAll(async () => {
  cp = await startControlPlane();
  // The CRD, its conversion and admission; no watcher: the reconciles under test run here.
  stack = await startOperatorStack(cp, { watcher: false });
  kube = cp.kube();
  expect((await cp.kubectl(["create", "namespace", NS])).code).toBe(0);
});

afterAll(async () => {
  await stack?.stop();
  await cp?.stop();
});

/** A KubeClient whose watches of `path` wait until released: a cache that lags, on purpose. */
function heldWatches(real: KubeClient, path: string): { client: KubeClient; release(): void } {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  return {
    client: {
      json: (method, p, opts) => real.json(method, p, opts),
      stream: async (p, opts) => {
        if (p === path) await gate;
        return real.stream(p, opts);
      },
    },
    release,
  };
}

async function serviceRv(name: string): Promise<string> {
  const svc = await kube.json<V1Service>("GET", `/api/v1/namespaces/${NS}/services/${name}`);
  return svc.metadata?.resourceVersion ?? "";
}

describe("ClusterCache", () => {
  it("holds the routes (as v2), Services and ready endpoints the apiserver holds, and lets deleted ones go", async () => {
    const stop = new AbortController();
    const state = new ClusterCache({ client: kube, log });
    state.start(stop.signal);
    try {
      await apply(
        cp,
        service("shop", NS),
        endpointSlice("shop", ["10.0.0.2", "10.0.0.1"], NS),
        v2Route("one", { namespace: NS, service: "shop" }),
      );
      const applied = await getRoute(cp, "one", NS);
      expect(await state.waitFor({ routes: applied?.metadata.resourceVersion }, 10_000)).toBe(true);
      expect(state.synced()).toBe(true);
      const cached = state.route(NS, "one");
      expect(cached?.apiVersion).toBe("net.10xdev.io/v2");
      expect(cached?.spec).toEqual(applied?.spec);
      expect(cached?.metadata.resourceVersion).toBe(applied?.metadata.resourceVersion);
      // Slim: what kubectl apply adds for itself is not held.
      expect(
        cached?.metadata.annotations?.["kubectl.kubernetes.io/last-applied-configuration"],
      ).toBeUndefined();
      expect(JSON.stringify(cached)).not.toContain("managedFields");

      await waitFor("the endpoints in the cache", async () => state.endpoints().get(`${NS}/shop`)?.ports[0]);
      expect(state.endpoints().get(`${NS}/shop`)).toEqual({
        ports: [
          {
            port: 8080,
            addresses: [
              { ip: "10.0.0.1", port: 8080 },
              { ip: "10.0.0.2", port: 8080 },
            ],
          },
        ],
      });
      expect(state.service(NS, "shop")?.spec?.ports?.[0]?.port).toBe(8080);

      // A routes() array taken before a change stays as it was.
      const before = state.routes();
      expect((await cp.kubectl(["delete", "endpointslice", "shop-1", "-n", NS])).code).toBe(0);
      expect((await cp.kubectl(["delete", "edgeroute", "one", "-n", NS, "--wait=false"])).code).toBe(0);
      await waitFor("the deleted route to go from the cache", async () =>
        state.route(NS, "one")?.metadata.deletionTimestamp || !state.route(NS, "one") ? true : undefined,
      );
      await waitFor("the deleted slice's addresses to go", async () =>
        state.endpoints().get(`${NS}/shop`)?.ports[0]?.addresses.length === 0 ? true : undefined,
      );
      expect(before.some((r) => r.metadata.name === "one" && !r.metadata.deletionTimestamp)).toBe(true);
      const rev = state.revision();
      expect(rev?.routes).toMatch(/^[1-9][0-9]*$/);
    } finally {
      stop.abort();
    }
  });

  it("inputs() moves with what a build reads, and not with a status write or a terminating route's finalizer and object going", async () => {
    const stop = new AbortController();
    const cache = new ClusterCache({ client: kube, log });
    cache.start(stop.signal);
    const kubectl = async (...args: string[]) => {
      const r = await cp.kubectl(args);
      expect(r.code, r.stderr).toBe(0);
    };
    const seen = async (what: string, ok: () => boolean | undefined) =>
      waitFor(what, async () => (ok() ? true : undefined));
    try {
      await apply(cp, v2Route("stamp", { namespace: NS, service: "shop" }));
      await seen("the route in the cache", () => cache.route(NS, "stamp") !== undefined);
      expect(cache.route(NS, "stamp")?.metadata.finalizers).toContain("net.10xdev.io/deprogram");
      const live = cache.inputs();

      // A status write (what the reconcile writes) changes no build input.
      const condition = {
        type: "Accepted",
        status: "True",
        reason: "Valid",
        message: "test",
        lastTransitionTime: "2026-12-02T00:00:00Z",
        observedGeneration: 1,
      };
      await kubectl(
        "patch",
        "edgeroutes.v2.net.10xdev.io",
        "stamp",
        "-n",
        NS,
        "--subresource=status",
        "--type=merge",
        "-p",
        JSON.stringify({ status: { conditions: [condition] } }),
      );
      await seen("the status in the cache", () => cache.route(NS, "stamp")?.status?.conditions?.length === 1);
      expect(cache.inputs()).toBe(live);

      // A spec change does.
      await apply(cp, v2Route("stamp", { namespace: NS, service: "shop", path: "/moved" }));
      await seen(
        "the new spec in the cache",
        () => cache.route(NS, "stamp")?.spec.rules[0]?.matches?.[0]?.path?.value === "/moved",
      );
      expect(cache.inputs()).toBeGreaterThan(live);

      // The deletion does (the route leaves every build); its finalizer and object going do not.
      await kubectl("delete", "edgeroutes.v2.net.10xdev.io", "stamp", "-n", NS, "--wait=false");
      await seen(
        "the deletion in the cache",
        () => cache.route(NS, "stamp")?.metadata.deletionTimestamp !== undefined,
      );
      const terminating = cache.inputs();
      await kubectl(
        "patch",
        "edgeroutes.v2.net.10xdev.io",
        "stamp",
        "-n",
        NS,
        "--type=json",
        "-p",
        JSON.stringify([{ op: "remove", path: "/metadata/finalizers" }]),
      );
      await seen("the route gone from the cache", () => cache.route(NS, "stamp") === undefined);
      expect(cache.inputs()).toBe(terminating);
    } finally {
      stop.abort();
    }
  });

  it("waitFor is false past its bound for what it has not seen, true once it has; onChange fires on the change", async () => {
    const held = heldWatches(kube, "/api/v1/services");
    const stop = new AbortController();
    const state = new ClusterCache({ client: held.client, log });
    let changes = 0;
    state.onChange(() => changes++);
    state.start(stop.signal);
    try {
      await state.waitForSync();
      await apply(cp, service("late", NS));
      const rv = await serviceRv("late");
      const started = Date.now();
      expect(await state.waitFor({ services: rv }, 300)).toBe(false);
      expect(Date.now() - started).toBeGreaterThanOrEqual(290);
      expect(state.service(NS, "late")).toBeUndefined();

      const caughtUp = state.waitFor({ services: rv }, 10_000);
      const changesBefore = changes;
      held.release();
      expect(await caughtUp).toBe(true);
      // Reached means held: the object is there when waitFor says so.
      expect(state.service(NS, "late")).toBeDefined();
      await new Promise((r) => setImmediate(r));
      expect(changes).toBeGreaterThan(changesBefore);
    } finally {
      stop.abort();
    }
  });
});

describe("/reconcile with `seen`", () => {
  const allow: CallerAuth = { check: () => Promise.resolve({ ok: true, user: "test" }) };

  it("answers 503 + Retry-After while its cache is behind what the caller saw, and reconciles once it caught up", async () => {
    await apply(cp, service("backend", NS));
    const held = heldWatches(kube, "/apis/net.10xdev.io/v2/edgeroutes");
    const stop = new AbortController();
    const state = new ClusterCache({ client: held.client, log });
    state.start(stop.signal);
    const memory = new MemoryDataPlane();
    const reconciler = new Reconciler(kube, memory, kubeEventRecorder(kube, log), log, {
      view: state.view(),
    });
    const handler = reconcileHandler(reconciler, allow, {
      waitFor: state.waitFor.bind(state),
      seen: () => state.seen(),
      boundMs: 500,
    });
    const call = (body: unknown) => Promise.resolve(handler.handle(body, { headers: {}, log }));
    try {
      await state.waitForSync();
      // Made after the cache listed, while its route watch is held: the cache cannot know it.
      await apply(cp, v2Route("fresh", { namespace: NS, service: "backend" }));
      const rv = (await getRoute(cp, "fresh", NS))?.metadata.resourceVersion ?? "";

      const behind = await call({ key: `${NS}/fresh`, seen: { routes: rv } });
      expect(behind.status).toBe(503);
      expect(behind.headers?.["retry-after"]).toBe("1");
      expect(JSON.stringify(behind.body)).toContain("CacheBehind");

      // Without `seen` (an older watcher, curl) it answers from what it has.
      const blind = await call({ key: `${NS}/fresh` });
      expect(blind.status).toBe(200);
      expect(JSON.stringify(blind.body)).toContain(`${NS}/fresh: gone`);

      held.release();
      const caughtUp = await call({ key: "$snapshot", seen: { routes: rv } });
      expect(caughtUp.status).toBe(200);
      expect(memory.state().routes).toContain(`${NS}/fresh`);
      const route = await waitFor("the status written from the cache", async () => {
        const r: EdgeRouteV2 | undefined = await getRoute(cp, "fresh", NS);
        return r?.status?.conditions?.length ? r : undefined;
      });
      expect(route.status?.conditions?.map((c) => `${c.type}=${c.status}`).sort()).toEqual([
        "Accepted=True",
        "Programmed=True",
      ]);

      const bad = await call({ key: "$snapshot", seen: { pods: "1" } });
      expect(bad.status).toBe(400);
      expect(JSON.stringify(bad.body)).toContain("seen.pods: unknown");
    } finally {
      stop.abort();
    }
  });
});
