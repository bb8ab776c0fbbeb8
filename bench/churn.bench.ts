// Cost at scale (BENCHMARKS.md, Cost at scale): what one route change costs the apiserver while
// the cluster holds 1,000, 10,000 or 50,000 routes, and what a watcher
// restart costs at that size. On the test control plane, with the operator
// out of cluster (serve + watch as processes, as the integration tests start
// them) reaching the apiserver through a counting TCP proxy:
//  1. N routes are created through the webhooks (many in flight), the watcher
//     starts, and every route reaches Programmed=True;
//  2. churn: 10 spec changes a second for a bounded time; per change, the
//     apiserver's requests (its /metrics `apiserver_request_total`, diffed, by
//     verb and resource, less the bench's own PATCHes), the bytes the operator
//     read (the proxy), the apiserver's non-watch response bytes
//     (`apiserver_response_sizes_sum`), and the server's ConversionReviews and
//     the objects in them; and each change's applied → Programmed=True against
//     the floor applied → the change's watch event seen (a watch of the bench's own);
//  3. with --restart: the watcher is stopped and started again with nothing
//     changed: time until it is idle again, the writes it made (none are due),
//     the apiserver requests and bytes it cost, and the memory of each process.
//
//   npm run bench:churn -- --routes 1000,10000 --runs 2 --seconds 60 [--storage v2 (the chart's default) | v1]
//     [--no-chart-memory: serve on Node's default heap sizing, not the chart's NODE_OPTIONS]
//   npm run bench:restart                       (50,000 routes, churn then restart)

