// What one change costs the xds sink at scale: build + encode of the next
// snapshot on top of the last (the serve loop's way: SnapshotPipeline hands
// buildSnapshot the last build, and one XdsEncoder serves them all), against
// the same build and encoding from nothing (every part made again, as before
// translate/keep-unchanged.ts), and against a floor: JSON.stringify of the new
// snapshot's resources, the least any build that hashes its content pays.
//
// Routes shaped as bench/latency.bench.ts makes them (one rule each, HOSTS
// hosts, one Service); a change is CHANGE new routes, spread over the hosts as
// the latency bench's churn spreads them (1: its singles; 50: a second of its
// churn). Each figure is the median of RUNS changes, in CPU milliseconds of
// this process (steadier than wall time on a shared machine), after WARMUP.
//
// Run: npm run bench:snapshot-change   (ROUTES 10000, HOSTS 10, CHANGES 1,50, RUNS 30, WARMUP 5)

import os from "node:os";
import type { EdgeRouteV2 } from "../src/api/types.js";
import { XdsEncoder } from "../src/dataplane/xds/resources.js";
import type { ServiceEndpoints } from "../src/routing/service-endpoints.js";
import { buildSnapshot, type Snapshot, type SnapshotOptions } from "../src/translate/snapshot.js";
import { median } from "./snapshot-build.js";

const ROUTES = Number(process.env.ROUTES ?? 10_000);
const HOSTS = Number(process.env.HOSTS ?? 10);
const CHANGES = (process.env.CHANGES ?? "1,50").split(",").map(Number);
const RUNS = Number(process.env.RUNS ?? 30);
const WARMUP = Number(process.env.WARMUP ?? 5);
const ADS: SnapshotOptions = { configSource: { kind: "ads" } };
const BASE = Date.parse("2026-01-01T00:00:00Z");

function route(i: number): EdgeRouteV2 {
  const name = `lat-${i}`;
  return {
    apiVersion: "net.10xdev.io/v2",
    kind: "EdgeRoute",
    // Created about 300 a second, as the latency bench's 16 creates in flight make them.
    metadata: {
      namespace: "bench",
      name,
      uid: `uid-${i}`,
      generation: 1,
      creationTimestamp: new Date(BASE + Math.floor(i / 300) * 1000).toISOString().replace(".000Z", "Z"),
    },
    spec: {
      hostnames: [`h${i % HOSTS}.example.com`],
      rules: [
        {
          matches: [{ path: { type: "PathPrefix", value: `/${name}` } }],
          backends: [{ name: "checkout", port: 8080 }],
        },
      ],
    },
  };
}

const endpoints = new Map<string, ServiceEndpoints>([
  ["bench/checkout", { ports: [{ port: 8080, addresses: [{ ip: "10.0.0.1", port: 8080 }] }] }],
]);

const cpuMs = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

interface Figures {
  readonly kept: number[];
  readonly fresh: number[];
  readonly floor: number[];
}

/** RUNS changes of `change` routes each; every way of building sees the same routes. */
function measure(change: number): Figures {
  const routes = Array.from({ length: ROUTES }, (_, i) => route(i));
  const keptEncoder = new XdsEncoder();
  let last: Snapshot = buildSnapshot(routes, endpoints, ADS);
  keptEncoder.encode(last);
  const figures: Figures = { kept: [], fresh: [], floor: [] };
  let next = ROUTES;
  for (let run = 0; run < WARMUP + RUNS; run++) {
    for (let k = 0; k < change; k++) routes.push(route(next++));
    let t = cpuMs();
    const kept = buildSnapshot(routes, endpoints, ADS, undefined, last);
    keptEncoder.encode(kept);
    const keptMs = cpuMs() - t;
    t = cpuMs();
    // From nothing: no last build, and an encoder that has seen nothing.
    new XdsEncoder().encode(buildSnapshot(routes, endpoints, ADS));
    const freshMs = cpuMs() - t;
    t = cpuMs();
    JSON.stringify(kept.resources);
    const floorMs = cpuMs() - t;
    last = kept;
    if (run < WARMUP) continue;
    figures.kept.push(keptMs);
    figures.fresh.push(freshMs);
    figures.floor.push(floorMs);
  }
  return figures;
}

const fmt = (x: number) => x.toFixed(1);
console.log(
  `# bench:snapshot-change on ${os.cpus().length} cores, node ${process.version}, load ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")}`,
);
console.log(`# ${ROUTES} routes in ${HOSTS} hosts; CPU ms per change, median of ${RUNS} (after ${WARMUP})`);
for (const change of CHANGES) {
  const f = measure(change);
  const ratio = (a: number[]) => median(a.map((x, i) => x / (f.floor[i] as number)));
  console.log(
    `${String(change).padStart(3)} new routes: on the last build ${fmt(median(f.kept))} ms (${ratio(f.kept).toFixed(2)}x floor), ` +
      `from nothing ${fmt(median(f.fresh))} ms (${ratio(f.fresh).toFixed(2)}x), ` +
      `floor (JSON.stringify of the resources) ${fmt(median(f.floor))} ms; load ${os.loadavg()[0]?.toFixed(2)}`,
  );
}
