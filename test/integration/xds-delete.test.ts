// Deleting a route with the xds sink, end to end on a real apiserver: `serve
// --dataplane xds` and the watcher, routes applied and deleted with kubectl,
// and xDS clients of several kinds whose ACKs decide when the finalizer goes:
// grpc-go's and @grpc/grpc-js-xds's proxyless clients routing real RPCs to a
// backend on loopback (published in the EndpointSlice as 192.0.2.1, TEST-NET-1,
// since the apiserver refuses loopback addresses; each client maps exactly
// that address to 127.0.0.1), an Envoy-like Delta client, and gRPC-like State
// of the World clients that hold or refuse what they are sent.

import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EdgeRouteV2 } from "../../src/api/types.js";
import { TYPE_URL } from "../../src/envoy/envoy-resources.js";
import type { KubeClient } from "../../src/kube/client.js";
import { isNotFound } from "../../src/kube/errors.js";
import { edgeRoutePath } from "../../src/kube/paths.js";
import { startControlPlane } from "../harness/control-plane.js";
import type { ControlPlane } from "../../tools/testenv/control-plane.js";
import { startOperatorStack, type OperatorStack } from "../harness/operator-stack.js";
import { httpsJson } from "../../tools/testenv/https-json.js";
import { freePort, sleep, waitFor } from "../../tools/testenv/process.js";
import { startGoXdsClient, type GoCallResult, type GoXdsClient } from "../harness/xds-go.js";
import { ECHO_METHOD, OTHER_METHOD, startEchoBackend, type EchoBackend } from "../xds/echo-backend.js";
import { startNodeXdsClient } from "../xds/node-xds-client.js";
import {
  routeKeysOf,
  startEnvoyLikeDelta,
  startSotwClient,
  type Seen,
  type SotwClient,
} from "../xds/scripted-ads-client.js";
import { apply, cond, getRoute, waitForConditions } from "./routes.js";

const NS = "default";
const SERVICE_PORT = 50051;
const BLUE_IP = "192.0.2.1";
const DIAL_MAP = `${BLUE_IP}=127.0.0.1`;
const CLUSTER = `${NS}/blue:${SERVICE_PORT}`;
const DEPROGRAMMING = "deleted: waiting until every xDS client it was sent to holds a snapshot without it";
/** Where the finalizer must have gone by, from the delete: about a second, with slack for a loaded 2-core machine. */
const GONE_WITHIN_MS = 3_000;

let cp: ControlPlane;
let stack: OperatorStack;
let kube: KubeClient;
let adsPort: number;
let blue: EchoBackend;
const figures: string[] = [];

function figure(line: string): void {
  figures.push(line);
  process.stdout.write(`[xds-delete] ${line}\n`);
}

function edgeRoute(name: string, host: string, prefix: string, service = "blue") {
  return {
    apiVersion: "net.10xdev.io/v2",
    kind: "EdgeRoute",
    metadata: { name, namespace: NS },
    spec: {
      hostnames: [host],
      rules: [
        {
          matches: [{ path: { type: "PathPrefix", value: prefix } }],
          backends: [{ name: service, port: SERVICE_PORT }],
        },
      ],
    },
  };
}

/** The route as the apiserver has it now (the product's client: no kubectl process per look), or undefined once gone. */
async function routeNow(name: string): Promise<EdgeRouteV2 | undefined> {
  try {
    return await kube.json<EdgeRouteV2>("GET", edgeRoutePath(NS, name), { timeoutMs: 5_000 });
  } catch (e) {
    if (isNotFound(e)) return undefined;
    throw e;
  }
}

function programmed(r: EdgeRouteV2 | undefined) {
  return r?.status?.conditions?.find((c) => c.type === "Programmed");
}

interface Deletion {
  /** performance.now() before kubectl was started. */
  readonly t0: number;
  /** When kubectl delete --wait=false returned. */
  readonly issued: number;
  /** When a GET first found the object gone. */
  readonly goneAt: number;
  readonly goneMs: number;
}

async function deleteRoute(name: string): Promise<{ t0: number; issued: number }> {
  const t0 = performance.now();
  const r = await cp.kubectl(["delete", "edgeroutes.v2.net.10xdev.io", name, "-n", NS, "--wait=false"]);
  expect(r.code, r.stderr).toBe(0);
  return { t0, issued: performance.now() };
}

