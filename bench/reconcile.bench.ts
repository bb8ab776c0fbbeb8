// The reconcile at scale, on a real control plane with the server and the
// watcher as processes (memory data plane):
//  1. N routes exist, the watcher starts: wall time until all are
//     Programmed=True, against a floor measured in the same run (N status merge
//     patches straight to the same apiserver, same concurrency, no logic);
//     data-plane pushes during that burst.
//  2. A resync of N unchanged routes (a watcher restart: the snapshot key judges every route):
//     pushes and status writes before and after.
//  3. Resident memory of the server and the watcher with BIG routes: the
//     server's RSS and V8 heap sampled through each phase (creates, converge,
//     after, idle) with the peak of each, and both processes' RSS after.
// Snapshot build against serialization is bench/snapshot-build.ts.
//
//   RUNS=3 N=1000 BIG=10000 npm run bench:reconcile
//   RUNS=0 BIG=10000 SERVE_NODE_OPTIONS="--max-old-space-size=384" npm run bench:reconcile

import { readFileSync } from "node:fs";
import os from "node:os";
import { startControlPlane, type ControlPlane } from "../tools/testenv/control-plane.js";
import { startOperatorStack, type OperatorStack, type StackOptions } from "../test/harness/operator-stack.js";
import { httpsJson } from "../tools/testenv/https-json.js";
import { sleep, waitFor } from "../tools/testenv/process.js";
import type { KubeClient } from "../src/kube/client.js";
import { fmt, summarize } from "./stats.js";
import { eachConcurrently } from "../src/kube/each-concurrently.js";

const RUNS = Number(process.env.RUNS ?? 3);
const N = Number(process.env.N ?? 1000);
const BIG = Number(process.env.BIG ?? 10000);
const CONCURRENCY = 32;
const NS = "bench";
const ROUTES = `/apis/net.10xdev.io/v2/namespaces/${NS}/edgeroutes`;

function route(i: number) {
  return {
    apiVersion: "net.10xdev.io/v2",
    kind: "EdgeRoute",
    metadata: { name: `r-${i}`, namespace: NS },
    spec: {
      hostnames: [`h${i % 50}.example.com`],
      rules: [
        {
          matches: [{ path: { type: "PathPrefix", value: `/r/${i}` } }],
          backends: [{ name: "checkout", port: 8080 }],
        },
      ],
    },
  };
}

async function createRoutes(kube: KubeClient, n: number): Promise<void> {
  await kube.json("POST", "/api/v1/namespaces", { body: { metadata: { name: NS } } }).catch(() => undefined);
  await kube
    .json("POST", `/api/v1/namespaces/${NS}/services`, {
      body: { metadata: { name: "checkout" }, spec: { ports: [{ name: "http", port: 8080 }] } },
    })
    .catch(() => undefined);
  await eachConcurrently(
    Array.from({ length: n }, (_, i) => i),
    16,
    async (i) => {
      await kube.json("POST", ROUTES, { body: route(i), timeoutMs: 60_000 });
    },
  );
}

async function metric(stack: OperatorStack, name: string): Promise<number> {
  const r = await httpsJson(`${stack.serve.url}/metrics`, stack.serve.caPem, "GET");
  let sum = 0;
  for (const line of String(r.body).split("\n"))
    if (line.startsWith(name)) sum += Number(line.split(" ").pop());
  return sum;
}

interface Listed {
  items: {
    metadata: { name: string; resourceVersion: string };
    status?: { conditions?: { type: string; status: string }[] };
  }[];
}

async function countProgrammed(kube: KubeClient): Promise<number> {
  const list = await kube.json<Listed>("GET", ROUTES, { timeoutMs: 120_000 });
  return list.items.filter((r) =>
    r.status?.conditions?.some((c) => c.type === "Programmed" && c.status === "True"),
  ).length;
}

function rssMiB(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) / 1024 : NaN;
}

/** The real process under a supervisor: its only child that is node. */
function childPid(supervisorPid: number | undefined): number | undefined {
  if (supervisorPid === undefined) return undefined;
  const kids = readFileSync(`/proc/${supervisorPid}/task/${supervisorPid}/children`, "utf8")
    .trim()
    .split(/\s+/)
    .map(Number);
  return kids.find((k) => readFileSync(`/proc/${k}/cmdline`, "utf8").includes("main.js"));
}

