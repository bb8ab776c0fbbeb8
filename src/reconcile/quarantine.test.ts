// A refusal stays with its route, shown with gRPC's real xDS client
// (@grpc/grpc-js-xds) on the real ADS server: a route the client refuses is
// found (culprit-search.ts) and held back, and another tenant's routes, on a
// host the same client dials, keep flowing to it. The refused route is made
// in a test build of the snapshot, past the guard (test/xds/poisoning-build.ts).

import type { Client } from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callEcho, OTHER_METHOD, startEchoBackend, type EchoBackend } from "../../test/xds/echo-backend.js";
import { PORT } from "../../test/xds/fixtures.js";
import { useXdsServer, xdsClient } from "../../test/xds/grpc-xds-client.js";
import type { EdgeRouteV2, RouteRule } from "../api/types.js";
import { XdsDataPlane } from "../dataplane/xds/xds-dataplane.js";
import { silentLogger } from "../observability/logger.js";
import { NO_SECRETS, type EndpointsByService, type Snapshot } from "../translate/snapshot.js";
import { POISON_BACKOFF, poisoningBuild } from "../../test/xds/poisoning-build.js";
import { Registry } from "prom-client";
import { createReconcileMetrics } from "./reconcile-metrics.js";
import { liveInputs, SnapshotPipeline, type ServeState } from "./snapshot-pipeline.js";

