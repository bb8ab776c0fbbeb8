// Admission benchmark: /validate and /mutate latency under a fixed request
// rate, against a floor measured in the same run.
//
// The server (this file with --server, in a child process) is the real app:
// createApp + startHttpsServer from src/server, hosting admissionHandlers() and
// /floor, a bare handler that reads the parsed review and answers a constant
// "allowed". Floor and webhooks share one process, one TLS setup, one express
// app, and the same request body, so the difference is the webhook's own work.
//
// The load generator is open-loop: request i of a segment is due at
// t0 + i/rate whatever happened to the requests before it, and its latency is
// measured from that due time to the end of the answer (so a stalled server
// or a late client timer shows up in the figures, instead of being hidden by
// a client that waits: no coordinated omission). HTTPS keep-alive on loopback.
// The machine is shared, so background load drifts from second to second, and
// a p99 is decided by a few stalls (a collection, the scheduler): at each rate
// the three targets' requests are interleaved one by one in one schedule
// (request i to target i mod 3, RATE requests a second in all), so a stall
// falls on each target alike and the ratio of two p99s says what the webhook
// adds. SCHEDULE=slices is the earlier way: each target alone at RATE in short
// slices (SLICE_SECONDS each, the order rotating), percentiles over all its
// slices; a stall then counts for whichever target's slice it fell in. Either
// way each target gets the same number of requests and the sweep is repeated
// RUNS times.
//
// Run: npm run bench:admission   (RUNS, SLICES, SLICE_SECONDS, RATES, SCHEDULE, MAX_LOAD to change the defaults)

import { fork } from "node:child_process";
import https from "node:https";
import os from "node:os";
import { fileURLToPath } from "node:url";
import { createCa, issueCertificate } from "../src/certs/pki.js";
import { createApp } from "../src/server/app.js";
import { startHttpsServer } from "../src/server/https.js";
import type { JsonHandler } from "../src/server/json-handler.js";
import { admissionHandlers } from "../src/server/admission-handlers.js";
import { ADMISSION_BODY_LIMIT } from "../src/server/admission-review.js";
import { fmt, percentile } from "./stats.js";
import { createLogger } from "../src/observability/logger.js";
import { createRegistry, createServerMetrics } from "../src/observability/metrics.js";

const RUNS = Number(process.env.RUNS ?? 3);
const SLICES = Number(process.env.SLICES ?? 4);
const SLICE_SECONDS = Number(process.env.SLICE_SECONDS ?? 1);
const RATES = (process.env.RATES ?? "500,1000,2000").split(",").map(Number);
/**
 * interleaved (the default): at each rate one schedule of RATE requests a
 * second for SLICES x SLICE_SECONDS x 3 seconds, request i to target i mod 3;
 * slices: each target alone at RATE for SLICE_SECONDS at a time, in turn.
 */
const SCHEDULE = process.env.SCHEDULE === "slices" ? "slices" : "interleaved";
const WARMUP_SECONDS = 1;
/** Wait (up to 10 min) for the 1-minute load average to fall below this before starting; 0: start at once. */
const MAX_LOAD = Number(process.env.MAX_LOAD ?? 0);
/** A segment ends at most this long after its last request was due; the rest count as lost. */
const DRAIN_MS = 5000;
const TARGETS = ["/floor", "/validate", "/mutate"] as const;
type Target = (typeof TARGETS)[number];

interface ServerReady {
  port: number;
  caPem: string;
}