/** Polls every 20 ms until the route is gone. */
async function gone(name: string, timeoutMs: number): Promise<number> {
  await waitFor(
    `${NS}/${name} to be gone`,
    async () => ((await routeNow(name)) === undefined ? true : undefined),
    timeoutMs,
    20,
  );
  return performance.now();
}

async function deleteAndTime(name: string, timeoutMs = 30_000): Promise<Deletion> {
  const { t0, issued } = await deleteRoute(name);
  const goneAt = await gone(name, timeoutMs);
  return { t0, issued, goneAt, goneMs: goneAt - t0 };
}

const s = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;
const what = (r: GoCallResult): string => (r.ok ? r.backend : `${r.code}: ${r.message}`);

beforeAll(async () => {
  // With XDS_DELETE_LOGS, the server and the watcher (they inherit it) log at debug.
  if (process.env.XDS_DELETE_LOGS) process.env.LOG_LEVEL = "debug";
  cp = await startControlPlane();
  kube = cp.kube();
  adsPort = await freePort();
  [stack, blue] = await Promise.all([
    startOperatorStack(cp, {
      serveArgs: [
        "--dataplane",
        "xds",
        "--xds-listen",
        `127.0.0.1:${adsPort}`,
        "--xds-plaintext",
        "--xds-ack-timeout",
        "3s",
      ],
      // The chart's default. Stored as v1, each read of a v2 route is a /convert call, and the
      // samplers' reads (20 a second each) count as admission load: past 50 a second the
      // server turns the snapshot key away for up to 5 s (docs/architecture.md, "Admission first").
      storageVersion: "v2",
    }),
    startEchoBackend("blue-1"),
  ]);
  // No controller-manager runs here: the EndpointSlice is the test's to write.
  await apply(
    cp,
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "blue", namespace: NS },
      spec: { ports: [{ name: "grpc", port: SERVICE_PORT, targetPort: blue.port, protocol: "TCP" }] },
    },
    {
      apiVersion: "discovery.k8s.io/v1",
      kind: "EndpointSlice",
      metadata: { name: "blue-1", namespace: NS, labels: { "kubernetes.io/service-name": "blue" } },
      addressType: "IPv4",
      ports: [{ name: "grpc", port: blue.port, protocol: "TCP" }],
      endpoints: [{ addresses: [BLUE_IP], conditions: { ready: true } }],
    },
  );
}, 300_000);

afterAll(async () => {
  // XDS_DELETE_LOGS=DIR keeps the server's and the watcher's output, for reading what happened when.
  const logs = process.env.XDS_DELETE_LOGS;
  if (logs && stack) {
    mkdirSync(logs, { recursive: true });
    writeFileSync(path.join(logs, "serve.log"), stack.serve.output());
    stack.watchers.forEach((w, i) => writeFileSync(path.join(logs, `watch-${i}.log`), w.output()));
  }
  if (figures.length > 0) process.stdout.write(`[xds-delete] figures:\n  ${figures.join("\n  ")}\n`);
  await stack?.stop();
  blue?.stop();
  await cp?.stop();
});

interface Logged {
  readonly path: "A" | "B";
  readonly start: number;
  readonly end: number;
  readonly r: GoCallResult;
}

/**
 * Two routes on one Service: A on /echo.Echo, B on /other.Other, on one host
 * or (bHost) on two. A deleted under steady RPCs on both: A stops being routed
 * before its object is gone, the object goes within GONE_WITHIN_MS, B never
 * fails. On two hosts, A's channel no longer needs the cluster, which lives on
 * for B: grpc-go unsubscribes its clusters and endpoints with empty lists.
 */
