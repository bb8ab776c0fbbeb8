// The reconciler on the xds sink, against the fake KubeClient and a real ADS
// server with a hand-driven client: what `Programmed` says with no client,
// with a client that refuses the version, and with one that takes it; when a
// deleted route's finalizer goes; and that a retry rewrites no status.

import { afterEach, describe, expect, it } from "vitest";
import { FINALIZER, type EdgeRouteV2 } from "../api/types.js";
import { TYPE_URL } from "../envoy/envoy-resources.js";
import { decodeResource } from "../dataplane/xds/proto-codec.js";
import { XdsDataPlane } from "../dataplane/xds/xds-dataplane.js";
import { silentLogger } from "../observability/logger.js";
import { FakeKube } from "../../test/fixtures/fake-kube.js";
import { adsClient, sotwStream } from "../../test/xds/raw-ads-client.js";
import { kubeEventRecorder } from "./events.js";
import { SNAPSHOT_KEY } from "./protocol.js";
import { Reconciler } from "./reconciler.js";
import { SnapshotPipeline } from "./snapshot-pipeline.js";

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

const conditionsOf = (r: EdgeRouteV2 | undefined): string[] =>
  (r?.status?.conditions ?? []).map((c) => `${c.type}=${c.status}(${c.reason})`).sort();

const stops: (() => void)[] = [];
afterEach(() => {
  for (const s of stops.splice(0)) s();
});

async function setup(
  opts: { clientWaitRequeueMs?: number; deprogramTimeoutMs?: number; ackTimeoutMs?: number } = {},
) {
  const kube = new FakeKube();
  kube.services.push({ metadata: { namespace: "shop", name: "checkout" }, spec: { ports: [{ port: 80 }] } });
  const plane = new XdsDataPlane({ ackTimeoutMs: opts.ackTimeoutMs ?? 2_000 });
  const port = await plane.listen("127.0.0.1", 0);
  stops.push(() => plane.stop());
  const reconciler = new Reconciler(kube, plane, kubeEventRecorder(kube, log), log, {
    snapshots: new SnapshotPipeline({ snapshot: { configSource: { kind: "ads" } } }),
    clientWaitRequeueMs: opts.clientWaitRequeueMs ?? 1_234,
    ...(opts.deprogramTimeoutMs !== undefined ? { deprogramTimeoutMs: opts.deprogramTimeoutMs } : {}),
  });
  return { kube, plane, port, reconciler };
}

/** Gives the stored route a deletionTimestamp of now, as a delete does to a route with a finalizer; answers now. */
function markDeleted(kube: FakeKube, key: string): number {
  const stored = kube.route(key) as EdgeRouteV2;
  const now = Date.now();
  kube.routes.set(key, {
    ...stored,
    metadata: { ...stored.metadata, deletionTimestamp: new Date(now).toISOString() },
  });
  return now;
}

/**
 * An Envoy-like client that subscribes to everything and ACKs, or NACKs every
 * cluster update with `refuse`; once connected. While `answering.on` is false
 * it answers nothing, as a client whose link is cut.
 */
async function envoyLike(
  plane: XdsDataPlane,
  port: number,
  refuse?: string,
  answering: { on: boolean } = { on: true },
): Promise<void> {
  const client = adsClient(port);
  const s = sotwStream(client);
  stops.push(() => {
    s.end();
    client.close();
  });
  let clusters: string[] = [];
  s.send({ node: { id: "envoy-test" }, type_url: TYPE_URL.cluster });
  s.send({ type_url: TYPE_URL.listener });
  s.send({ type_url: TYPE_URL.routeConfiguration, resource_names: ["edge"] });
  void (async () => {
    for (let i = 0; i < 100; i++) {
      const r = await s.next(10_000).catch(() => undefined);
      if (r === undefined) return;
      if (!answering.on) continue;
      const m = r.message;
      if (m.type_url === TYPE_URL.cluster) {
        clusters = m.resources.map((x) => decodeResource(x).name as string);
        if (refuse !== undefined) {
          s.send({
            type_url: m.type_url,
            response_nonce: m.nonce,
            error_detail: { code: 3, message: refuse },
          });
          continue;
        }
        s.send({ type_url: m.type_url, response_nonce: m.nonce });
        s.send({ type_url: TYPE_URL.clusterLoadAssignment, resource_names: clusters });
        continue;
      }
      const names =
        m.type_url === TYPE_URL.routeConfiguration
          ? ["edge"]
          : m.type_url === TYPE_URL.clusterLoadAssignment
            ? clusters
            : [];
      s.send({ type_url: m.type_url, response_nonce: m.nonce, resource_names: names });
    }
  })();
  // Until it asked for its routes: before that it holds none, and counts for none.
  const asked = () => plane.clients().some((c) => c.types[TYPE_URL.routeConfiguration] !== undefined);
  for (let i = 0; i < 100 && !asked(); i++) await new Promise((r) => setTimeout(r, 20));
}