async function floorStatusPatches(kube: KubeClient, n: number): Promise<number> {
  const now = new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
  const start = process.hrtime.bigint();
  await eachConcurrently(
    Array.from({ length: n }, (_, i) => i),
    CONCURRENCY,
    async (i) => {
      await kube.json("PATCH", `${ROUTES}/r-${i}/status`, {
        contentType: "application/merge-patch+json",
        body: {
          status: {
            observedGeneration: 1,
            conditions: [
              {
                type: "Accepted",
                status: "True",
                reason: "Valid",
                message: "floor",
                observedGeneration: 1,
                lastTransitionTime: now,
              },
              {
                type: "Programmed",
                status: "True",
                reason: "Synced",
                message: "floor",
                observedGeneration: 1,
                lastTransitionTime: now,
              },
            ],
          },
        },
        timeoutMs: 60_000,
      });
    },
  );
  return Number(process.hrtime.bigint() - start) / 1e9;
}

/** Resolves when the server has written `n` statuses since it started. */
function statusWrites(stack: OperatorStack, n: number, timeoutMs: number, everyMs: number): Promise<true> {
  return waitFor(
    `status writes to reach ${n}`,
    async () => ((await metric(stack, "edge_operator_status_writes_total")) >= n ? true : undefined),
    timeoutMs,
    everyMs,
  );
}

/** A fresh control plane and operator for one run, stopped whatever happens. */
async function withOperator<T>(
  opts: StackOptions,
  fn: (cp: ControlPlane, stack: OperatorStack, kube: KubeClient) => Promise<T>,
): Promise<T> {
  const cp = await startControlPlane();
  const stack = await startOperatorStack(cp, opts);
  try {
    return await fn(cp, stack, cp.kube());
  } finally {
    await stack.stop();
    await cp.stop();
  }
}

interface RunFigures {
  converge: number;
  floor: number;
  pushes: number;
  resyncPushes: number;
  resyncWrites: number;
}

async function burstRun(): Promise<RunFigures> {
  return withOperator({ watcher: false, watchArgs: ["--resync", "0"] }, async (cp, stack, kube) => {
    await createRoutes(kube, N);
    const pushes0 = (await stack.dataPlane()).pushes;
    const start = process.hrtime.bigint();
    const w = stack.startWatcher(["--no-leader-elect", "--identity", "bench"]);
    await statusWrites(stack, N, 600_000, 50);
    const converge = Number(process.hrtime.bigint() - start) / 1e9;
    const programmed = await countProgrammed(kube);
    if (programmed !== N) throw new Error(`only ${programmed} of ${N} routes are Programmed`);
    const pushes = (await stack.dataPlane()).pushes - pushes0;

    // Resync: a fresh watcher enqueues the snapshot key, which judges every route.
    await sleep(2000);
    await w.stop();
    const writes1 = await metric(stack, "edge_operator_status_writes_total");
    const pushes1 = (await stack.dataPlane()).pushes;
    const calls1 = await metric(stack, 'edge_operator_reconcile_duration_seconds_count{kind="snapshot"');
    const w2 = stack.startWatcher(["--no-leader-elect", "--identity", "bench-2"]);
    // A fresh watcher looks at every route through the snapshot key (route keys are for live changes).
    await waitFor(
      "the restarted watcher's snapshot reconcile",
      async () =>
        (await metric(stack, 'edge_operator_reconcile_duration_seconds_count{kind="snapshot"')) - calls1 >= 1
          ? true
          : undefined,
      600_000,
      100,
    );
    await sleep(2000);
    const resyncWrites = (await metric(stack, "edge_operator_status_writes_total")) - writes1;
    const resyncPushes = (await stack.dataPlane()).pushes - pushes1;
    await w2.stop();

    const floor = await floorStatusPatches(kube, N);
    return { converge, floor, pushes, resyncPushes, resyncWrites };
  });
}