/** The floor: the app has parsed the body; answer the review with a constant verdict. */
const floorRoute: JsonHandler = {
  path: "/floor",
  limit: ADMISSION_BODY_LIMIT,
  handle(body) {
    const uid = (body as { request: { uid: string } }).request.uid;
    return {
      status: 200,
      body: { apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", response: { uid, allowed: true } },
    };
  },
};

async function server(): Promise<void> {
  const ca = createCa();
  const pair = issueCertificate(ca, { commonName: "127.0.0.1", ips: ["127.0.0.1"], usage: "server" });
  // No KubeConfig: the conflict lookup is cluster I/O with its own budget, not measured here.
  const log = createLogger();
  const metrics = createServerMetrics(createRegistry());
  const routes = [...admissionHandlers(undefined, { log, metrics }), floorRoute];
  const app = createApp({ handlers: routes, ready: () => true, log, metrics });
  const running = await startHttpsServer(app, { host: "127.0.0.1", port: 0, tls: pair, drainMs: 100, log });
  process.send?.({ port: running.address.port, caPem: ca.cert } satisfies ServerReady);
  process.on("disconnect", () => void running.stop().then(() => process.exit(0)));
}

/** A CREATE of a v2 route as the apiserver sends it, managedFields and all (about 3 KB). */
function reviewBody(): string {
  const object = {
    apiVersion: "net.10xdev.io/v2",
    kind: "EdgeRoute",
    metadata: {
      name: "shop",
      namespace: "default",
      uid: "0f6a3b6c-5d0a-4a9e-9f0e-3f7d0e1c2b3a",
      creationTimestamp: "2026-01-01T00:00:00Z",
      generation: 1,
      labels: { app: "shop", team: "checkout" },
      annotations: {
        "kubectl.kubernetes.io/last-applied-configuration":
          '{"apiVersion":"net.10xdev.io/v2","kind":"EdgeRoute","metadata":{"name":"shop","namespace":"default"},"spec":{"hostnames":["shop.example.com"]}}\n',
      },
      managedFields: [
        {
          manager: "kubectl-client-side-apply",
          operation: "Update",
          apiVersion: "net.10xdev.io/v2",
          time: "2026-01-01T00:00:00Z",
          fieldsType: "FieldsV1",
          fieldsV1: {
            "f:metadata": {
              "f:annotations": { ".": {}, "f:kubectl.kubernetes.io/last-applied-configuration": {} },
            },
            "f:spec": { ".": {}, "f:hostnames": {}, "f:rules": {} },
          },
        },
      ],
    },
    spec: {
      hostnames: ["shop.example.com", "*.shop.example.com"],
      rules: [
        {
          matches: [
            { path: { type: "PathPrefix", value: "/api" }, headers: [{ name: "x-canary", value: "1" }] },
            { path: { value: "/api/v2" } },
          ],
          backends: [
            { name: "checkout", port: 8080, weight: 90 },
            { name: "checkout-canary", port: 8080 },
          ],
          timeout: "15s",
        },
        { matches: [{ path: { type: "Exact", value: "/healthz" } }], backends: [{ name: "web", port: 80 }] },
      ],
    },
  };
  return JSON.stringify({
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    request: {
      uid: "705ab4f5-6393-11e8-b7cc-42010a800002",
      kind: { group: "net.10xdev.io", version: "v2", kind: "EdgeRoute" },
      resource: { group: "net.10xdev.io", version: "v2", resource: "edgeroutes" },
      requestKind: { group: "net.10xdev.io", version: "v2", kind: "EdgeRoute" },
      requestResource: { group: "net.10xdev.io", version: "v2", resource: "edgeroutes" },
      name: "shop",
      namespace: "default",
      operation: "CREATE",
      userInfo: { username: "admin", groups: ["system:masters", "system:authenticated"] },
      object,
      oldObject: null,
      dryRun: false,
      options: {
        apiVersion: "meta.k8s.io/v1",
        kind: "CreateOptions",
        fieldManager: "kubectl-client-side-apply",
      },
    },
  });
}

interface Segment {
  target: Target;
  rate: number;
  sent: number;
  /** ms from each request's due time to the end of its answer. */
  latencies: number[];
  failed: number;
  lost: number;
}

function post(agent: https.Agent, port: number, path: string, body: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = https.request(
      {
        host: "127.0.0.1",
        port,
        path,
        method: "POST",
        agent,
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      },
      (res) => {
        let ok = res.statusCode === 200;
        res.on("data", () => undefined);
        res.on("end", () => resolve(ok));
        res.on("error", () => {
          ok = false;
          resolve(false);
        });
      },
    );
    req.on("error", () => resolve(false));
    req.end(body);
  });
}

/**
 * Sends `rate` requests a second for `seconds`, each at its own due time, and
 * waits for the answers. Request i goes to targets[i % targets.length]: with
 * several targets they share one schedule, so a stall of the machine falls on
 * each of them alike.
 */