import { readFileSync, readdirSync, writeFileSync, mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { startControlPlane, type ControlPlane } from "../tools/testenv/control-plane.js";
import { startFaultProxy, type FaultProxy } from "../test/harness/fault-proxy.js";
import { startOperatorStack, type OperatorStack } from "../test/harness/operator-stack.js";
import { httpsJson } from "../tools/testenv/https-json.js";
import { freePort, sleep, waitFor, type Supervised } from "../tools/testenv/process.js";
import type { KubeClient } from "../src/kube/client.js";
import { eachConcurrently } from "../src/kube/each-concurrently.js";
import { utf8Lines } from "../src/kube/watch-lines.js";
import { fmt, summarize } from "./stats.js";
import { chartMemoryEnv, chartNodeOptions } from "../test/harness/chart-memory.js";

const { values: args } = parseArgs({
  allowNegative: true,
  options: {
    routes: { type: "string", default: "1000,10000" },
    runs: { type: "string", default: "1" },
    seconds: { type: "string", default: "60" },
    rate: { type: "string", default: "10" },
    "in-flight": { type: "string", default: "32" },
    restart: { type: "boolean", default: false },
    // The chart's default (crd.storageVersion in charts/edge-operator/values.yaml); v1 for installs that stored v1.
    storage: { type: "string", default: "v2" },
    // serve with the chart's NODE_OPTIONS and MALLOC_ARENA_MAX (its heap limit), as in a pod; off: Node's defaults.
    "chart-memory": { type: "boolean", default: true },
  },
});
const SIZES = (args.routes ?? "").split(",").map(Number);
const RUNS = Number(args.runs);
const SECONDS = Number(args.seconds);
const RATE = Number(args.rate);
const IN_FLIGHT = Number(args["in-flight"]);
const STORAGE = args.storage === "v1" ? "v1" : "v2";
if (args.storage !== STORAGE) throw new Error("--storage: must be v1 or v2");
for (const [name, v] of [
  ["--routes", Math.min(...SIZES)],
  ["--runs", RUNS],
  ["--rate", RATE],
  ["--in-flight", IN_FLIGHT],
] as const)
  if (!Number.isInteger(v) || v < 1) throw new Error(`${name}: must be a whole number ≥ 1`);
if (!(SECONDS >= 0 && SECONDS <= 600)) throw new Error("--seconds: must be 0 to 600");

const NS = "churn";
const SERVICES = 10;
const ROUTES_V2 = `/apis/net.10xdev.io/v2/namespaces/${NS}/edgeroutes`;

function spec(i: number, rev: number) {
  return {
    hostnames: [`h${i % 200}.example.com`],
    rules: [
      {
        matches: [{ path: { type: "PathPrefix", value: `/r/${i}/v${rev}` } }],
        backends: [{ name: `svc-${i % SERVICES}`, port: 8080 }],
      },
    ],
  };
}

function log(msg: string): void {
  process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${msg}\n`);
}

async function createRoutes(kube: KubeClient, n: number): Promise<number> {
  await kube.json("POST", "/api/v1/namespaces", { body: { metadata: { name: NS } } });
  for (let s = 0; s < SERVICES; s++)
    await kube.json("POST", `/api/v1/namespaces/${NS}/services`, {
      body: { metadata: { name: `svc-${s}` }, spec: { ports: [{ name: "http", port: 8080 }] } },
    });
  const started = Date.now();
  let done = 0;
  await eachConcurrently(
    Array.from({ length: n }, (_, i) => i),
    IN_FLIGHT,
    async (i) => {
      await kube.json("POST", ROUTES_V2, {
        body: {
          apiVersion: "net.10xdev.io/v2",
          kind: "EdgeRoute",
          metadata: { name: `r-${i}` },
          spec: spec(i, 0),
        },
        timeoutMs: 120_000,
      });
      if (++done % 5000 === 0) log(`created ${done}/${n}`);
    },
  );
  return (Date.now() - started) / 1000;
}

// ---- the bench's own watch: when each change was seen, and when it was Programmed

interface Condition {
  type: string;
  status: string;
  observedGeneration?: number;
}
interface WatchedRoute {
  metadata?: { name?: string; generation?: number; resourceVersion?: string };
  status?: { conditions?: Condition[] };
}

class RouteWatch {
  /** Per route: the newest generation seen, and the newest generation seen Programmed=True. */
  readonly seen = new Map<string, number>();
  readonly programmed = new Map<string, number>();
  private listeners: ((name: string) => void)[] = [];
  private readonly stopping = new AbortController();
  private running: Promise<void> | undefined;

  constructor(
    private readonly kube: KubeClient,
    private readonly listPath: string,
  ) {}

  async start(): Promise<void> {
    // A one-item list only for its resourceVersion: the watch goes on from there.
    const head = await this.kube.json<{ metadata: { resourceVersion: string } }>("GET", this.listPath, {
      query: { limit: 1 },
    });
    const res = await this.kube.stream(this.listPath, {
      query: { watch: true, resourceVersion: head.metadata.resourceVersion, timeoutSeconds: 7200 },
      signal: this.stopping.signal,
      timeoutMs: 7_300_000,
    });
    this.running = (async () => {
      try {
        for await (const line of utf8Lines(res)) {
          const ev = JSON.parse(line) as { type: string; object: WatchedRoute };
          if (ev.type !== "ADDED" && ev.type !== "MODIFIED") continue;
          this.observe(ev.object);
        }
      } catch (e) {
        if (!this.stopping.signal.aborted) log(`the bench's watch failed: ${(e as Error).message}`);
      }
    })();
  }

  private observe(o: WatchedRoute): void {
    const name = o.metadata?.name;
    const gen = o.metadata?.generation ?? 0;
    if (!name) return;
    if (gen > (this.seen.get(name) ?? 0)) this.seen.set(name, gen);
    const p = o.status?.conditions?.find((c) => c.type === "Programmed");
    if (p?.status === "True" && (p.observedGeneration ?? 0) > (this.programmed.get(name) ?? 0))
      this.programmed.set(name, p.observedGeneration ?? 0);
    for (const l of this.listeners) l(name);
  }

  /** Programmed=True at its current generation, counted over `names`. */
  programmedCount(n: number): number {
    let c = 0;
    for (let i = 0; i < n; i++) {
      const name = `r-${i}`;
      const g = this.seen.get(name);
      if (g !== undefined && this.programmed.get(name) === g) c++;
    }
    return c;
  }

  onEvent(l: (name: string) => void): () => void {
    this.listeners.push(l);
    return () => (this.listeners = this.listeners.filter((x) => x !== l));
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    await this.running;
  }
}