async function deleteUnderTraffic(
  label: string,
  client: GoXdsClient,
  host: string,
  bHost = host,
): Promise<void> {
  const a = `${label}-a`;
  const b = `${label}-b`;
  const hostOf = (method: string) => (method === ECHO_METHOD ? host : bHost);
  try {
    await apply(cp, edgeRoute(a, host, "/echo.Echo"), edgeRoute(b, bHost, "/other.Other"));
    // The first call makes the channel: listener, routes, cluster and endpoints.
    for (const method of [ECHO_METHOD, OTHER_METHOD]) {
      let last: GoCallResult | undefined;
      await waitFor(
        `${label}: ${method} on xds:///${hostOf(method)} to reach blue-1 (last: ${last ? what(last) : "-"})`,
        async () => {
          last = await client.call({ host: hostOf(method), method, timeoutMs: 3_000 });
          return last.ok && last.backend === "blue-1" ? true : undefined;
        },
        30_000,
        200,
      ).catch((e: Error) => {
        throw new Error(`${e.message}; last: ${last ? what(last) : "-"}\n${client.stderr()}`);
      });
    }
    await waitForConditions(cp, a, "True(Valid)", "True(Synced)");
    await waitForConditions(cp, b, "True(Valid)", "True(Synced)");

    const log: Logged[] = [];
    let running = true;
    const loop = async (path: "A" | "B", method: string): Promise<void> => {
      // Bounded: stops when told, or after 60 s.
      const until = performance.now() + 60_000;
      while (running && performance.now() < until) {
        const start = performance.now();
        const r = await client.call({ host: hostOf(method), method, timeoutMs: 2_000 });
        log.push({ path, start, end: performance.now(), r });
        await sleep(20);
      }
    };
    const loops = [loop("A", ECHO_METHOD), loop("B", OTHER_METHOD)];
    await sleep(500);
    let d: Deletion;
    try {
      d = await deleteAndTime(a);
      await sleep(1_000);
    } finally {
      running = false;
      await Promise.all(loops);
    }

    const aCalls = log.filter((e) => e.path === "A");
    const bCalls = log.filter((e) => e.path === "B");
    const lastOk = aCalls.filter((e) => e.r.ok).at(-1);
    const firstFail = aCalls.find((e) => !e.r.ok);
    figure(
      `${label}: delete → gone ${s(d.goneMs)} (${s(d.goneAt - d.issued)} after kubectl returned); ` +
        `A's last RPC reaching the backend started ${lastOk ? s(lastOk.start - d.t0) : "-"} after the delete, ` +
        `its first failure ${firstFail ? s(firstFail.start - d.t0) : "-"} (${firstFail ? what(firstFail.r) : "-"}); ` +
        `RPCs: A ${aCalls.length}, B ${bCalls.length} (${bCalls.filter((e) => !e.r.ok).length} failed)`,
    );

    expect(await getRoute(cp, a)).toBeUndefined();
    expect(d.goneMs).toBeLessThan(GONE_WITHIN_MS);
    // Before the delete, A reached the backend.
    const before = aCalls.filter((e) => e.end < d.t0);
    expect(before.length).toBeGreaterThan(0);
    expect(new Set(before.map((e) => what(e.r)))).toEqual(new Set(["blue-1"]));
    // By the time the object was gone, the client no longer routed A: every call started after fails.
    const after = aCalls.filter((e) => e.start >= d.goneAt);
    expect(after.length).toBeGreaterThan(3);
    for (const e of after) {
      expect(e.r, what(e.r)).toMatchObject({ ok: false, code: "Unavailable" });
      expect(e.r.ok ? "" : e.r.message).toMatch(/no matched route|Failed to route call/);
    }
    // B kept working throughout.
    expect(bCalls.length).toBeGreaterThan(10);
    expect(new Set(bCalls.map((e) => what(e.r)))).toEqual(new Set(["blue-1"]));
    expect(bCalls.at(-1)?.start ?? 0).toBeGreaterThan(d.goneAt);
    expect(cond(await getRoute(cp, b), "Programmed")).toBe("True(Synced)");
  } finally {
    await cp.kubectl(["delete", "edgeroutes.v2.net.10xdev.io", a, b, "-n", NS, "--wait=false"]);
    // While the client is still connected, it ACKs the routes' removal: they go at once.
    await Promise.all([gone(a, 30_000), gone(b, 30_000)]).catch(() => undefined);
  }
}