async function openLoop(
  agent: https.Agent,
  port: number,
  targets: readonly Target[],
  rate: number,
  seconds: number,
  body: string,
): Promise<Segment[]> {
  const total = Math.round(rate * seconds);
  const segments = targets.map((target): Segment => ({
    target,
    rate: rate / targets.length,
    sent: 0,
    latencies: [],
    failed: 0,
    lost: 0,
  }));
  let done = 0;
  let next = 0;
  const start = performance.now() + 5;
  const intervalMs = 1000 / rate;
  let finish: () => void = () => undefined;
  const allDone = new Promise<void>((resolve) => (finish = resolve));

  const fire = (i: number, due: number): void => {
    const seg = segments[i % segments.length] as Segment;
    seg.sent++;
    void post(agent, port, seg.target, body).then((ok) => {
      if (ok) seg.latencies.push(performance.now() - due);
      else seg.failed++;
      if (++done === total) finish();
    });
  };
  // A timer wakes about every millisecond and sends everything due by then.
  const tick = (): void => {
    const now = performance.now();
    while (next < total && start + next * intervalMs <= now) {
      fire(next, start + next * intervalMs);
      next++;
    }
    if (next < total) setTimeout(tick, Math.max(0, start + next * intervalMs - performance.now() - 0.5));
  };
  setTimeout(tick, 5);
  const deadline = new Promise<void>((resolve) =>
    setTimeout(resolve, seconds * 1000 + DRAIN_MS + 10).unref(),
  );
  await Promise.race([allDone, deadline]);
  for (const seg of segments) seg.lost = seg.sent - seg.latencies.length - seg.failed;
  // Due but never sent (the deadline came first) is lost too.
  for (let i = next; i < total; i++) (segments[i % segments.length] as Segment).lost++;
  return segments;
}

/** The server's own work per review, in-process and without HTTP: parse + decide + stringify, µs. */
async function inProcess(body: string): Promise<Record<Target, number>> {
  const log = createLogger();
  const deps = { log, metrics: createServerMetrics(createRegistry()) };
  const routes = new Map([...admissionHandlers(undefined, deps), floorRoute].map((r) => [r.path, r]));
  const ctx = { headers: {}, log };
  const out = {} as Record<Target, number>;
  for (const t of TARGETS) {
    const route = routes.get(t) as JsonHandler;
    const once = async () => JSON.stringify((await route.handle(JSON.parse(body), ctx)).body);
    for (let i = 0; i < 2000; i++) await once();
    const samples: number[] = [];
    for (let k = 0; k < 7; k++) {
      const t0 = performance.now();
      for (let i = 0; i < 2000; i++) await once();
      samples.push(((performance.now() - t0) * 1000) / 2000);
    }
    out[t] = median(samples);
  }
  return out;
}

interface Row {
  p50: number;
  p99: number;
  n: number;
  failed: number;
  lost: number;
}

function row(slices: Segment[]): Row {
  const sorted = slices.flatMap((s) => s.latencies).sort((a, b) => a - b);
  const sum = (f: (s: Segment) => number) => slices.reduce((a, s) => a + f(s), 0);
  return {
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    n: sorted.length,
    failed: sum((s) => s.failed),
    lost: sum((s) => s.lost),
  };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0
    ? NaN
    : s.length % 2 === 1
      ? (s[(s.length - 1) / 2] as number)
      : ((s[s.length / 2 - 1] as number) + (s[s.length / 2] as number)) / 2;
}