// ---- counters: the apiserver's, the proxy's, the server's

type Counts = Map<string, number>;

interface Sample {
  requests: Counts;
  responseBytes: number;
  proxyBytes: number;
  reviews: number;
  conversionObjects: number;
  statusWrites: number;
  pushes: number;
}

function labels(line: string): Record<string, string> {
  const out: Record<string, string> = {};
  const inner = /\{(.*)\}/.exec(line)?.[1] ?? "";
  for (const m of inner.matchAll(/(\w+)="([^"]*)"/g)) out[m[1] ?? ""] = m[2] ?? "";
  return out;
}

const INTERESTING = new Set(["edgeroutes", "services", "endpointslices", "leases", "events"]);

async function apiserverMetrics(cp: ControlPlane): Promise<{ requests: Counts; responseBytes: number }> {
  const r = await cp.kubectl(["get", "--raw", "/metrics"]);
  if (r.code !== 0) throw new Error(`kubectl get --raw /metrics: ${r.stderr}`);
  const requests: Counts = new Map();
  let responseBytes = 0;
  for (const line of r.stdout.split("\n")) {
    if (line.startsWith("apiserver_request_total{")) {
      const l = labels(line);
      if (!INTERESTING.has(l.resource ?? "")) continue;
      const key = `${l.verb} ${l.resource}${l.subresource ? `/${l.subresource}` : ""}`;
      requests.set(key, (requests.get(key) ?? 0) + Number(line.split(" ").pop()));
    } else if (line.startsWith("apiserver_response_sizes_sum{")) {
      if (INTERESTING.has(labels(line).resource ?? "")) responseBytes += Number(line.split(" ").pop());
    }
  }
  return { requests, responseBytes };
}

function metricSum(text: string, prefix: string): number {
  let sum = 0;
  for (const line of text.split("\n")) if (line.startsWith(prefix)) sum += Number(line.split(" ").pop());
  return sum;
}

async function serverMetrics(stack: OperatorStack): Promise<string> {
  const r = await httpsJson(`${stack.serve.url}/metrics`, stack.serve.caPem, "GET");
  return String(r.body);
}

async function sample(cp: ControlPlane, stack: OperatorStack, proxy: FaultProxy): Promise<Sample> {
  const [api, text] = await Promise.all([apiserverMetrics(cp), serverMetrics(stack)]);
  return {
    ...api,
    proxyBytes: proxy.stats.bytesFromServer,
    reviews: metricSum(text, 'edge_operator_webhook_decisions_total{webhook="convert"'),
    conversionObjects: metricSum(text, "edge_operator_conversion_objects_total"),
    statusWrites: metricSum(text, "edge_operator_status_writes_total"),
    pushes: metricSum(text, "edge_operator_dataplane_pushes_total"),
  };
}

function diff(a: Sample, b: Sample): Sample {
  const requests: Counts = new Map();
  for (const [k, v] of b.requests) {
    const d = v - (a.requests.get(k) ?? 0);
    if (d !== 0) requests.set(k, d);
  }
  return {
    requests,
    responseBytes: b.responseBytes - a.responseBytes,
    proxyBytes: b.proxyBytes - a.proxyBytes,
    reviews: b.reviews - a.reviews,
    conversionObjects: b.conversionObjects - a.conversionObjects,
    statusWrites: b.statusWrites - a.statusWrites,
    pushes: b.pushes - a.pushes,
  };
}