describe("a route deleted while proxyless gRPC clients route RPCs through it", () => {
  it("grpc-go (xds:///shop.example.com): A stops being routed, its finalizer goes within about a second, B keeps working", async () => {
    const client = await startGoXdsClient({
      adsPort,
      nodeId: "go-delete",
      env: { XDS_GO_DIAL_MAP: DIAL_MAP },
    });
    try {
      await deleteUnderTraffic("go", client, "shop.example.com");
    } finally {
      await client.stop();
    }
  });

  it("@grpc/grpc-js-xds (a child process): the same", async () => {
    const client = await startNodeXdsClient({ adsPort, nodeId: "js-delete", dialMap: DIAL_MAP });
    try {
      await deleteUnderTraffic("js", client, "js.shop.example.com");
    } finally {
      await client.stop();
    }
  });

  it("grpc-go, B on another host of the same Service (the cluster lives on, A's channel unsubscribes it): the same", async () => {
    const client = await startGoXdsClient({
      adsPort,
      nodeId: "go-delete-2",
      env: { XDS_GO_DIAL_MAP: DIAL_MAP },
    });
    try {
      await deleteUnderTraffic("go2", client, "a.shop.example.com", "b.shop.example.com");
    } finally {
      await client.stop();
    }
  });

  it("@grpc/grpc-js-xds, B on another host of the same Service: the same", async () => {
    const client = await startNodeXdsClient({ adsPort, nodeId: "js-delete-2", dialMap: DIAL_MAP });
    try {
      await deleteUnderTraffic("js2", client, "a.js.shop.example.com", "b.js.shop.example.com");
    } finally {
      await client.stop();
    }
  });
});

/** An RDS response that came after `since` and whose route configuration `name` lacks the route `key`. */
const rdsLacks =
  (key: string, since: number, name = "edge") =>
  (m: Seen): boolean => {
    const rc = m.resources.get(name);
    return m.at > since && rc !== undefined && !routeKeysOf(rc).includes(key);
  };

describe("a route deleted with an Envoy-like client on Delta", () => {
  it("CDS *, LDS *, RDS edge, EDS per cluster, every response ACKed: the finalizer goes once the client ACKed the routes without it", async () => {
    const host = "delta.example.com";
    const names = ["delta-a", "delta-b", "delta-c"];
    const envoy = startEnvoyLikeDelta({ port: adsPort, node: "envoy-delta" });
    try {
      await apply(
        cp,
        edgeRoute("delta-a", host, "/echo.Echo"),
        edgeRoute("delta-b", host, "/other.Other"),
        edgeRoute("delta-c", host, "/third.Third"),
      );
      for (const n of names) await waitForConditions(cp, n, "True(Valid)", "True(Synced)");
      const keys = names.map((n) => `${NS}/${n}`);
      await waitFor("the client to hold the three routes", async () => {
        const held = routeKeysOf(envoy.holds(TYPE_URL.routeConfiguration).get("edge"));
        return keys.every((k) => held.includes(k)) ? true : undefined;
      });
      expect(envoy.edsNames()).toContain(CLUSTER);
      expect(envoy.holds(TYPE_URL.clusterLoadAssignment).get(CLUSTER)).toMatchObject({
        endpoints: [
          {
            lb_endpoints: [
              { endpoint: { address: { socket_address: { address: BLUE_IP, port_value: blue.port } } } },
            ],
          },
        ],
      });

      // 1. ACKed at once.
      const d = await deleteAndTime("delta-a");
      const without = envoy.received.find(
        (m) => m.typeUrl === TYPE_URL.routeConfiguration && rdsLacks(keys[0] as string, d.t0)(m),
      );
      expect(without, "an RDS response without delta-a").toBeDefined();
      const ack = envoy.answers.find((x) => x.nonce === without?.nonce);
      expect(ack?.kind).toBe("ack");
      figure(
        `delta: delete → gone ${s(d.goneMs)}; RDS without the route sent ${s((without?.at ?? NaN) - d.t0)} after the delete, ` +
          `ACKed ${s((ack?.at ?? NaN) - d.t0)}, object seen gone ${s(d.goneAt - (ack?.at ?? NaN))} after the ACK`,
      );
      expect(d.goneMs).toBeLessThan(GONE_WITHIN_MS);
      expect(ack?.at ?? Infinity).toBeLessThan(d.goneAt);
      expect(routeKeysOf(envoy.holds(TYPE_URL.routeConfiguration).get("edge"))).toEqual(
        expect.arrayContaining(keys.slice(1)),
      );
      expect(routeKeysOf(envoy.holds(TYPE_URL.routeConfiguration).get("edge"))).not.toContain(keys[0]);
      // The cluster B and C still use stays, with its endpoints.
      expect([...envoy.holds(TYPE_URL.cluster).keys()]).toContain(CLUSTER);
      expect(envoy.edsNames()).toContain(CLUSTER);

      // 2. The RDS response held for 1.5 s (within the 3 s ACK timeout): the object waits for the ACK.
      envoy.answer(TYPE_URL.routeConfiguration, { kind: "hold" });
      const { t0 } = await deleteRoute("delta-c");
      const heldMsg = await envoy.waitFor(
        TYPE_URL.routeConfiguration,
        rdsLacks(keys[2] as string, t0),
        5_000,
      );
      await sleep(Math.max(0, 1_500 - (performance.now() - t0)));
      const waiting = await routeNow("delta-c");
      expect(waiting?.metadata.deletionTimestamp).toBeDefined();
      expect(waiting?.metadata.finalizers).toContain("net.10xdev.io/deprogram");
      const ackAt = performance.now();
      envoy.answer(TYPE_URL.routeConfiguration, { kind: "ack" });
      const goneAt = await gone("delta-c", 15_000);
      figure(
        `delta, RDS held: sent ${s(heldMsg.at - t0)} after the delete, held until ${s(ackAt - t0)} ` +
          `(Programmed then ${programmed(waiting)?.status}/${programmed(waiting)?.reason}), gone ${s(goneAt - ackAt)} after the ACK`,
      );
      expect(goneAt - ackAt).toBeLessThan(GONE_WITHIN_MS);
      expect(cond(await getRoute(cp, "delta-b"), "Programmed")).toBe("True(Synced)");
    } finally {
      await cp.kubectl([
        "delete",
        "edgeroutes.v2.net.10xdev.io",
        ...names,
        "-n",
        NS,
        "--wait=false",
        "--ignore-not-found",
      ]);
      await Promise.all(names.map((n) => gone(n, 30_000))).catch(() => undefined);
      await envoy.close();
    }
  });
});

