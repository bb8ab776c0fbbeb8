// The xds sink at scale: bytes and time to push a one-route change at 10,000
// routes, Delta against State of the World, each with its floor measured in
// the same run; and route applied (program() of a snapshot holding one more
// route) → ACKed by gRPC's own xDS client, p50/p99.
//
// `npm run bench:xds [-- ROUTES RUNS]` (defaults 10000 and 7). Clients are on
// loopback; every loop is bounded in count and time.

import { performance } from "node:perf_hooks";
import type { EdgeRouteV2 } from "../src/api/types.js";
import { TYPE_URL } from "../src/envoy/envoy-resources.js";
import { buildSnapshot, type Snapshot } from "../src/envoy/snapshot.js";
import { XdsEncoder } from "../src/dataplane/xds/resources.js";
import { XdsDataPlane } from "../src/dataplane/xds/xds-dataplane.js";
import { decodeResource } from "../src/dataplane/xds/proto-codec.js";
import { syntheticInput } from "../test/fixtures/synthetic-routes.js";
import { adsClient, deltaStream, sotwStream } from "../test/xds/raw-ads-client.js";
import { startEchoBackend } from "../test/xds/echo-backend.js";
import { useXdsServer, xdsClient } from "../test/xds/grpc-xds-client.js";
import { fmt, summarize } from "./stats.js";

const ROUTES = Number(process.argv[2] ?? 10_000);
const RUNS = Number(process.argv[3] ?? 7);
const TIMEOUT_MS = 120_000;

const synthetic = syntheticInput(ROUTES);
const { routes } = synthetic;
// Every endpoint on loopback (the echo backend's port), so that gRPC's client
// connects nowhere else; the sizes of the resources stay the same.
const backend = await startEchoBackend("bench");
const endpoints = new Map(
  [...synthetic.endpoints].map(([key, svc]) => [
    key,
    {
      ports: svc.ports.map((p) => ({
        port: p.port,
        addresses: p.addresses.map((_, i) => ({ ip: `127.0.0.${i + 1}`, port: backend.port })),
      })),
    },
  ]),
);
const options = { configSource: { kind: "ads" } } as const;

/** The same routes, route-0's first path changed: a one-route change (its route configuration only). */
function variant(k: number): Snapshot {
  const changed = routes.map((r, i): EdgeRouteV2 => {
    if (i !== 0) return r;
    const rules = r.spec.rules.map((rule, j) =>
      j === 0
        ? { ...rule, matches: [{ path: { type: "PathPrefix" as const, value: `/changed/v${k}` } }] }
        : rule,
    );
    return { ...r, spec: { ...r.spec, rules } };
  });
  return buildSnapshot(changed, endpoints, options);
}

interface Tally {
  bytes: number;
  responses: number;
}

/** The same routes, one Service's endpoints moved (its ClusterLoadAssignment only). */
function endpointsVariant(k: number): Snapshot {
  const moved = new Map(endpoints);
  const [key, svc] = [...endpoints][0] ?? [];
  if (key === undefined || svc === undefined) throw new Error("no Service");
  moved.set(key, {
    ports: svc.ports.map((p) => ({
      port: p.port,
      addresses: [{ ip: "127.0.0.9", port: 10_000 + (k % 50_000) }],
    })),
  });
  return buildSnapshot(routes, moved, options);
}

/** A State of the World client that subscribes to everything and ACKs each response as it comes. */
async function sotwClient(port: number, tally: Tally): Promise<() => void> {
  const client = adsClient(port);
  const s = sotwStream(client);
  let clusters: string[] = [];
  let stop = false;
  const names = (type: string) =>
    type === TYPE_URL.routeConfiguration ? ["edge"] : type === TYPE_URL.clusterLoadAssignment ? clusters : [];
  s.send({ node: { id: "bench-sotw" }, type_url: TYPE_URL.cluster });
  s.send({ type_url: TYPE_URL.listener });
  s.send({ type_url: TYPE_URL.routeConfiguration, resource_names: ["edge"] });
  void (async () => {
    while (!stop) {
      const r = await s.next(TIMEOUT_MS).catch(() => undefined);
      if (r === undefined) break;
      tally.bytes += r.bytes;
      tally.responses++;
      const m = r.message;
      if (m.type_url === TYPE_URL.cluster) {
        const next = m.resources.map((x) => decodeResource(x).name as string);
        const grew = next.join() !== clusters.join();
        clusters = next;
        s.send({ type_url: m.type_url, response_nonce: m.nonce, version_info: m.version_info });
        if (grew) s.send({ type_url: TYPE_URL.clusterLoadAssignment, resource_names: clusters });
      } else s.send({ type_url: m.type_url, response_nonce: m.nonce, resource_names: names(m.type_url) });
    }
  })();
  return () => {
    stop = true;
    s.end();
    client.close();
  };
}

/** A Delta client that subscribes to everything and ACKs each response as it comes. */
async function deltaClient(port: number, tally: Tally): Promise<() => void> {
  const client = adsClient(port);
  const d = deltaStream(client);
  let stop = false;
  const known = new Set<string>();
  d.send({ node: { id: "bench-delta" }, type_url: TYPE_URL.cluster, resource_names_subscribe: ["*"] });
  d.send({ type_url: TYPE_URL.listener, resource_names_subscribe: ["*"] });
  d.send({ type_url: TYPE_URL.routeConfiguration, resource_names_subscribe: ["edge"] });
  void (async () => {
    while (!stop) {
      const r = await d.next(TIMEOUT_MS).catch(() => undefined);
      if (r === undefined) break;
      tally.bytes += r.bytes;
      tally.responses++;
      const m = r.message;
      d.send({ type_url: m.type_url, response_nonce: m.nonce });
      if (m.type_url === TYPE_URL.cluster) {
        const added = m.resources.map((x) => x.name).filter((n) => !known.has(n));
        for (const n of added) known.add(n);
        if (added.length > 0)
          d.send({ type_url: TYPE_URL.clusterLoadAssignment, resource_names_subscribe: added });
      }
    }
  })();
  return () => {
    stop = true;
    d.end();
    client.close();
  };
}