function total(c: Counts): number {
  let n = 0;
  for (const v of c.values()) n += v;
  return n;
}

// ---- processes: pids and memory

function rssMiB(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) / 1024 : NaN;
  } catch {
    return NaN;
  }
}

/** The real process under a supervisor: its child that runs main.js. */
function childPid(supervisorPid: number | undefined): number | undefined {
  if (supervisorPid === undefined) return undefined;
  const kids = readFileSync(`/proc/${supervisorPid}/task/${supervisorPid}/children`, "utf8")
    .trim()
    .split(/\s+/)
    .filter(Boolean)
    .map(Number);
  return kids.find((k) => readFileSync(`/proc/${k}/cmdline`, "utf8").includes("main.js")) ?? supervisorPid;
}

/** The control plane's etcd and kube-apiserver: the processes whose command line names its directory. */
function controlPlanePids(cp: ControlPlane): { etcd?: number; apiserver?: number } {
  const out: { etcd?: number; apiserver?: number } = {};
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    let cmd: string;
    try {
      cmd = readFileSync(`/proc/${d}/cmdline`, "utf8");
    } catch {
      continue;
    }
    if (!cmd.includes(cp.dir)) continue;
    const exe = path.basename(cmd.split("\0")[0] ?? "");
    if (exe === "etcd") out.etcd = Number(d);
    if (exe === "kube-apiserver") out.apiserver = Number(d);
  }
  return out;
}

function httpGet(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { timeout: 5000 }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (body += c));
      res.on("end", () => resolve(body));
    });
    req.on("error", reject);
    req.on("timeout", () => req.destroy(new Error(`GET ${url}: timed out`)));
  });
}

const HEAP = "nodejs_heap_size_used_bytes";

interface Memory {
  server: number;
  serverHeap: number;
  watcher: number;
  watcherHeap: number;
  apiserver: number;
  etcd: number;
}

// ---- one run at one size

interface ChurnFigures {
  n: number;
  create: number;
  converge: number;
  changes: number;
  load: number;
  perChange: {
    requests: number;
    byKind: Counts;
    proxyBytes: number;
    responseBytes: number;
    reviews: number;
    conversionObjects: number;
    statusWrites: number;
  };
  programmed: ReturnType<typeof summarize>;
  floor: ReturnType<typeof summarize>;
  missed: number;
  restart?: RestartFigures;
}

interface RestartFigures {
  converged: number;
  statusWrites: number;
  pushes: number;
  requests: Counts;
  proxyBytes: number;
  reviews: number;
  conversionObjects: number;
  before: Memory;
  peak: Memory;
  after: Memory;
}

async function storageVersion(cp: ControlPlane): Promise<string> {
  const r = await cp.kubectl([
    "get",
    "crd",
    "edgeroutes.net.10xdev.io",
    "-o",
    "jsonpath={.spec.versions[?(@.storage==true)].name}",
  ]);
  return r.stdout.trim() || "v1";
}