/** With XDS_DELETE_LOGS, GET /debug/xds every 250 ms into a file, until stopped. */
function debugXds(label: string, t0: number): { stop(): Promise<void> } {
  const dir = process.env.XDS_DELETE_LOGS;
  if (!dir) return { stop: async () => undefined };
  let on = true;
  const lines: string[] = [];
  const done = (async () => {
    while (on) {
      const r = await httpsJson(
        `${stack.serve.url}/debug/xds`,
        stack.serve.caPem,
        "GET",
        undefined,
        stack.token,
      );
      const m = await httpsJson(
        `${stack.serve.url}/metrics`,
        stack.serve.caPem,
        "GET",
        undefined,
        stack.token,
      );
      const counts = String(m.body)
        .split("\n")
        .filter(
          (l) =>
            l.startsWith("edge_operator_reconcile_duration_seconds_count") ||
            l.startsWith("edge_operator_dataplane_pushes_total"),
        )
        .join(" ");
      const b = r.body as { version?: string; verdict?: unknown };
      lines.push(
        `${((performance.now() - t0) / 1000).toFixed(2)} ${b.version} ${JSON.stringify(b.verdict)} ${counts}`,
      );
      await sleep(250);
    }
  })();
  return {
    async stop() {
      on = false;
      await done;
      const m = await httpsJson(
        `${stack.serve.url}/metrics`,
        stack.serve.caPem,
        "GET",
        undefined,
        stack.token,
      );
      lines.push(
        ...String(m.body)
          .split("\n")
          .filter((l) => /reconcile|cache_wait|pushes/.test(l) && !l.startsWith("#")),
      );
      mkdirSync(dir, { recursive: true });
      writeFileSync(path.join(dir, `debug-xds-${label}.log`), lines.join("\n"));
    },
  };
}