/** Routes created while the watcher runs: pushes during the burst, and time past the last create. */
async function liveBurstRun(): Promise<{
  create: number;
  converge: number;
  pushes: number;
  snapshots: number;
}> {
  return withOperator({ watchArgs: ["--resync", "0", "--no-leader-elect"] }, async (cp, stack, kube) => {
    const snaps0 = await metric(stack, 'edge_operator_reconcile_duration_seconds_count{kind="snapshot"');
    const start = process.hrtime.bigint();
    await createRoutes(kube, N);
    const create = Number(process.hrtime.bigint() - start) / 1e9;
    await statusWrites(stack, N, 600_000, 50);
    const converge = Number(process.hrtime.bigint() - start) / 1e9;
    const programmed = await countProgrammed(kube);
    if (programmed !== N) throw new Error(`only ${programmed} of ${N} routes are Programmed`);
    const snapshots =
      (await metric(stack, 'edge_operator_reconcile_duration_seconds_count{kind="snapshot"')) - snaps0;
    return { create, converge, pushes: (await stack.dataPlane()).pushes, snapshots };
  });
}

interface MemorySample {
  server: number;
  watcher: number;
  heap: number;
}

/** The server's V8 figures from its /metrics, in MiB. */
async function serverHeap(stack: OperatorStack): Promise<{ used: number; total: number; external: number }> {
  const r = await httpsJson(`${stack.serve.url}/metrics`, stack.serve.caPem, "GET");
  const text = String(r.body);
  const get = (name: string): number => {
    const line = text.split("\n").find((l) => l.startsWith(`${name} `));
    return line ? Number(line.split(" ").pop()) / 1024 / 1024 : NaN;
  };
  return {
    used: get("nodejs_heap_size_used_bytes"),
    total: get("nodejs_heap_size_total_bytes"),
    external: get("nodejs_external_memory_bytes"),
  };
}

interface PhasePeaks {
  rss: number;
  rssP50: number;
  heapTotal: number;
  heapUsed: number;
  external: number;
}

/**
 * Samples the server's RSS every `everyMs` and its V8 heap every other sample,
 * and keeps the peaks per phase: "during" is what a memory limit must hold,
 * not only the quiet figure after.
 */
function memorySampler(stack: OperatorStack, everyMs: number) {
  let phase = "";
  const rss = new Map<string, number[]>();
  const heap = new Map<string, { used: number; total: number; external: number }[]>();
  let stopped = false;
  let tick = 0;
  const loop = (async () => {
    while (!stopped) {
      const p = phase;
      const pid = childPid(stack.serve.process.child.pid);
      const r = rssMiB(pid);
      if (Number.isFinite(r)) rss.set(p, [...(rss.get(p) ?? []), r]);
      if (tick++ % 2 === 0) {
        const h = await serverHeap(stack).catch(() => undefined);
        if (h) heap.set(p, [...(heap.get(p) ?? []), h]);
      }
      await sleep(everyMs);
    }
  })();
  return {
    phase(name: string) {
      phase = name;
      process.stderr.write(`phase ${name} at ${new Date().toISOString()}\n`);
    },
    async stop(): Promise<Map<string, PhasePeaks>> {
      stopped = true;
      await loop;
      const out = new Map<string, PhasePeaks>();
      for (const [p, xs] of rss) {
        const hs = heap.get(p) ?? [];
        out.set(p, {
          rss: Math.max(...xs),
          rssP50: summarize(xs).p50,
          heapTotal: Math.max(...hs.map((h) => h.total)),
          heapUsed: Math.max(...hs.map((h) => h.used)),
          external: Math.max(...hs.map((h) => h.external)),
        });
      }
      return out;
    },
  };
}