async function run(n: number): Promise<ChurnFigures> {
  const cp = await startControlPlane();
  const proxyTls = cp.servingCertFiles;
  const upstream = new URL(cp.server);
  const proxy = await startFaultProxy({ host: upstream.hostname, port: Number(upstream.port) }, proxyTls);
  const dir = mkdtempSync(path.join(os.tmpdir(), "edge-churn-"));
  const kubeconfig = path.join(dir, "proxied.kubeconfig");
  writeFileSync(kubeconfig, readFileSync(cp.kubeconfig, "utf8").replace(cp.server, proxy.url));
  const watcherMetricsPort = await freePort();
  const watchArgs = [
    "--no-leader-elect",
    "--identity",
    "bench",
    // No resync inside the measured window: its cost is the restart's, measured on its own.
    "--resync",
    "0",
    "--metrics-listen",
    `127.0.0.1:${watcherMetricsPort}`,
  ];
  const stack = await startOperatorStack(cp, {
    kubeconfig,
    watcher: false,
    watchArgs,
    storageVersion: STORAGE,
    ...(args["chart-memory"]
      ? { serveEnv: { NODE_OPTIONS: chartNodeOptions().join(" "), ...chartMemoryEnv() } }
      : {}),
  });
  const kube = cp.kube();
  let watch: RouteWatch | undefined;
  try {
    log(`N=${n}: creating routes`);
    const create = await createRoutes(kube, n);
    log(`N=${n}: created in ${fmt(create, 1)} s; storage ${await storageVersion(cp)}`);
    watch = new RouteWatch(
      kube,
      `/apis/net.10xdev.io/${await storageVersion(cp)}/namespaces/${NS}/edgeroutes`,
    );
    await watch.start();
    const t0 = Date.now();
    const watcher = stack.startWatcher();
    const w = watch;
    await waitFor(
      `all ${n} routes Programmed`,
      async () => (w.programmedCount(n) >= n ? true : undefined),
      3_600_000,
      500,
    );
    const converge = (Date.now() - t0) / 1000;
    log(`N=${n}: all Programmed ${fmt(converge, 1)} s after the watcher started`);
    await waitForIdle(watcherMetricsPort, 120_000);
    await sleep(3000);

    // ---- churn
    const before = await sample(cp, stack, proxy);
    const sent = new Map<string, { gen: number; at: number }>();
    const programmedMs: number[] = [];
    const floorMs: number[] = [];
    const floorSeen = new Set<string>();
    const off = w.onEvent((name) => {
      const s = sent.get(name);
      if (!s) return;
      const now = performance.now();
      if ((w.seen.get(name) ?? 0) >= s.gen && !floorSeen.has(name)) {
        floorSeen.add(name);
        floorMs.push(now - s.at);
      }
      if ((w.programmed.get(name) ?? 0) >= s.gen) {
        programmedMs.push(now - s.at);
        sent.delete(name);
      }
    });
    let changes = 0;
    let pending = 0;
    const load0 = os.loadavg()[0] ?? NaN;
    const totalChanges = Math.round(SECONDS * RATE);
    const start = performance.now();
    const writes: Promise<void>[] = [];
    for (let k = 0; k < totalChanges; k++) {
      const due = start + (k * 1000) / RATE;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      // Spread over the routes, never one in flight twice: route k mod n, a fresh path each time.
      const i = Math.floor((k * 7919) % n);
      const name = `r-${i}`;
      if (sent.has(name)) continue;
      const at = performance.now();
      const gen = (w.seen.get(name) ?? 1) + 1;
      sent.set(name, { gen, at });
      floorSeen.delete(name);
      pending++;
      writes.push(
        kube
          .json<WatchedRoute>("PATCH", `${ROUTES_V2}/${name}`, {
            body: { spec: spec(i, k + 1) },
            contentType: "application/merge-patch+json",
            timeoutMs: 30_000,
          })
          .then((o) => {
            changes++;
            pending--;
            const g = o.metadata?.generation;
            const s = sent.get(name);
            if (s && g !== undefined) s.gen = g;
          })
          .catch((e: Error) => {
            pending--;
            sent.delete(name);
            log(`PATCH ${name} failed: ${e.message}`);
          }),
      );
    }
    await Promise.all(writes);
    const deadline = Date.now() + 60_000;
    while (sent.size > 0 && Date.now() < deadline) await sleep(200);
    const missed = sent.size + pending;
    off();
    await waitForIdle(watcherMetricsPort, 60_000).catch(() => undefined);
    const after = await sample(cp, stack, proxy);
    const load = ((os.loadavg()[0] ?? NaN) + load0) / 2;
    const d = diff(before, after);
    // The bench's own PATCHes are not the operator's.
    d.requests.set("PATCH edgeroutes", (d.requests.get("PATCH edgeroutes") ?? 0) - changes);
    const per = (x: number) => x / Math.max(1, changes);
    const byKind: Counts = new Map([...d.requests].filter(([, v]) => v !== 0).map(([k, v]) => [k, per(v)]));
    const figures: ChurnFigures = {
      n,
      create,
      converge,
      changes,
      load,
      perChange: {
        requests: per(total(d.requests)),
        byKind,
        proxyBytes: per(d.proxyBytes),
        responseBytes: per(d.responseBytes),
        reviews: per(d.reviews),
        conversionObjects: per(d.conversionObjects),
        statusWrites: per(d.statusWrites),
      },
      programmed: summarize(programmedMs),
      floor: summarize(floorMs),
      missed,
    };
    log(`N=${n}: churn done: ${changes} changes, ${missed} not Programmed in time`);

    if (args.restart) figures.restart = await restart(cp, stack, proxy, watcher, watcherMetricsPort, n);
    return figures;
  } finally {
    await watch?.stop();
    await stack.stop();
    await proxy.close();
    await cp.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The watcher's queue: every add done, nothing queued, the snapshot lane run at least once. */
async function watcherIdle(port: number): Promise<boolean> {
  const text = await httpGet(`http://127.0.0.1:${port}/metrics`).catch(() => "");
  if (!text) return false;
  const depth = metricSum(text, "edge_operator_queue_depth{");
  const adds = metricSum(text, "edge_operator_queue_adds_total{");
  const done = metricSum(text, "edge_operator_queue_work_duration_seconds_count{");
  const snapshots = metricSum(text, 'edge_operator_watcher_reconcile_calls_total{lane="snapshot"');
  return depth === 0 && adds > 0 && adds === done && snapshots > 0;
}

async function waitForIdle(port: number, timeoutMs: number): Promise<void> {
  await waitFor(
    "the watcher to go idle",
    async () =>
      (await watcherIdle(port)) && (await sleep(1000), await watcherIdle(port)) ? true : undefined,
    timeoutMs,
    250,
  );
}

async function memory(
  stack: OperatorStack,
  watcher: Supervised,
  port: number,
  cp: ControlPlane,
): Promise<Memory> {
  const pids = controlPlanePids(cp);
  const [s, w] = await Promise.all([
    serverMetrics(stack).catch(() => ""),
    httpGet(`http://127.0.0.1:${port}/metrics`).catch(() => ""),
  ]);
  const mib = (x: number) => (x > 0 ? x / 1024 / 1024 : NaN);
  return {
    server: rssMiB(childPid(stack.serve.process.child.pid)),
    serverHeap: mib(metricSum(s, `${HEAP} `)),
    watcher: rssMiB(childPid(watcher.child.pid)),
    watcherHeap: mib(metricSum(w, `${HEAP} `)),
    apiserver: rssMiB(pids.apiserver),
    etcd: rssMiB(pids.etcd),
  };
}

function peakOf(a: Memory, b: Memory): Memory {
  const m = (x: number, y: number) => (Number.isNaN(x) ? y : Number.isNaN(y) ? x : Math.max(x, y));
  return {
    server: m(a.server, b.server),
    serverHeap: m(a.serverHeap, b.serverHeap),
    watcher: m(a.watcher, b.watcher),
    watcherHeap: m(a.watcherHeap, b.watcherHeap),
    apiserver: m(a.apiserver, b.apiserver),
    etcd: m(a.etcd, b.etcd),
  };
}

/** The watcher stopped and started again with nothing changed: until idle, what it cost and wrote. */
async function restart(
  cp: ControlPlane,
  stack: OperatorStack,
  proxy: FaultProxy,
  old: Supervised,
  port: number,
  n: number,
): Promise<RestartFigures> {
  await sleep(3000);
  const before = await memory(stack, old, port, cp);
  await old.stop();
  const s0 = await sample(cp, stack, proxy);
  const t0 = Date.now();
  const watcher = stack.startWatcher();
  let peak = before;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      peak = peakOf(peak, await memory(stack, watcher, port, cp));
      await sleep(500);
    }
  })();
  await waitForIdle(port, 3_600_000);
  const converged = (Date.now() - t0) / 1000 - 1; // less the second waitForIdle waits to confirm
  sampling = false;
  await sampler;
  await sleep(2000);
  const s1 = await sample(cp, stack, proxy);
  const d = diff(s0, s1);
  log(`N=${n}: restart converged in ${fmt(converged, 1)} s`);
  return {
    converged,
    statusWrites: d.statusWrites,
    pushes: d.pushes,
    requests: d.requests,
    proxyBytes: d.proxyBytes,
    reviews: d.reviews,
    conversionObjects: d.conversionObjects,
    before,
    peak,
    after: await memory(stack, watcher, port, cp),
  };
}