/** A gRPC-like State of the World client for one host, as grpc-js/grpc-go ask. */
function grpcLike(node: string, host: string): SotwClient {
  return startSotwClient({
    port: adsPort,
    node,
    subscriptions: [
      [TYPE_URL.listener, [host]],
      [TYPE_URL.routeConfiguration, [`edge/${host}`]],
      [TYPE_URL.cluster, [CLUSTER]],
      [TYPE_URL.clusterLoadAssignment, [CLUSTER]],
    ],
  });
}

interface Sample {
  readonly at: number;
  readonly exists: boolean;
  readonly programmed?: string;
  readonly message?: string;
  /** observedGeneration/generation. */
  readonly generations?: string;
}

/** Reads the route every 50 ms until stopped or gone; bounded at 60 s. */
function sampleRoute(name: string): { samples: Sample[]; stop(): Promise<void> } {
  const samples: Sample[] = [];
  let on = true;
  const done = (async () => {
    const until = performance.now() + 60_000;
    while (on && performance.now() < until) {
      const r = await routeNow(name);
      const p = programmed(r);
      samples.push({
        at: performance.now(),
        exists: r !== undefined,
        ...(p
          ? {
              programmed: `${p.status}(${p.reason})`,
              message: p.message,
              generations: `${p.observedGeneration}/${r?.metadata.generation}`,
            }
          : {}),
      });
      if (r === undefined) return;
      await sleep(50);
    }
  })();
  return {
    samples,
    async stop() {
      on = false;
      await done;
    },
  };
}

/** The samples after `t0` while the route existed, and where the first Programmed=False is among them. */
function terminatingSamples(samples: readonly Sample[], t0: number) {
  const existing = samples.filter((x) => x.exists && x.at > t0);
  const firstFalse = existing.findIndex((x) => x.programmed?.startsWith("False"));
  return { existing, firstFalse, fromFalse: firstFalse < 0 ? [] : existing.slice(firstFalse) };
}

const readings = (xs: readonly Sample[]): string =>
  xs
    .map((x) => `${x.programmed}[${x.generations}]`)
    .filter((v, i, all) => i === 0 || all[i - 1] !== v)
    .join(" → ");