async function main(): Promise<void> {
  const plane = new XdsDataPlane({ ackTimeoutMs: TIMEOUT_MS });
  const port = await plane.listen("127.0.0.1", 0);
  const base = buildSnapshot(routes, endpoints, options);
  const served = new XdsEncoder().encode(base);
  const sizes = [...served.types].map(([url, t]) => [
    url.slice(url.lastIndexOf(".") + 1),
    t.list.length,
    t.list.reduce((n, r) => n + r.any.value.byteLength, 0),
  ]);
  process.stdout.write(
    `# xds bench: ${ROUTES} routes, ${RUNS} runs, node ${process.version}\n` +
      `resources (type, count, bytes): ${sizes.map((s) => s.join(" ")).join("; ")}\n`,
  );

  const rows: Record<string, { bytes: number[]; responses: number[]; pushMs: number[]; buildMs: number[] }> =
    {};
  const changes = { route: variant, endpoints: endpointsVariant } as const;
  let k = 0;
  for (const protocol of ["sotw", "delta"] as const) {
    const tally: Tally = { bytes: 0, responses: 0 };
    await plane.program(base);
    const stop = await (protocol === "sotw" ? sotwClient : deltaClient)(port, tally);
    // The first full sync, until the client holds everything.
    const t0 = performance.now();
    for (let i = 0; i < 100 && plane.clients().length === 0; i++)
      await new Promise((res) => setTimeout(res, 20));
    const first = await plane.program(base);
    if (!first.ok) throw new Error(`initial sync: ${first.message}`);
    process.stdout.write(
      `${protocol}: initial sync ${tally.bytes} bytes in ${tally.responses} responses, ${fmt(performance.now() - t0, 0)} ms\n`,
    );
    for (const [change, make] of Object.entries(changes)) {
      await plane.program(base);
      const row = {
        bytes: [] as number[],
        responses: [] as number[],
        pushMs: [] as number[],
        buildMs: [] as number[],
      };
      rows[`${protocol}, one ${change} change`] = row;
      for (let run = 0; run < RUNS; run++) {
        const b0 = performance.now();
        const next = make(++k);
        row.buildMs.push(performance.now() - b0);
        const before = { ...tally };
        const p0 = performance.now();
        const r = await plane.program(next);
        if (!r.ok) throw new Error(`push ${k}: ${r.message}`);
        row.pushMs.push(performance.now() - p0);
        row.bytes.push(tally.bytes - before.bytes);
        row.responses.push(tally.responses - before.responses);
      }
    }
    stop();
    await new Promise((res) => setTimeout(res, 200));
  }
  for (const [protocol, row] of Object.entries(rows)) {
    const push = summarize(row.pushMs);
    const build = summarize(row.buildMs);
    const ratios = row.pushMs.map((p, i) => p / (row.buildMs[i] as number));
    process.stdout.write(
      `${protocol}: bytes ${summarize(row.bytes).p50} (responses ${summarize(row.responses).p50}); ` +
        `push→ACK ms p50 ${fmt(push.p50, 1)} max ${fmt(push.max, 1)}; ` +
        `floor (snapshot build) ms p50 ${fmt(build.p50, 1)}; ratio p50 ${fmt(summarize(ratios).p50)}\n`,
    );
  }

  // Route applied → ACKed by gRPC's own xDS client, with all routes served.
  await useXdsServer(port, "bench-grpc");
  const host = routes[0]?.spec.hostnames?.[0] ?? "app-0.example.com";
  const grpcClient = xdsClient(host);
  await plane.program(base);
  // Resolution starts when the channel leaves idle; no call is needed.
  grpcClient.getChannel().getConnectivityState(true);
  let held = await plane.program(base);
  for (let i = 0; i < 100 && !held.ok; i++) {
    await new Promise((res) => setTimeout(res, 100));
    held = await plane.program(base);
  }
  if (!held.ok) throw new Error(`gRPC client: ${held.message}`);
  const appliedMs: number[] = [];
  const floorMs: number[] = [];
  const samples = Math.max(RUNS * 4, 20);
  for (let i = 0; i < samples; i++) {
    const next = variant(++k);
    const f0 = performance.now();
    new XdsEncoder().encode(next);
    floorMs.push(performance.now() - f0);
    const t0 = performance.now();
    const r = await plane.program(next);
    if (!r.ok) throw new Error(`gRPC push ${i}: ${r.message}`);
    appliedMs.push(performance.now() - t0);
  }
  const a = summarize(appliedMs);
  const f = summarize(floorMs);
  process.stdout.write(
    `grpc-js-xds: snapshot served → ACKed (route config + what it needs), ${samples} changes: ` +
      `p50 ${fmt(a.p50, 1)} ms p99 ${fmt(a.p99, 1)} ms; floor (encoding the snapshot from scratch) p50 ${fmt(f.p50, 1)} ms; ` +
      `ratio p50 ${fmt(a.p50 / f.p50)}\n`,
  );
  grpcClient.close();
  backend.stop();
  plane.stop();
  setTimeout(() => process.exit(0), 200).unref();
}

await main();