// ---- report

function showCounts(c: Counts, digits = 2): string {
  return [...c]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k} ${fmt(v, digits)}`)
    .join(", ");
}

function showMemory(m: Memory): string {
  return `server ${fmt(m.server, 0)} MiB (heap ${fmt(m.serverHeap, 0)}), watcher ${fmt(m.watcher, 0)} MiB (heap ${fmt(m.watcherHeap, 0)}), kube-apiserver ${fmt(m.apiserver, 0)} MiB, etcd ${fmt(m.etcd, 0)} MiB`;
}

const all: ChurnFigures[] = [];
for (let r = 0; r < RUNS; r++) {
  for (const n of SIZES) {
    const f = await run(n);
    all.push(f);
    process.stdout.write(
      `${JSON.stringify({ ...f, perChange: { ...f.perChange, byKind: Object.fromEntries(f.perChange.byKind) }, restart: f.restart ? { ...f.restart, requests: Object.fromEntries(f.restart.requests) } : undefined })}\n`,
    );
  }
}
console.log(
  `\nmachine: ${os.cpus().length} cores, ${fmt(os.totalmem() / 2 ** 30, 0)} GiB, Node ${process.version}`,
);
console.log(`churn: ${RATE} changes/s for ${SECONDS} s, routes created ${IN_FLIGHT} in flight`);
for (const f of all) {
  const p = f.perChange;
  console.log(
    `N=${f.n} (load ${fmt(f.load, 1)}): created ${fmt(f.create, 0)} s, converged ${fmt(f.converge, 0)} s; ${f.changes} changes, ${f.missed} missed; per change: ${fmt(p.requests)} apiserver requests [${showCounts(p.byKind)}], ${fmt(p.proxyBytes / 1024, 1)} KiB read by the operator, ${fmt(p.responseBytes / 1024, 1)} KiB non-watch responses, ${fmt(p.reviews)} ConversionReviews with ${fmt(p.conversionObjects, 1)} objects, ${fmt(p.statusWrites)} status writes; applied → Programmed p50 ${fmt(f.programmed.p50, 0)} ms p99 ${fmt(f.programmed.p99, 0)} ms; floor (watch event) p50 ${fmt(f.floor.p50, 0)} ms p99 ${fmt(f.floor.p99, 0)} ms`,
  );
  const r = f.restart;
  if (r) {
    console.log(
      `  restart at N=${f.n}: idle after ${fmt(r.converged, 1)} s; ${r.statusWrites} status writes, ${r.pushes} pushes; apiserver requests [${showCounts(r.requests, 0)}]; ${fmt(r.proxyBytes / 2 ** 20, 1)} MiB read; ${r.reviews} ConversionReviews, ${r.conversionObjects} objects`,
    );
    console.log(`  memory before: ${showMemory(r.before)}`);
    console.log(`  memory peak during: ${showMemory(r.peak)}`);
    console.log(`  memory after: ${showMemory(r.after)}`);
  }
}