describe("a deletion waiting on a client that does not ACK", () => {
  it("the Terminating route reads Programmed=False/Pending from the first verdict on, never True again, until the client ACKs (or disconnects); then it goes", async () => {
    const host = "hold.example.com";
    const names = ["hold-a", "hold-b", "hold-c"];
    let client: SotwClient | undefined = grpcLike("grpc-hold", host);
    try {
      await apply(
        cp,
        edgeRoute("hold-a", host, "/echo.Echo"),
        edgeRoute("hold-b", host, "/other.Other"),
        edgeRoute("hold-c", host, "/third.Third"),
      );
      for (const n of names) await waitForConditions(cp, n, "True(Valid)", "True(Synced)");

      // 1. The route configuration without hold-a held for 6 s (past the 3 s ACK timeout), then ACKed.
      client.answer(TYPE_URL.routeConfiguration, { kind: "hold" });
      const sampler = sampleRoute("hold-a");
      const bSampler = sampleRoute("hold-b");
      const { t0, issued } = await deleteRoute("hold-a");
      const heldMsg = await client.waitFor(
        TYPE_URL.routeConfiguration,
        rdsLacks(`${NS}/hold-a`, t0, `edge/${host}`),
        5_000,
      );
      await sleep(Math.max(0, 6_000 - (performance.now() - t0)));
      expect((await routeNow("hold-a"))?.metadata.finalizers).toContain("net.10xdev.io/deprogram");
      const ackAt = performance.now();
      client.answer(TYPE_URL.routeConfiguration, { kind: "ack" });
      const debugging = debugXds("hold-a", t0);
      const goneAt = await gone("hold-a", 20_000);
      await debugging.stop();
      await sampler.stop();
      await bSampler.stop();

      // From when kubectl returned: the delete is done by then.
      const a = terminatingSamples(sampler.samples, issued);
      const firstFalseAt = a.existing[a.firstFalse]?.at;
      figure(
        `hold (ACK): RDS without hold-a sent ${s(heldMsg.at - t0)} after the delete, held until ${s(ackAt - t0)}; ` +
          `hold-a read ${readings(a.existing)} (observedGeneration/generation), the first False ${firstFalseAt ? s(firstFalseAt - t0) : "never"} after the delete; ` +
          `gone ${s(goneAt - ackAt)} after the ACK; hold-b meanwhile read ${readings(bSampler.samples.filter((x) => x.at > t0))}`,
      );
      expect(a.firstFalse, JSON.stringify(a.existing.slice(0, 5))).toBeGreaterThanOrEqual(0);
      // From the first verdict after the delete on: never True again, and these words.
      expect(new Set(a.fromFalse.map((x) => x.programmed))).toEqual(new Set(["False(Pending)"]));
      expect(new Set(a.fromFalse.map((x) => x.message))).toEqual(new Set([DEPROGRAMMING]));
      expect(
        new Set(a.fromFalse.map((x) => x.generations?.split("/")[0] === x.generations?.split("/")[1])),
      ).toEqual(new Set([true]));
      // Before it: only what was written before the delete (the delete moved the generation on).
      for (const x of a.existing.slice(0, a.firstFalse)) expect(x.generations).not.toMatch(/^(\d+)\/\1$/);
      // It waited for the ACK, and went after it.
      expect(firstFalseAt ?? Infinity).toBeLessThan(ackAt);
      expect(goneAt).toBeGreaterThan(ackAt);
      expect(goneAt - ackAt).toBeLessThan(10_000);

      // 2. The same for hold-c, held past the ACK timeout again, then the client disconnects.
      client.answer(TYPE_URL.routeConfiguration, { kind: "hold" });
      const cSampler = sampleRoute("hold-c");
      const c = await deleteRoute("hold-c");
      await client.waitFor(
        TYPE_URL.routeConfiguration,
        rdsLacks(`${NS}/hold-c`, c.t0, `edge/${host}`),
        5_000,
      );
      await waitFor(
        "hold-c to read Programmed=False",
        async () => (cond(await routeNow("hold-c"), "Programmed") === "False(Pending)" ? true : undefined),
        15_000,
        100,
      );
      expect((await routeNow("hold-c"))?.metadata.finalizers).toContain("net.10xdev.io/deprogram");
      const closeAt = performance.now();
      await client.close();
      client = undefined;
      const cGoneAt = await gone("hold-c", 20_000);
      await cSampler.stop();
      const cs = terminatingSamples(cSampler.samples, c.issued);
      figure(
        `hold (disconnect): hold-c read ${readings(cs.existing)}; disconnected ${s(closeAt - c.t0)} after the delete, gone ${s(cGoneAt - closeAt)} after that`,
      );
      expect(new Set(cs.fromFalse.map((x) => x.programmed))).toEqual(new Set(["False(Pending)"]));
      expect(cGoneAt - closeAt).toBeLessThan(10_000);
    } finally {
      await cp.kubectl([
        "delete",
        "edgeroutes.v2.net.10xdev.io",
        ...names,
        "-n",
        NS,
        "--wait=false",
        "--ignore-not-found",
      ]);
      await client?.close();
      await Promise.all(names.map((n) => gone(n, 30_000))).catch(() => undefined);
    }
  });

  it("the Terminating route stops reading Programmed=True within about a second of the delete, even while the push waits out its ACK timeout", async () => {
    const host = "hold2.example.com";
    let client: SotwClient | undefined = grpcLike("grpc-hold2", host);
    try {
      await apply(cp, edgeRoute("hold2-a", host, "/echo.Echo"));
      await waitForConditions(cp, "hold2-a", "True(Valid)", "True(Synced)");
      client.answer(TYPE_URL.routeConfiguration, { kind: "hold" });
      const sampler = sampleRoute("hold2-a");
      const { t0, issued } = await deleteRoute("hold2-a");
      await sleep(GONE_WITHIN_MS + 1_000);
      await sampler.stop();
      const a = terminatingSamples(sampler.samples, issued);
      const lastTrue = a.existing.filter((x) => x.programmed?.startsWith("True")).at(-1);
      figure(
        `hold2: with the client holding its route configuration, hold2-a read ${readings(a.existing)}; ` +
          `Programmed=True last read ${lastTrue ? s(lastTrue.at - t0) : "never"} after the delete (ACK timeout 3 s)`,
      );
      expect(a.existing.length).toBeGreaterThan(0);
      // Every reading later than GONE_WITHIN_MS after the delete: not True.
      const late = a.existing.filter((x) => x.at - t0 > GONE_WITHIN_MS);
      expect(late.length).toBeGreaterThan(0);
      expect(
        late.filter((x) => x.programmed?.startsWith("True")).map((x) => `${s(x.at - t0)} ${x.programmed}`),
      ).toEqual([]);
    } finally {
      await client?.close();
      client = undefined;
      await cp.kubectl([
        "delete",
        "edgeroutes.v2.net.10xdev.io",
        "hold2-a",
        "-n",
        NS,
        "--wait=false",
        "--ignore-not-found",
      ]);
      await gone("hold2-a", 30_000).catch(() => undefined);
    }
  });
});

