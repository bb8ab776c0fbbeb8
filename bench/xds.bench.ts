// The xds sink at scale (BENCHMARKS.md, xDS over gRPC), with the ADS server alone in a process
// started with the chart's NODE_OPTIONS (test/xds/scale-server.ts), clients on
// loopback in this process (test/xds/scale-client.ts), every loop bounded:
//  1. bytes and time to push a one-route change and a one-endpoints change at
//     ROUTES routes, Delta against State of the World, for two kinds of client
//     (Envoy's subscriptions; a gRPC process with a channel to every host),
//     one client at a time, each push against its floor (building the
//     snapshot) measured in the same run;
//  2. the server's memory with ROUTES routes and 10 clients connected, after
//     the initial sync and after route changes pushed to all ten;
//  3. snapshot served → ACKed by gRPC's own xDS client (@grpc/grpc-js-xds),
//     p50/p99, against encoding the snapshot from scratch.
//
// `npm run bench:xds [-- ROUTES RUNS]` (defaults 10000 and 7; builds first: the
// server process runs from dist/).

import { loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import { XdsEncoder } from "../src/dataplane/xds/resources.js";
import { XdsDataPlane } from "../src/dataplane/xds/xds-dataplane.js";
import { startEchoBackend } from "../test/xds/echo-backend.js";
import { useXdsServer, xdsClient } from "../test/xds/grpc-xds-client.js";
import { scaleClient, type Protocol, type ScaleClient } from "../test/xds/scale-client.js";
import { scaleHosts, scaleInput } from "../test/xds/scale-input.js";
import { startScaleServer, type ScaleServer } from "../test/xds/scale-process.js";
import { fmt, summarize } from "./stats.js";

const ROUTES = Number(process.argv[2] ?? 10_000);
const RUNS = Number(process.argv[3] ?? 7);
const MIB = 1024 * 1024;
const out = (s: string) => process.stdout.write(`${s}\n`);
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(" ");

async function until(what: string, cond: () => Promise<boolean>, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function ok(server: ScaleServer, change: "base" | "route" | "endpoints", k: number) {
  const r = await server.program(change, k);
  if (!r.ok) throw new Error(`program ${change} ${k}: ${r.reason}`);
  return r;
}

const input = scaleInput(ROUTES, 1);
const hosts = scaleHosts(input);

async function pushes(): Promise<void> {
  const server = await startScaleServer(ROUTES);
  out(`server node options: ${server.nodeOptions.join(" ")}`);
  let k = 0;
  const kinds: [string, readonly string[] | undefined][] = [
    ["Envoy (wildcard, route configuration edge)", undefined],
    [`gRPC, a channel to each of ${hosts.length} hosts (edge/HOST each)`, hosts],
  ];
  out(
    "| client | protocol | change | bytes sent, p50 | push → ACK ms, p50 / max | build ms, p50 | ratio p50 |",
  );
  out("| --- | --- | --- | --- | --- | --- | --- |");
  for (const [kind, names] of kinds)
    for (const protocol of ["sotw", "delta"] as Protocol[]) {
      // No client yet: nothing to ACK (NoDataPlane); this only puts the base snapshot back.
      await server.program("base", 0);
      const c = scaleClient({
        port: server.port,
        protocol,
        id: `bench-${protocol}`,
        ...(names ? { hosts: names } : {}),
      });
      await until("client connected", async () => (await server.clients()) === 1);
      const t0 = performance.now();
      await ok(server, "base", 0);
      out(
        `initial sync, ${kind}, ${protocol}: ${c.bytes()} bytes in ${c.responses()} responses, ${fmt(performance.now() - t0, 0)} ms`,
      );
      for (const change of ["route", "endpoints"] as const) {
        await ok(server, "base", 0);
        const bytes: number[] = [];
        const push: number[] = [];
        const build: number[] = [];
        const ratio: number[] = [];
        for (let run = 0; run < RUNS; run++) {
          const before = c.bytes();
          const r = await ok(server, change, ++k);
          bytes.push(c.bytes() - before);
          push.push(r.ms);
          build.push(r.buildMs);
          ratio.push(r.ms / r.buildMs);
        }
        const p = summarize(push);
        out(
          `| ${kind} | ${protocol} | one ${change} | ${summarize(bytes).p50} | ${fmt(p.p50, 1)} / ${fmt(p.max, 1)} | ` +
            `${fmt(summarize(build).p50, 1)} | ${fmt(summarize(ratio).p50)} |`,
        );
      }
      c.stop();
      await until("client gone", async () => (await server.clients()) === 0);
    }
  server.stop();
}

async function memory(): Promise<void> {
  const server = await startScaleServer(ROUTES);
  const idle = await server.memory();
  const clients: ScaleClient[] = [];
  for (let i = 1; i <= 4; i++)
    for (const protocol of ["sotw", "delta"] as Protocol[])
      clients.push(scaleClient({ port: server.port, protocol, id: `envoy-${protocol}-${i}` }));
  for (const protocol of ["sotw", "delta"] as Protocol[])
    clients.push(scaleClient({ port: server.port, protocol, id: `grpc-${protocol}`, hosts }));
  await until("10 clients connected", async () => (await server.clients()) === clients.length);
  const t0 = performance.now();
  await ok(server, "base", 0);
  const syncMs = performance.now() - t0;
  const synced = await server.memory();
  const push: number[] = [];
  for (let k = 1; k <= RUNS; k++) push.push((await ok(server, k % 2 ? "route" : "endpoints", k)).ms);
  const after = await server.memory();
  const m = (b: number) => fmt(b / MIB, 1);
  out(`| stage | RSS MiB | peak RSS MiB | heap used MiB | heap used after GC MiB | external MiB |`);
  out(`| --- | --- | --- | --- | --- | --- |`);
  for (const [stage, x] of [
    ["no client", idle],
    [`10 clients synced (${fmt(syncMs, 0)} ms)`, synced],
    [`after ${RUNS} changes pushed to all 10 (push→ACK p50 ${fmt(summarize(push).p50, 0)} ms)`, after],
  ] as const)
    out(
      `| ${stage} | ${m(x.rss)} | ${m(x.maxRss)} | ${m(x.heapUsed)} | ${m(x.heapUsedAfterGc)} | ${m(x.external)} |`,
    );
  for (const c of clients) c.stop();
  server.stop();
}

async function grpcClient(): Promise<void> {
  const backend = await startEchoBackend("bench");
  const real = scaleInput(ROUTES, backend.port);
  const plane = new XdsDataPlane({ ackTimeoutMs: 120_000 });
  const port = await plane.listen("127.0.0.1", 0);
  await useXdsServer(port, "bench-grpc");
  const host = hosts[0] as string;
  const client = xdsClient(host);
  await plane.program(real.base());
  // Resolution starts when the channel leaves idle; no call is needed.
  client.getChannel().getConnectivityState(true);
  let held = await plane.program(real.base());
  for (let i = 0; i < 100 && !held.ok; i++) {
    await new Promise((res) => setTimeout(res, 100));
    held = await plane.program(real.base());
  }
  if (!held.ok) throw new Error(`gRPC client: ${held.message}`);
  const applied: number[] = [];
  const floor: number[] = [];
  const samples = Math.max(RUNS * 4, 20);
  // Changes on the client's own host (route 0 is on hosts[0]), so each one is sent to it.
  for (let k = 1; k <= samples; k++) {
    const next = real.routeChange(1_000 + k);
    const f0 = performance.now();
    new XdsEncoder().encode(next);
    floor.push(performance.now() - f0);
    const t0 = performance.now();
    const r = await plane.program(next);
    if (!r.ok) throw new Error(`gRPC push ${k}: ${r.message}`);
    applied.push(performance.now() - t0);
  }
  const a = summarize(applied);
  const f = summarize(floor);
  out(
    `grpc-js-xds (xds:///${host}): served → ACKed, ${samples} changes of its host: p50 ${fmt(a.p50, 1)} ms, ` +
      `p99 ${fmt(a.p99, 1)} ms; floor (encoding the snapshot from scratch) p50 ${fmt(f.p50, 1)} ms; ratio p50 ${fmt(a.p50 / f.p50)}`,
  );
  client.close();
  backend.stop();
  plane.stop();
}

out(
  `# xds bench: ${ROUTES} routes on ${hosts.length} hosts, ${RUNS} runs, node ${process.version}, load ${load()}`,
);
const sizes = [...new XdsEncoder().encode(input.base()).types].map(
  ([url, t]) =>
    `${url.slice(url.lastIndexOf(".") + 1)} ${t.list.length} (${t.list.reduce((n, r) => n + r.any.value.byteLength, 0)} bytes)`,
);
out(`resources: ${sizes.join("; ")}`);
await pushes();
out(`load ${load()}`);
await memory();
out(`load ${load()}`);
await grpcClient();
out(`load ${load()}`);
setTimeout(() => process.exit(0), 200).unref();