const SHOP = "shop.example.com";
const OTHER = "other.example.com";
/** The cache, as the serve loop reads it: routes set by the test. */
class Routes implements ServeState {
  private list: EdgeRouteV2[] = [];
  private stamp = 0;
  private readonly listeners = new Set<() => void>();
  constructor(private readonly eps: EndpointsByService) {}
  set(routes: EdgeRouteV2[]): void {
    this.list = routes;
    this.stamp++;
    for (const l of [...this.listeners]) l();
  }
  revision() {
    return undefined;
  }
  routes() {
    return this.list;
  }
  endpoints() {
    return this.eps;
  }
  secrets() {
    return NO_SECRETS;
  }
  inputs() {
    return this.stamp;
  }
  synced() {
    return true;
  }
  onChange(listener: () => void) {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

function route(namespace: string, name: string, host: string, rule: RouteRule, generation = 1): EdgeRouteV2 {
  return {
    apiVersion: "net.10xdev.io/v2",
    kind: "EdgeRoute",
    metadata: {
      namespace,
      name,
      uid: `${namespace}-${name}`,
      generation,
      creationTimestamp: "2026-01-01T00:00:00Z",
    },
    spec: { hostnames: [host], rules: [rule] },
  };
}
const to = (name: string) => [{ name, port: PORT }];

const registry = new Registry();
let plane: XdsDataPlane;
let pipeline: SnapshotPipeline;
let state: Routes;
let stop: () => void;
let blue: EchoBackend;
let green: EchoBackend;
let shop: Client;
let other: Client;

/** The snapshot the pipeline serves now, and how long until every client took it (bounded). */
async function takenWithin(ms: number): Promise<{ snapshot: Snapshot; seconds: number }> {
  const started = Date.now();
  for (;;) {
    const snapshot = pipeline.snapshot(liveInputs(state));
    if ((await plane.current()) === snapshot.version)
      return { snapshot, seconds: (Date.now() - started) / 1000 };
    if (Date.now() - started > ms)
      throw new Error(`not taken within ${ms} ms: ${plane.refusal(snapshot.version) ?? "pending"}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const shopRoute = route("shop", "shop", SHOP, { matches: [{ path: { value: "/" } }], backends: to("blue") });
const poison = (backoff: string, generation: number) =>
  route(
    "tenant-a",
    "retrying",
    SHOP,
    {
      matches: [{ path: { type: "PathPrefix", value: "/other.Other" } }],
      backends: to("green"),
      retry: { attempts: 2, backoff },
    },
    generation,
  );
const otherRoute = route("tenant-b", "other", OTHER, {
  matches: [{ path: { value: "/" } }],
  backends: to("green"),
});

beforeAll(async () => {
  [blue, green] = await Promise.all([startEchoBackend("blue-1"), startEchoBackend("green-1")]);
  plane = new XdsDataPlane({ ackTimeoutMs: 2_000 });
  const port = await plane.listen("127.0.0.1", 0);
  await useXdsServer(port, "quarantine-client");
  // Each tenant's Services in its own namespace.
  const at = (port: number) => ({ ports: [{ port: PORT, addresses: [{ ip: "127.0.0.1", port }] }] });
  state = new Routes(
    new Map([
      ["shop/blue", at(blue.port)],
      ["tenant-a/green", at(green.port)],
      ["tenant-b/green", at(green.port)],
    ]),
  );
  pipeline = new SnapshotPipeline({
    snapshot: { configSource: { kind: "ads" } },
    build: poisoningBuild,
    metrics: createReconcileMetrics(registry),
  });
  state.set([shopRoute]);
  stop = pipeline.serve(state, plane, { log: silentLogger(), minIntervalMs: 20 });
  shop = xdsClient(SHOP);
  other = xdsClient(OTHER);
  expect(await callEcho(shop, { deadlineMs: 10_000 })).toEqual({ ok: true, backend: "blue-1" });
  // The other host has no route yet: its channel subscribes, and fails its call.
  expect(await callEcho(other, { deadlineMs: 3_000 })).toMatchObject({ ok: false });
  await takenWithin(5_000);
}, 30_000);

afterAll(() => {
  stop?.();
  shop?.close();
  other?.close();
  plane?.stop();
  blue?.stop();
  green?.stop();
});

describe("a route a real gRPC client refuses", () => {
  it("is held back with the client's words, and another tenant's route is created and deleted through the same client", async () => {
    state.set([shopRoute, poison(POISON_BACKOFF, 1)]);
    const held = await takenWithin(10_000);
    const outcome = held.snapshot.outcomes.find((o) => o.key === "tenant-a/retrying");
    expect(outcome).toMatchObject({ accepted: false, reason: "Rejected" });
    expect(outcome?.accepted === false ? outcome.message : "").toMatch(
      /^held back from every xDS client: xDS client quarantine-client rejected it: .*max_interval.*; it is tried again when its spec changes$/,
    );
    expect(held.snapshot.outcomes.find((o) => o.key === "shop/shop")).toMatchObject({ accepted: true });
    // One search, held: the client's words name the route entry, so one trial told.
    expect(await registry.getSingleMetricAsString("edge_operator_culprit_searches_total")).toContain(
      'edge_operator_culprit_searches_total{result="held"} 1',
    );
    expect(await registry.getSingleMetricAsString("edge_operator_culprit_trials_total")).toMatch(
      /edge_operator_culprit_trials_total 1$/m,
    );

    // The other tenant's route: created, taken, served; then deleted, taken, gone.
    state.set([shopRoute, poison(POISON_BACKOFF, 1), otherRoute]);
    const created = await takenWithin(5_000);
    expect(created.snapshot.outcomes.find((o) => o.key === "tenant-b/other")).toMatchObject({
      accepted: true,
    });
    expect(created.seconds).toBeLessThan(1.5);
    expect(await callEcho(other, { deadlineMs: 5_000 })).toEqual({ ok: true, backend: "green-1" });
    // The held route serves nothing: its path still goes to shop's catch-all.
    expect(await callEcho(shop, { method: OTHER_METHOD })).toEqual({ ok: true, backend: "blue-1" });

    state.set([shopRoute, poison(POISON_BACKOFF, 1)]);
    const deleted = await takenWithin(5_000);
    expect(deleted.seconds).toBeLessThan(1.5);
    expect(await callEcho(other, { deadlineMs: 2_000 })).toMatchObject({ ok: false });

    // Fixed: a new generation is tried again, taken, and served.
    state.set([shopRoute, poison("2s", 2)]);
    const fixed = await takenWithin(5_000);
    expect(fixed.snapshot.outcomes.find((o) => o.key === "tenant-a/retrying")).toMatchObject({
      accepted: true,
    });
    expect(await callEcho(shop, { method: OTHER_METHOD })).toEqual({ ok: true, backend: "green-1" });
  }, 60_000);
});