describe("a NACK marks only the routes in what that client was sent", () => {
  it("two gRPC-like clients, a.example.com and b.example.com: b NACKs a change to route b; b is held back with its words, its version before still served, a stays Synced", async () => {
    const words = "route b: this client refuses it (test)";
    const ca = grpcLike("grpc-a", "a.example.com");
    const cb = grpcLike("grpc-b", "b.example.com");
    try {
      await apply(
        cp,
        edgeRoute("nack-a", "a.example.com", "/echo.Echo"),
        edgeRoute("nack-b", "b.example.com", "/echo.Echo"),
      );
      await waitForConditions(cp, "nack-a", "True(Valid)", "True(Synced)");
      await waitForConditions(cp, "nack-b", "True(Valid)", "True(Synced)");
      const aResponses = ca.received.length;

      cb.answer(TYPE_URL.routeConfiguration, { kind: "nack", message: words });
      const t0 = performance.now();
      await apply(cp, edgeRoute("nack-b", "b.example.com", "/other.Other"));
      const changed = await cb.waitFor(
        TYPE_URL.routeConfiguration,
        (m) => JSON.stringify(m.resources.get("edge/b.example.com") ?? {}).includes("/other.Other"),
        10_000,
      );
      expect(cb.answers.find((x) => x.nonce === changed.nonce)?.kind).toBe("nack");
      // The change is what b refused (b took the route before it): held back, with b's words.
      const rejected = await waitForConditions(cp, "nack-b", "False(Rejected)", "False(Pending)");
      expect(rejected.status?.conditions?.find((c) => c.type === "Accepted")?.message).toBe(
        `held back from every xDS client: xDS client grpc-b rejected it: ${words}; it is tried again when its spec changes`,
      );
      const rejectedAt = performance.now();
      // Past the ACK timeout and a requeue: route a never leaves Synced.
      const aSampler = sampleRoute("nack-a");
      await sleep(6_000);
      await aSampler.stop();
      const aSeen = [...new Set(aSampler.samples.map((x) => x.programmed))];
      figure(
        `nack: b Rejected ${s(rejectedAt - t0)} after the change; a read ${aSeen.join(", ")} over the next 6 s; ` +
          `client a got ${ca.received.length - aResponses} response(s) meanwhile`,
      );
      expect(aSeen).toEqual(["True(Synced)"]);
      expect(cond(await getRoute(cp, "nack-b"), "Accepted")).toBe("False(Rejected)");
      // What b took before stays served: the server sends b nothing in place of it.
      const last = cb.received.filter((m) => m.typeUrl === TYPE_URL.routeConfiguration).at(-1);
      expect(JSON.stringify(last?.resources.get("edge/b.example.com") ?? {})).toContain("/echo.Echo");
    } finally {
      // Taken again, so that the routes' removal is ACKed and they go.
      cb.answer(TYPE_URL.routeConfiguration, { kind: "ack" });
      await cp.kubectl([
        "delete",
        "edgeroutes.v2.net.10xdev.io",
        "nack-a",
        "nack-b",
        "-n",
        NS,
        "--wait=false",
        "--ignore-not-found",
      ]);
      await Promise.all([gone("nack-a", 30_000), gone("nack-b", 30_000)]).catch(() => undefined);
      await ca.close();
      await cb.close();
    }
  });
});