describe("Reconciler on the xds sink", () => {
  it("no client: Programmed=False/NoDataPlane, looked at again soon, a deleted route let go, and a retry writes nothing", async () => {
    const { kube, reconciler } = await setup();
    kube.addRoute(route("live"));
    kube.addRoute(route("gone", { deletionTimestamp: new Date().toISOString() }));
    const out = await reconciler.reconcile(SNAPSHOT_KEY);
    expect(out).toMatchObject({ result: "requeue", requeueAfterMs: 1_234 });
    expect(conditionsOf(kube.route("shop/live"))).toEqual([
      "Accepted=True(Valid)",
      "Programmed=False(NoDataPlane)",
    ]);
    expect(kube.route("shop/gone")).toBeUndefined();
    const writes = kube.count("PATCH", "/edgeroutes/live/status");
    await reconciler.reconcile(SNAPSHOT_KEY);
    expect(kube.count("PATCH", "/edgeroutes/live/status")).toBe(writes);
  });

  it("a client that refuses it: Programmed=False/Rejected with its words, the finalizer kept, a retry writes nothing", async () => {
    const { kube, plane, port, reconciler } = await setup();
    kube.addRoute(route("live"));
    kube.addRoute(route("gone", { deletionTimestamp: new Date().toISOString() }));
    await envoyLike(plane, port, "unsupported lb_policy: MAGLEV");
    let out = await reconciler.reconcile(SNAPSHOT_KEY);
    for (let i = 0; i < 20 && !out.did.some((d) => d.includes("rejected")); i++)
      out = await reconciler.reconcile(SNAPSHOT_KEY);
    expect(out.result).toBe("requeue");
    const live = kube.route("shop/live");
    expect(conditionsOf(live)).toEqual(["Accepted=True(Valid)", "Programmed=False(Rejected)"]);
    expect(live?.status?.conditions?.find((c) => c.type === "Programmed")?.message).toBe(
      "xDS client envoy-test rejected it: unsupported lb_policy: MAGLEV",
    );
    expect(kube.route("shop/gone")?.metadata.finalizers).toEqual([FINALIZER]);
    const writes = kube.count("PATCH", "/edgeroutes/live/status");
    await reconciler.reconcile(SNAPSHOT_KEY);
    expect(kube.count("PATCH", "/edgeroutes/live/status")).toBe(writes);
  });

  it("a client that takes it: Programmed=True/Synced, and a deleted route goes once it took a version without it", async () => {
    const { kube, plane, port, reconciler } = await setup();
    kube.addRoute(route("live"));
    await envoyLike(plane, port);
    let out = await reconciler.reconcile(SNAPSHOT_KEY);
    for (let i = 0; i < 20 && out.result !== "done"; i++) out = await reconciler.reconcile(SNAPSHOT_KEY);
    expect(conditionsOf(kube.route("shop/live"))).toEqual([
      "Accepted=True(Valid)",
      "Programmed=True(Synced)",
    ]);
    const live = kube.route("shop/live") as EdgeRouteV2;
    kube.routes.set("shop/live", {
      ...live,
      metadata: { ...live.metadata, deletionTimestamp: new Date().toISOString() },
    });
    out = await reconciler.reconcile(SNAPSHOT_KEY);
    expect(out.did).toContain("released the finalizer of 1 deleted route(s)");
    expect(kube.route("shop/live")).toBeUndefined();
  });

  it("a deleted route a silent client holds says DeprogramStuck when its timeout ends, not a client-wait period late", async () => {
    const { kube, plane, port, reconciler } = await setup({
      clientWaitRequeueMs: 60_000,
      deprogramTimeoutMs: 3_000,
    });
    kube.addRoute(route("live"));
    const answering = { on: true };
    await envoyLike(plane, port, undefined, answering);
    let out = await reconciler.reconcile(SNAPSHOT_KEY);
    for (let i = 0; i < 20 && out.result !== "done"; i++) out = await reconciler.reconcile(SNAPSHOT_KEY);
    expect(conditionsOf(kube.route("shop/live"))).toContain("Programmed=True(Synced)");
    // The link is cut: the client keeps the route and answers nothing.
    answering.on = false;
    const deleted = markDeleted(kube, "shop/live");
    out = await reconciler.reconcile(SNAPSHOT_KEY);
    expect(out.result).toBe("requeue");
    expect(kube.route("shop/live")?.metadata.finalizers).toEqual([FINALIZER]);
    // Looked at again just past the timeout, not in a minute.
    const after = out.requeueAfterMs ?? Infinity;
    expect(Date.now() + after - deleted).toBeGreaterThan(3_000);
    expect(Date.now() + after - deleted).toBeLessThan(3_000 + 500);
    await new Promise((r) => setTimeout(r, after));
    await reconciler.reconcile(SNAPSHOT_KEY);
    expect(conditionsOf(kube.route("shop/live"))).toContain("Programmed=False(DeprogramStuck)");
    // Said then, not after one more ACK timeout (2 s) spent waiting on the silent client.
    expect(Date.now() - deleted).toBeLessThan(3_000 + 500);
  });

  it("a push waits on a silent client no longer than a deleted route's deprogram timeout", async () => {
    const { kube, plane, port, reconciler } = await setup({ ackTimeoutMs: 4_000, deprogramTimeoutMs: 1_500 });
    kube.addRoute(route("live"));
    const answering = { on: true };
    await envoyLike(plane, port, undefined, answering);
    let out = await reconciler.reconcile(SNAPSHOT_KEY);
    for (let i = 0; i < 20 && out.result !== "done"; i++) out = await reconciler.reconcile(SNAPSHOT_KEY);
    answering.on = false;
    const deleted = markDeleted(kube, "shop/live");
    await reconciler.reconcile(SNAPSHOT_KEY);
    const took = Date.now() - deleted;
    expect(conditionsOf(kube.route("shop/live"))).toContain("Programmed=False(DeprogramStuck)");
    expect(kube.route("shop/live")?.metadata.finalizers).toEqual([FINALIZER]);
    expect(took).toBeGreaterThanOrEqual(1_500);
    expect(took).toBeLessThan(1_500 + 500);
    // A route that says DeprogramStuck no longer cuts a push's wait short: a
    // new route is waited for the whole ACK timeout, as with no deletion.
    kube.addRoute(route("other"));
    const started = Date.now();
    await reconciler.reconcile(SNAPSHOT_KEY);
    expect(Date.now() - started).toBeGreaterThanOrEqual(4_000);
    expect(conditionsOf(kube.route("shop/other"))).toContain("Programmed=False(Pending)");
  });
});