async function memoryRun(): Promise<{
  create: number;
  converge: number;
  busy: MemorySample;
  idle: MemorySample;
  peaks: Map<string, PhasePeaks>;
}> {
  // SERVE_NODE_OPTIONS: V8 flags for the server alone (heap sizing); SERVE_ENV: more
  // of its environment, as space-separated NAME=VALUE pairs (MALLOC_ARENA_MAX=2, say).
  const serveEnv: Record<string, string> = {};
  if (process.env.SERVE_NODE_OPTIONS) serveEnv.NODE_OPTIONS = process.env.SERVE_NODE_OPTIONS;
  for (const pair of (process.env.SERVE_ENV ?? "").split(/\s+/).filter(Boolean)) {
    const eq = pair.indexOf("=");
    if (eq > 0) serveEnv[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return withOperator({ watcher: false, watchArgs: ["--resync", "0"], serveEnv }, async (cp, stack, kube) => {
    const sampler = memorySampler(stack, 500);
    sampler.phase("create");
    const t0 = process.hrtime.bigint();
    await createRoutes(kube, BIG);
    const create = Number(process.hrtime.bigint() - t0) / 1e9;
    sampler.phase("converge");
    const start = process.hrtime.bigint();
    const w = stack.startWatcher(["--no-leader-elect", "--identity", "bench-big"]);
    await statusWrites(stack, BIG, 1_800_000, 500);
    const converge = Number(process.hrtime.bigint() - start) / 1e9;
    sampler.phase("after");
    // Right after the burst V8 still holds the garbage of it; its memory reducer
    // gives most of it back once the process idles. Both are reported.
    const sample = async () => ({
      server: rssMiB(childPid(stack.serve.process.child.pid)),
      watcher: rssMiB(childPid(w.child.pid)),
      heap: (await metric(stack, "nodejs_heap_size_used_bytes")) / 1024 / 1024,
    });
    await sleep(3000);
    const busy = await sample();
    sampler.phase("idle");
    await sleep(60_000);
    const idle = await sample();
    const peaks = await sampler.stop();
    return { create, converge, busy, idle, peaks };
  });
}

const runs: RunFigures[] = [];
for (let i = 0; i < RUNS; i++) {
  const r = await burstRun();
  runs.push(r);
  process.stderr.write(`run ${i + 1}/${RUNS}: ${JSON.stringify(r)} ratio ${fmt(r.converge / r.floor)}\n`);
}
const ratio = summarize(runs.map((r) => r.converge / r.floor));
const converge = summarize(runs.map((r) => r.converge));
const floor = summarize(runs.map((r) => r.floor));
console.log(`machine: ${os.cpus().length} cores, load ${fmt(os.loadavg()[0] ?? NaN)}`);
console.log(
  `${N} routes → all Programmed: p50 ${fmt(converge.p50)} s (min ${fmt(converge.min)}, max ${fmt(converge.max)}); floor ${N} status patches p50 ${fmt(floor.p50)} s; ratio p50 ${fmt(ratio.p50)} (min ${fmt(ratio.min)}, max ${fmt(ratio.max)})`,
);
console.log(`pushes during the burst: ${runs.map((r) => r.pushes).join(", ")}`);
console.log(
  `resync of ${N} unchanged routes: pushes ${runs.map((r) => r.resyncPushes).join(", ")}; status writes ${runs.map((r) => r.resyncWrites).join(", ")}`,
);
const live: Awaited<ReturnType<typeof liveBurstRun>>[] = [];
for (let i = 0; i < RUNS; i++) {
  const r = await liveBurstRun();
  live.push(r);
  process.stderr.write(`live run ${i + 1}/${RUNS}: ${JSON.stringify(r)}\n`);
}
console.log(
  `${N} routes created while the watcher runs: creates took ${live.map((r) => fmt(r.create, 1)).join(", ")} s; all Programmed at ${live.map((r) => fmt(r.converge, 1)).join(", ")} s; snapshot reconciles ${live.map((r) => r.snapshots).join(", ")}; data-plane pushes ${live.map((r) => r.pushes).join(", ")}`,
);
if (BIG > 0) {
  const m = await memoryRun();
  const show = (x: MemorySample) =>
    `RSS server ${fmt(x.server, 1)} MiB (JS heap in use ${fmt(x.heap, 1)} MiB), watcher ${fmt(x.watcher, 1)} MiB`;
  console.log(`${BIG} routes: created in ${fmt(m.create)} s, converged in ${fmt(m.converge)} s`);
  for (const [phase, p] of m.peaks) {
    console.log(
      `  ${phase}: server RSS peak ${fmt(p.rss, 1)} MiB (p50 ${fmt(p.rssP50, 1)}); V8 heap total peak ${fmt(p.heapTotal, 1)}, in use peak ${fmt(p.heapUsed, 1)}, external peak ${fmt(p.external, 1)} MiB`,
    );
  }
  console.log(`  3 s after: ${show(m.busy)}`);
  console.log(`  60 s idle: ${show(m.idle)}`);
}
