// Snapshot build time for many routes against its floor: JSON-serializing the
// snapshot it produces (which hashing needs anyway). Exported for
// bench/reconcile.bench.ts; `npx tsx bench/snapshot-build.ts [routes] [runs]` runs it alone;
// with `--filters`, the same routes again with filters, a timeout and a retry
// in every rule (withFilters), measured in the same run against the plain ones.

import { performance } from "node:perf_hooks";
import type { EdgeRouteV2, RouteRule } from "../src/api/types.js";
import { buildSnapshot } from "../src/translate/snapshot.js";
import { syntheticInput } from "../test/fixtures/synthetic-routes.js";

export interface SnapshotBuildFigures {
  readonly routes: number;
  readonly runs: number;
  /** Wall milliseconds, per run. */
  readonly buildMs: readonly number[];
  readonly serializeMs: readonly number[];
  /** CPU milliseconds (user + system, this process), per run: steadier on a shared machine. */
  readonly buildCpuMs: readonly number[];
  readonly serializeCpuMs: readonly number[];
  /** Median over runs of build / serialize in the same run, wall and CPU. */
  readonly ratio: number;
  readonly cpuRatio: number;
  readonly jsonBytes: number;
  readonly virtualHostRoutes: number;
  readonly clusters: number;
}

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

export function percentile(xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] as number;
}

/** Every rule with header edits on both sides, a prefix rewrite, a mirror to its first backend, timeouts and a retry. */
export function withFilters(routes: readonly EdgeRouteV2[]): EdgeRouteV2[] {
  return routes.map((r, i) => ({
    ...r,
    spec: {
      ...r.spec,
      rules: r.spec.rules.map((rule): RouteRule => ({
        ...rule,
        filters: [
          {
            type: "RequestHeaderModifier",
            requestHeaderModifier: { set: [{ name: "x-route", value: `r${i}` }] },
          },
          { type: "ResponseHeaderModifier", responseHeaderModifier: { remove: ["server"] } },
          {
            type: "URLRewrite",
            urlRewrite: { path: { type: "ReplacePrefixMatch", replacePrefixMatch: "/v2" } },
          },
          ...(rule.backends[0] === undefined
            ? []
            : [
                { type: "RequestMirror" as const, requestMirror: { backend: rule.backends[0], percent: 10 } },
              ]),
        ],
        // ReplacePrefixMatch takes PathPrefix matches only.
        matches: rule.matches.map((m) => ({ ...m, path: { type: "PathPrefix", value: m.path.value } })),
        timeouts: { request: "15s", backendRequest: "5s" },
        retry: { attempts: 2, conditions: ["Unavailable", "5xx"], backoff: "100ms" },
      })),
    },
  }));
}

export function measureSnapshotBuild(
  routeCount = 10_000,
  runs = 15,
  warmup = 3,
  filters = false,
): SnapshotBuildFigures {
  const input0 = syntheticInput(routeCount);
  const endpoints = input0.endpoints;
  const routes = filters ? withFilters(input0.routes) : input0.routes;
  const buildMs: number[] = [];
  const serializeMs: number[] = [];
  const buildCpuMs: number[] = [];
  const serializeCpuMs: number[] = [];
  const cpu = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  };
  let jsonBytes = 0;
  let virtualHostRoutes = 0;
  let clusters = 0;
  for (let i = 0; i < warmup + runs; i++) {
    // Input order changes each run, as it does between two lists from the apiserver.
    const input = i % 2 === 0 ? routes : [...routes].reverse();
    const [c0, t0] = [cpu(), performance.now()];
    const snapshot = buildSnapshot(input, endpoints);
    const [c1, t1] = [cpu(), performance.now()];
    const json = JSON.stringify(snapshot);
    const [c2, t2] = [cpu(), performance.now()];
    if (i < warmup) continue;
    buildMs.push(t1 - t0);
    serializeMs.push(t2 - t1);
    buildCpuMs.push(c1 - c0);
    serializeCpuMs.push(c2 - c1);
    jsonBytes = json.length;
    virtualHostRoutes = (snapshot.resources.routeConfigurations[0]?.virtual_hosts ?? []).reduce(
      (n, vh) => n + vh.routes.length,
      0,
    );
    clusters = snapshot.resources.clusters.length;
  }
  const ratios = (a: number[], b: number[]) => median(a.map((x, i) => x / (b[i] as number)));
  return {
    routes: routeCount,
    runs,
    buildMs,
    serializeMs,
    buildCpuMs,
    serializeCpuMs,
    ratio: ratios(buildMs, serializeMs),
    cpuRatio: ratios(buildCpuMs, serializeCpuMs),
    jsonBytes,
    virtualHostRoutes,
    clusters,
  };
}

export function formatFigures(f: SnapshotBuildFigures): string {
  const ms = (x: number) => `${x.toFixed(1)} ms`;
  return [
    `${f.routes} routes (${f.virtualHostRoutes} Envoy routes, ${f.clusters} clusters, ${(f.jsonBytes / 1e6).toFixed(1)} MB of JSON), ${f.runs} runs`,
    `build:     p50 ${ms(median(f.buildMs))}  p90 ${ms(percentile(f.buildMs, 90))}  min ${ms(Math.min(...f.buildMs))}`,
    `serialize: p50 ${ms(median(f.serializeMs))}  p90 ${ms(percentile(f.serializeMs, 90))}  min ${ms(Math.min(...f.serializeMs))}`,
    `build CPU: p50 ${ms(median(f.buildCpuMs))}  serialize CPU: p50 ${ms(median(f.serializeCpuMs))}`,
    `ratio build/serialize, median of per-run ratios: wall ${f.ratio.toFixed(2)}x, CPU ${f.cpuRatio.toFixed(2)}x (goal: 3x or less)`,
  ].join("\n");
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const filters = args.includes("--filters");
  const [routes, runs] = args.filter((a) => !a.startsWith("--")).map(Number);
  const plain = measureSnapshotBuild(routes || 10_000, runs || 15);
  console.log(formatFigures(plain));
  if (filters) {
    const f = measureSnapshotBuild(routes || 10_000, runs || 15, 3, true);
    console.log(`\nwith filters, a timeout and a retry in every rule:\n${formatFigures(f)}`);
    console.log(
      `against the plain routes, same run: build p50 ${(median(f.buildMs) / median(plain.buildMs)).toFixed(2)}x, ` +
        `CPU ${(median(f.buildCpuMs) / median(plain.buildCpuMs)).toFixed(2)}x, JSON ${(f.jsonBytes / plain.jsonBytes).toFixed(2)}x`,
    );
  }
}