async function main(): Promise<void> {
  if (process.argv.includes("--server")) return server();
  for (let waited = 0; MAX_LOAD > 0 && (os.loadavg()[0] ?? 0) > MAX_LOAD && waited < 600; waited += 5) {
    if (waited % 60 === 0)
      console.log(`waiting for load ${os.loadavg()[0]?.toFixed(1)} to fall below ${MAX_LOAD}`);
    await new Promise((r) => setTimeout(r, 5000));
  }
  const child = fork(fileURLToPath(import.meta.url), ["--server"], {
    stdio: ["ignore", "inherit", "inherit", "ipc"],
    env: { ...process.env, LOG_LEVEL: "warn" },
  });
  const ready = await new Promise<ServerReady>((resolve, reject) => {
    child.once("message", (m) => resolve(m as ServerReady));
    child.once("exit", (code) => reject(new Error(`server exited with ${code}`)));
  });
  const agent = new https.Agent({ keepAlive: true, maxSockets: 64, ca: ready.caPem });
  const body = reviewBody();
  const results = new Map<string, Row[]>();
  const key = (t: Target, r: number) => `${t} ${r}`;
  try {
    console.log(
      `admission bench: ${os.cpus().length} cpus (${os.cpus()[0]?.model ?? "?"}), node ${process.version}, load ${os
        .loadavg()
        .map((l) => l.toFixed(1))
        .join(" ")}`,
    );
    console.log(
      `body ${body.length} bytes; ${RUNS} runs x rates ${RATES.join(", ")} req/s; schedule ${SCHEDULE}: ${SCHEDULE === "interleaved" ? `${SLICES * SLICE_SECONDS * TARGETS.length}s, the targets in turn request by request` : `${SLICES} slices of ${SLICE_SECONDS}s per target`}\n`,
    );
    const cost = await inProcess(body);
    console.log(
      `in-process cost per review (parse + decide + stringify), µs: ${TARGETS.map((t) => `${t} ${fmt(cost[t], 1)}`).join(", ")}\n`,
    );
    // Warm up the JIT and open the keep-alive connections.
    for (const t of TARGETS) await openLoop(agent, ready.port, [t], 500, WARMUP_SECONDS, body);
    for (let run = 1; run <= RUNS; run++) {
      for (const rate of RATES) {
        const slices = new Map<Target, Segment[]>(TARGETS.map((t) => [t, []]));
        if (SCHEDULE === "interleaved")
          // The same wall time, load and samples per target as the slices below.
          for (const seg of await openLoop(
            agent,
            ready.port,
            TARGETS,
            rate,
            SLICES * SLICE_SECONDS * TARGETS.length,
            body,
          ))
            slices.get(seg.target)?.push(seg);
        else
          for (let k = 0; k < SLICES; k++) {
            for (let j = 0; j < TARGETS.length; j++) {
              const target = TARGETS[(j + k) % TARGETS.length] as Target;
              for (const seg of await openLoop(agent, ready.port, [target], rate, SLICE_SECONDS, body))
                slices.get(target)?.push(seg);
              await new Promise((r) => setTimeout(r, 100));
            }
          }
        for (const target of TARGETS) {
          const r = row(slices.get(target) ?? []);
          results.set(key(target, rate), [...(results.get(key(target, rate)) ?? []), r]);
          console.log(
            `run ${run} ${String(rate).padStart(4)} req/s ${target.padEnd(9)} p50 ${fmt(r.p50, 3)} ms  p99 ${fmt(r.p99, 3)} ms  (n ${r.n}, failed ${r.failed}, lost ${r.lost})`,
          );
        }
      }
    }
  } finally {
    agent.destroy();
    child.disconnect();
  }

  console.log(
    "\nper run, ms: p50 and p99 of each target; goal p50 - floor p50 <= 0.3 ms, p99 / floor p99 <= 1.5\n",
  );
  console.log(
    "| rate | run | floor p50 | floor p99 | validate p50 | validate p99 | mutate p50 | mutate p99 | validate Δp50 / p99 ratio | mutate Δp50 / p99 ratio |",
  );
  console.log("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
  for (const rate of RATES) {
    for (let i = 0; i < RUNS; i++) {
      const [f, v, m] = TARGETS.map((t) => results.get(key(t, rate))?.[i] as Row);
      if (!f || !v || !m) continue;
      const judge = (x: Row) =>
        `${fmt(x.p50 - f.p50, 3)} / ${fmt(x.p99 / f.p99, 2)}x ${x.p50 - f.p50 <= 0.3 && x.p99 / f.p99 <= 1.5 ? "ok" : "MISS"}`;
      console.log(
        `| ${rate} | ${i + 1} | ${fmt(f.p50, 3)} | ${fmt(f.p99, 3)} | ${fmt(v.p50, 3)} | ${fmt(v.p99, 3)} | ${fmt(m.p50, 3)} | ${fmt(m.p99, 3)} | ${judge(v)} | ${judge(m)} |`,
      );
    }
  }
  console.log("\nmedian over runs, ms\n");
  console.log(
    "| rate | floor p50 | floor p99 | validate p50 | validate p99 | mutate p50 | mutate p99 |\n| --- | --- | --- | --- | --- | --- | --- |",
  );
  for (const rate of RATES) {
    const med = (t: Target, f: "p50" | "p99") =>
      fmt(median((results.get(key(t, rate)) ?? []).map((r) => r[f])), 3);
    console.log(
      `| ${rate} | ${med("/floor", "p50")} | ${med("/floor", "p99")} | ${med("/validate", "p50")} | ${med("/validate", "p99")} | ${med("/mutate", "p50")} | ${med("/mutate", "p99")} |`,
    );
  }
  console.log(
    `\nload average at end: ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")}`,
  );
}

await main();
