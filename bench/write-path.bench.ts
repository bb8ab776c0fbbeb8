// The write path against its floor: EdgeRoute creates through the operator
// (the chart installed out of cluster, `serve` hosting /mutate, /validate,
// /convert and /reconcile, the watcher running) against creates of a copy of
// the CRD in another group on the same apiserver, behind two no-op webhooks
// (mutating and validating, HTTPS, `allowed: true` at once, from a plain
// node:https server in a process of its own).
//
// The copy has the same versions, schemas and storage version as the
// operator's CRD and no conversion webhook (strategy None: the apiserver only
// rewrites apiVersion), as in the floor of BENCHMARKS.md, Write path: a version the operator does
// not store costs it conversion calls the floor does not pay, and the figures
// show it. FLOOR_CONVERSION=webhook gives the copy a conversion webhook on the
// same no-op server that only rewrites apiVersion: the floor of any CRD that
// converts through a webhook, though one that loses a v1 create's spec (v2's
// schema prunes the v1 fields). FLOOR_CONVERSION=fields has that webhook map
// the v1 fields onto v2's shape and back, with no checks: the least a
// conversion must do to keep what a v1 client wrote.
//
// Each segment is CREATES creates of one version through one target, IN_FLIGHT
// at a time, over one keep-alive connection pool with the admin's client
// certificate. Each round runs each version's operator and floor segments back
// to back, who goes first alternating (roundOrder), so that drifting
// background load falls on both;
// after each, the segment's objects are deleted (the operator's through its
// finalizer, released by the watcher's reconcile) so every segment starts on
// the same number of stored objects. Ratios are taken within one round, and
// over the whole run (creates over seconds, and CPU per create, summed per target).
//
// Run: npm run bench:write-path
//   ROUNDS (3), CREATES (2000), WARMUP_CREATES (500, untimed, per target and version before round 1), IN_FLIGHT (16), STORAGE (the chart's default, or v1 / v2),
//   CPU_PROF_DIR (write `node --cpu-prof` profiles of serve, watch and the no-op webhooks there, one per segment and one per gap between them), JSON_OUT (a file for the raw figures),
//   FLOOR_CONVERSION (none, webhook or fields), DELETE_TIMEOUT_SECONDS (900: a busy machine releases finalizers slowly),
//   APISERVER_PROF_DIR (a Go CPU profile of kube-apiserver over the first APISERVER_PROF_SECONDS (3) of each segment,
//     read with `go tool pprof -top`),
//   ONLY_VERSION (v1 or v2: only that version's segments),
//   QUIET_CONVERSION_SECONDS (10: between segments, wait until the apiserver made no conversion call for this long;
//     0 waits only SETTLE_MS), SETTLE_MAX_SECONDS (180),
//   FINALIZER_POLICY (the chart's webhook.finalizerPolicy, enabled unless told: what its default, auto, does in
//     a 1.36 cluster; out of cluster, as here, auto leaves the policy out; disabled measures /mutate adding
//     the finalizer. The demo environment waits out the apiserver's first 503s with `edge-operator wait-admission`),
//   DATAPLANE (memory, the demo's; or xds, the chart's default: serve's ADS server on a free port, no client).
//   EDGE_SERVE_NODE_ARGS, EDGE_WATCH_NODE_ARGS (node flags for serve or watch alone, e.g. "--trace-opt";
//     with EDGE_TEST_LOG_DIR their output lands in serve-PORT.log and watch-PID.log there).
// Each segment prints its window in CLOCK_MONOTONIC seconds: a whole-machine profile taken with
// `perf record -a -g -k mono` (and NODE_OPTIONS=--perf-prof for the node processes' JIT code, then
// `perf inject --jit`) is cut to one segment with `perf report --time START,END`.

import { fork } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import https from "node:https";
import os from "node:os";
import { fileURLToPath } from "node:url";
import { stringify as toYaml } from "yaml";
import { buildCrd } from "../src/api/crd.js";
import { GROUP, PLURAL } from "../src/api/types.js";
import { createCa, issueCertificate } from "../src/certs/pki.js";
import { startDemoEnvironment } from "../tools/demo/environment.js";
import { Teardown } from "../tools/demo/teardown.js";
import { loadKubeConfig } from "../src/kube/load-kubeconfig.js";
import type { KubeClient } from "../src/kube/client.js";
import { must, sleep, waitFor } from "../tools/testenv/process.js";
import {
  mutatingWebhookConfiguration,
  validatingWebhookConfiguration,
} from "../test/harness/registration.js";
import { describeCpu, operatorRole, pidsOf, sampleCpu, type Classify } from "./process-cpu.js";
import { fmt, percentile, summarize } from "./stats.js";
import { noopAnswer } from "./floor-conversion.js";
import { untilFlat } from "./until-flat.js";

const ROUNDS = Number(process.env.ROUNDS ?? 3);
const CREATES = Number(process.env.CREATES ?? 2000);
const WARMUP_CREATES = Number(process.env.WARMUP_CREATES ?? 500);
const IN_FLIGHT = Number(process.env.IN_FLIGHT ?? 16);
const STORAGE = process.env.STORAGE;
const CPU_PROF_DIR = process.env.CPU_PROF_DIR;
const JSON_OUT = process.env.JSON_OUT;
const FLOOR_CONVERSIONS = ["none", "webhook", "fields"] as const;
const FLOOR_CONVERSION = ((): (typeof FLOOR_CONVERSIONS)[number] => {
  const asked = process.env.FLOOR_CONVERSION ?? "none";
  const known = FLOOR_CONVERSIONS.find((c) => c === asked);
  if (!known) throw new Error(`FLOOR_CONVERSION=${asked}: must be one of ${FLOOR_CONVERSIONS.join(", ")}`);
  return known;
})();
/** A segment's deletes must be done by then (the operator's wait on the watcher's finalizer release). */
const DELETE_TIMEOUT_MS = Number(process.env.DELETE_TIMEOUT_SECONDS ?? 900) * 1000;
/** A quiet moment after the deletes, so the watcher's last reconciles do not fall into the next segment. */
const SETTLE_MS = 3000;
/**
 * Then no conversion call for this long (QUIET_CONVERSION_SECONDS, 0 to skip), at most
 * SETTLE_MAX_SECONDS: the apiserver's watch cache of the version not stored converts
 * each event of a segment through the webhook, and catches up seconds after the
 * segment's creates and deletes (thousands of calls), which would fall into the next
 * segment, whichever target it times.
 */
const QUIET_CONVERSION_MS = Number(process.env.QUIET_CONVERSION_SECONDS ?? 10) * 1000;
const SETTLE_MAX_MS = Number(process.env.SETTLE_MAX_SECONDS ?? 180) * 1000;
const APISERVER_PROF_DIR = process.env.APISERVER_PROF_DIR;
const APISERVER_PROF_SECONDS = Number(process.env.APISERVER_PROF_SECONDS ?? 3);
const FINALIZER_POLICY = process.env.FINALIZER_POLICY ?? "enabled";
const ONLY_VERSION = process.env.ONLY_VERSION as Version | undefined;
const DATAPLANE = process.env.DATAPLANE === "xds" ? "xds" : "memory";

const PROFILE_PRELOAD = fileURLToPath(new URL("./cpu-profile-preload.mjs", import.meta.url));

/** What makes an operator process write CPU profiles into `dir` (bench/cpu-profile-preload.mjs). */
function profiledEnv(dir: string): Record<string, string> {
  return {
    CPU_PROF_DIR: dir,
    NODE_OPTIONS: `--import ${PROFILE_PRELOAD}`,
  };
}
const FLOOR_GROUP = "floor.10xdev.io";
const NS = "bench";
const VERSIONS = ["v1", "v2"] as const;
type Version = (typeof VERSIONS)[number];
const TARGETS = ["operator", "floor"] as const;
type Target = (typeof TARGETS)[number];

// ---- the no-op webhooks (this file with --noop, in a child process) ----

async function noopServer(): Promise<void> {
  const ca = createCa({ commonName: "noop-webhook-ca" });
  const pair = issueCertificate(ca, { commonName: "127.0.0.1", ips: ["127.0.0.1"], usage: "server" });
  const server = https.createServer({ cert: pair.cert, key: pair.key, minVersion: "TLSv1.2" }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = noopAnswer(
        Buffer.concat(chunks).toString("utf8"),
        FLOOR_CONVERSION === "fields" ? "fields" : "apiVersion",
      );
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
      res.end(body);
    });
  });
  // As serve does: the client, never the server, closes an idle keep-alive connection.
  server.keepAliveTimeout = 95_000;
  server.headersTimeout = 96_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  process.send?.({ url: `https://127.0.0.1:${port}`, caPem: ca.cert });
  process.on("disconnect", () => process.exit(0));
}

function startNoop(teardown: Teardown): Promise<{ url: string; caPem: string }> {
  const child = fork(fileURLToPath(import.meta.url), ["--noop"], {
    stdio: ["ignore", "inherit", "inherit", "ipc"],
    // Profiled as serve is, to set the two side by side (CPU_PROF_DIR is in the inherited environment).
    ...(CPU_PROF_DIR ? { execArgv: [...process.execArgv, "--import", PROFILE_PRELOAD] } : {}),
  });
  teardown.defer("no-op webhooks", async () => {
    child.disconnect();
    await new Promise((r) => setTimeout(r, 200));
    if (child.exitCode === null) child.kill("SIGKILL");
  });
  return new Promise((resolve, reject) => {
    child.once("message", (m) => resolve(m as { url: string; caPem: string }));
    child.once("exit", (code) => reject(new Error(`the no-op webhook server exited (${code})`)));
  });
}

// ---- the floor's CRD copy and webhooks ----

function floorManifests(noop: { url: string; caPem: string }, storage: Version): unknown[] {
  const client = { url: noop.url, caBundle: Buffer.from(noop.caPem).toString("base64") };
  const crd = buildCrd({
    storageVersion: storage,
    ...(FLOOR_CONVERSION !== "none"
      ? { conversion: { url: `${noop.url}/convert`, caBundle: client.caBundle } }
      : {}),
  });
  crd.metadata.name = `${PLURAL}.${FLOOR_GROUP}`;
  crd.spec.group = FLOOR_GROUP;
  const retarget = <
    T extends {
      metadata: { name: string };
      webhooks: { name: string; rules: { apiGroups: string[] }[]; matchConditions?: unknown[] }[];
    },
  >(
    cfg: T,
  ): T => {
    cfg.metadata.name = `floor-${cfg.metadata.name}`;
    for (const w of cfg.webhooks) {
      w.name = w.name.replace(GROUP, FLOOR_GROUP);
      // No-op webhooks are called for every create: no match condition to evaluate.
      delete w.matchConditions;
      for (const r of w.rules) r.apiGroups = [FLOOR_GROUP];
    }
    return cfg;
  };
  return [
    crd,
    retarget(mutatingWebhookConfiguration({ client, name: "floor" })),
    retarget(validatingWebhookConfiguration({ client, name: "floor" })),
  ];
}

// ---- the objects ----

function route(group: string, version: Version, name: string): unknown {
  const metadata = { name, namespace: NS };
  const apiVersion = `${group}/${version}`;
  if (version === "v1") {
    return {
      apiVersion,
      kind: "EdgeRoute",
      metadata,
      spec: { host: `${name}.example.com`, pathPrefix: "/api", service: "checkout", port: 8080 },
    };
  }
  return {
    apiVersion,
    kind: "EdgeRoute",
    metadata,
    spec: {
      hostnames: [`${name}.example.com`],
      rules: [
        {
          matches: [{ path: { type: "PathPrefix", value: "/api" } }],
          backends: [{ name: "checkout", port: 8080 }],
        },
      ],
    },
  };
}

const groupOf = (t: Target): string => (t === "operator" ? GROUP : FLOOR_GROUP);

// ---- metrics: counters and histogram sums, before and after a segment ----

type Sample = Map<string, number>;

/** Keeps the series worth reading, keyed by name and the labels that tell them apart. */
function parseMetrics(text: string, keep: RegExp, labels: readonly string[]): Sample {
  const out: Sample = new Map();
  for (const line of text.split("\n")) {
    if (line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (!m || !keep.test(m[1] as string)) continue;
    const parts: string[] = [];
    for (const l of labels) {
      const lm = new RegExp(`[{,]${l}="([^"]*)"`).exec(m[2] ?? "");
      if (lm) parts.push(`${l}=${lm[1]}`);
    }
    const key = `${m[1]}{${parts.join(",")}}`;
    out.set(key, (out.get(key) ?? 0) + Number(m[3]));
  }
  return out;
}

function diff(after: Sample, before: Sample): Sample {
  const out: Sample = new Map();
  for (const [k, v] of after) {
    const d = v - (before.get(k) ?? 0);
    if (d !== 0) out.set(k, d);
  }
  return out;
}

/** "name{labels}: N calls, mean X ms" from the _count and _sum pairs of a diff. */
function describeHistograms(d: Sample, perCreate: number): string[] {
  const lines: string[] = [];
  for (const [k, count] of d) {
    if (!k.includes("_count{")) continue;
    const sum = d.get(k.replace("_count{", "_sum{")) ?? 0;
    lines.push(
      `    ${k.replace("_count{", "{")}: ${fmt(count / perCreate, 2)} per create, mean ${fmt((1000 * sum) / count, 2)} ms`,
    );
  }
  for (const [k, v] of d) {
    if (k.includes("_total{")) lines.push(`    ${k}: ${fmt(v / perCreate, 2)} per create`);
  }
  return lines.sort();
}

function httpsBytes(url: string, tls: https.RequestOptions, timeoutMs = 10_000): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    https
      .get(url, { ...tls, timeout: timeoutMs }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve(Buffer.concat(chunks)));
      })
      .on("error", reject);
  });
}

const httpsText = async (url: string, tls: https.RequestOptions): Promise<string> =>
  (await httpsBytes(url, tls)).toString("utf8");

// ---- CPU by process ----

/** The processes whose CPU a create can cost, by role. */
const classifyProcess: Classify = (argv, pid) => {
  if (pid === process.pid) return "bench client";
  const exe = argv[0] ?? "";
  if (exe.endsWith("kube-apiserver")) return "kube-apiserver";
  if (exe.endsWith("/etcd")) return "etcd";
  if (argv.includes("--noop") && argv.some((a) => a.includes("write-path.bench"))) return "no-op webhooks";
  return operatorRole(argv);
};

// ---- one segment ----

interface Segment {
  round: number;
  target: Target;
  version: Version;
  createsPerSecond: number;
  p50: number;
  p99: number;
  load1: number;
  failures: number;
  /** CPU of every process the bench samples over the segment (apiserver, etcd, webhooks, client). */
  cpuMs: number;
  creates: number;
  seconds: number;
}

/**
 * A round's segments: each version's two targets back to back, so a pair
 * shares the same minute of the machine, and who goes first alternates from
 * one pair to the next (over two rounds each version has each target first
 * once: a slow start or a slow end of a pair falls on both alike).
 */
function roundOrder(round: number): [Target, Version][] {
  const versions: Version[] = round % 2 === 1 ? ["v1", "v2"] : ["v2", "v1"];
  return versions.flatMap((version, i): [Target, Version][] => {
    const operatorFirst = (2 * (round - 1) + i) % 2 === 0;
    const targets: Target[] = operatorFirst ? ["operator", "floor"] : ["floor", "operator"];
    return targets.map((t): [Target, Version] => [t, version]);
  });
}

async function creates(
  kube: KubeClient,
  target: Target,
  version: Version,
  prefix: string,
  count = CREATES,
): Promise<{ ms: number[]; seconds: number; failures: number }> {
  const path = `/apis/${groupOf(target)}/${version}/namespaces/${NS}/${PLURAL}`;
  const ms: number[] = [];
  let next = 0;
  let failures = 0;
  const t0 = performance.now();
  const worker = async (): Promise<void> => {
    while (next < count) {
      const i = next++;
      const start = performance.now();
      try {
        await kube.json("POST", path, {
          body: route(groupOf(target), version, `${prefix}-${i}`),
          timeoutMs: 30_000,
        });
        ms.push(performance.now() - start);
      } catch (e) {
        failures++;
        if (failures <= 3) console.error(`  create ${prefix}-${i} failed: ${(e as Error).message}`);
      }
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  return { ms: ms.sort((a, b) => a - b), seconds: (performance.now() - t0) / 1000, failures };
}

/**
 * Deletes a target's routes through its storage version (no conversion of the
 * whole collection), and waits until they are gone: the operator's wait for
 * the watcher to release each finalizer. A deletecollection that outlasts the
 * apiserver's own timeout is sent again while routes remain.
 */
async function deleteAll(kube: KubeClient, target: Target, storage: Version): Promise<void> {
  const path = `/apis/${groupOf(target)}/${storage}/namespaces/${NS}/${PLURAL}`;
  const deadline = Date.now() + DELETE_TIMEOUT_MS;
  for (;;) {
    try {
      await kube.json("DELETE", path, { timeoutMs: 90_000 });
    } catch (e) {
      console.error(`  deletecollection of the ${target}'s routes: ${(e as Error).message}`);
    }
    for (let i = 0; i < 60; i++) {
      const list = await kube.json<{ items: unknown[] }>("GET", path, { query: { limit: 1 } });
      if (list.items.length === 0) return;
      if (Date.now() > deadline)
        throw new Error(`the ${target}'s routes were not gone in ${DELETE_TIMEOUT_MS} ms`);
      await sleep(500);
    }
  }
}

// ---- main ----

async function main(): Promise<void> {
  const teardown = new Teardown();
  const stop = (): void => {
    void teardown.run().then(() => process.exit(130));
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  try {
    await run(teardown);
  } finally {
    const errors = await teardown.run();
    for (const e of errors) console.error(`teardown: ${e}`);
  }
}

async function run(teardown: Teardown): Promise<void> {
  const progress = (m: string): void => console.error(`# ${m}`);
  const noop = await startNoop(teardown);
  for (const dir of [CPU_PROF_DIR, APISERVER_PROF_DIR]) if (dir) mkdirSync(dir, { recursive: true });
  const env = await startDemoEnvironment(
    {
      runId: `writepath${process.pid}`,
      workloads: false,
      progress,
      chartArgs: [
        ...(STORAGE ? ["--set", `crd.storageVersion=${STORAGE}`] : []),
        "--set",
        `webhook.finalizerPolicy=${FINALIZER_POLICY}`,
      ],
      ...(DATAPLANE === "xds" ? { serveArgs: ["--dataplane", "xds", "--xds-listen", "127.0.0.1:0"] } : {}),
      ...(CPU_PROF_DIR ? { serveEnv: profiledEnv(CPU_PROF_DIR), watchEnv: profiledEnv(CPU_PROF_DIR) } : {}),
    },
    teardown,
  );
  const { cp, serve } = env;
  const kubectl = (args: string[], input?: string) => cp.kubectl(args, input === undefined ? {} : { input });
  const crd = JSON.parse(
    await must("kubectl get crd", kubectl(["get", "crd", `${PLURAL}.${GROUP}`, "-o", "json"])),
  ) as {
    spec: { versions: { name: Version; storage: boolean }[] };
  };
  const storage = crd.spec.versions.find((v) => v.storage)?.name ?? "v1";
  progress(
    `the chart's CRD stores ${storage}; the floor's copy (${FLOOR_GROUP}) stores ${storage} too, conversion ${FLOOR_CONVERSION}`,
  );
  await must(
    "kubectl apply (floor)",
    kubectl(
      ["apply", "-f", "-"],
      floorManifests(noop, storage)
        .map((d) => toYaml(d))
        .join("---\n"),
    ),
  );
  await must(
    "kubectl wait crd",
    kubectl(["wait", "--for=condition=Established", `crd/${PLURAL}.${FLOOR_GROUP}`, "--timeout=60s"]),
  );
  await must(
    "namespace and Service",
    kubectl(
      ["apply", "-f", "-"],
      toYaml({
        apiVersion: "v1",
        kind: "List",
        items: [
          { apiVersion: "v1", kind: "Namespace", metadata: { name: NS } },
          {
            apiVersion: "v1",
            kind: "Service",
            metadata: { name: "checkout", namespace: NS },
            spec: { ports: [{ port: 8080 }], selector: { app: "checkout" } },
          },
        ],
      }),
    ),
  );
  const kube = cp.kube();
  // Both targets answer a create before the first segment (discovery, webhook client caches).
  for (const target of TARGETS) {
    await waitFor(
      `a ${target} create`,
      async () => {
        try {
          await kube.json("POST", `/apis/${groupOf(target)}/v2/namespaces/${NS}/${PLURAL}`, {
            body: route(groupOf(target), "v2", `warm-${target}`),
          });
          return true;
        } catch {
          return undefined;
        }
      },
      60_000,
      500,
    );
    await deleteAll(kube, target, storage);
  }

  const access = loadKubeConfig(cp.kubeconfig);
  const apiserverTls = { ca: access?.tls.ca, cert: access?.tls.cert, key: access?.tls.key };
  const apiserverMetrics = async (): Promise<Sample> =>
    parseMetrics(
      await httpsText(`${cp.server}/metrics`, apiserverTls),
      /^apiserver_(admission_webhook_admission_duration_seconds_(sum|count)|webhooks_conversion_request_total|conversion_webhook_duration_seconds_(sum|count)|crd_conversion_webhook_duration_seconds_(sum|count))$|^apiserver_request_total$/,
      ["name", "crd_name", "from_version", "to_version", "verb", "resource", "group", "subresource"],
    );
  const serverMetrics = async (): Promise<Sample> =>
    parseMetrics(
      await httpsText(`${serve.url}/metrics`, { ca: serve.caPem }),
      /^(edge_operator_http_(request_duration_seconds_(sum|count)|connections_total)|nodejs_eventloop_lag_(p50|p99|max)_seconds)$/,
      ["route"],
    );

  // Between segments: the watcher's last reconciles, then the conversions the
  // apiserver's watch caches still owe (counted by the apiserver, for both CRDs).
  const conversionCalls = async (): Promise<number> =>
    [...(await apiserverMetrics())]
      .filter(([k]) => k.startsWith("apiserver_crd_conversion_webhook_duration_seconds_count"))
      .reduce((sum, [, v]) => sum + v, 0);
  const settle = async (): Promise<void> => {
    await sleep(SETTLE_MS);
    if (QUIET_CONVERSION_MS <= 0) return;
    const { seconds, moved } = await untilFlat(conversionCalls, QUIET_CONVERSION_MS, SETTLE_MAX_MS);
    progress(
      `settled: ${fmt(seconds, 1)} s until no conversion call for ${QUIET_CONVERSION_MS / 1000} s (${moved} calls meanwhile)`,
    );
  };

  // What the floor's copy keeps of a v1 create: with conversion None (or the
  // webhook that only rewrites apiVersion) the v1 fields are stored under v2
  // and pruned by v2's schema when read. Such a floor is cheaper for v1 by not
  // converting, and a CRD with two shapes cannot work that way; `fields` keeps them.
  {
    const path = (v: Version): string => `/apis/${FLOOR_GROUP}/${v}/namespaces/${NS}/${PLURAL}`;
    await kube.json("POST", path("v1"), { body: route(FLOOR_GROUP, "v1", "probe") });
    for (const v of VERSIONS) {
      const got = await kube.json<{ spec?: unknown }>("GET", `${path(v)}/probe`);
      progress(`the floor's copy, a v1 create read back as ${v}: spec ${JSON.stringify(got.spec ?? null)}`);
    }
    await deleteAll(kube, "floor", storage);
  }

  // One untimed segment per target and version first: the first burst after
  // start-up found cold JITs and caches (the first measured segment ran up to
  // 1.6x slower than the same segment in later rounds).
  for (const target of TARGETS) {
    for (const version of VERSIONS) {
      if (ONLY_VERSION && version !== ONLY_VERSION) continue;
      const r = await creates(kube, target, version, `warmup-${version}`, WARMUP_CREATES);
      progress(`warm-up ${target} ${version}: ${fmt(r.ms.length / r.seconds, 0)} creates/s`);
      await deleteAll(kube, target, storage);
      await settle();
    }
  }

  const segments: Segment[] = [];
  console.log(
    `write path: ${CREATES} creates per segment, ${IN_FLIGHT} in flight, ${ROUNDS} rounds, storage ${storage}, floor conversion ${FLOOR_CONVERSION}, data plane ${DATAPLANE}, finalizer policy ${FINALIZER_POLICY}`,
  );
  console.log(
    `machine: ${os.cpus().length} x ${os.cpus()[0]?.model ?? "?"}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, node ${process.version}`,
  );
  for (let round = 1; round <= ROUNDS; round++) {
    const turn = roundOrder(round).filter(([, version]) => !ONLY_VERSION || version === ONLY_VERSION);
    for (const [target, version] of turn) {
      const load1 = os.loadavg()[0] ?? NaN;
      const before = [await apiserverMetrics(), await serverMetrics()] as const;
      const cpuBefore = sampleCpu(classifyProcess);
      const profile = APISERVER_PROF_DIR
        ? httpsBytes(
            `${cp.server}/debug/pprof/profile?seconds=${APISERVER_PROF_SECONDS}`,
            apiserverTls,
            (APISERVER_PROF_SECONDS + 30) * 1000,
          )
        : undefined;
      // serve's, watch's and the no-op's profiles are cut before and after the segment: their part N+1 is this segment alone.
      const cutProfiles = (): void => {
        if (!CPU_PROF_DIR) return;
        for (const role of ["serve", "watch", "no-op webhooks"])
          for (const pid of pidsOf(classifyProcess, role)) process.kill(pid, "SIGUSR2");
      };
      cutProfiles();
      const window = [process.hrtime.bigint()];
      const r = await creates(kube, target, version, `r${round}-${version}`);
      window.push(process.hrtime.bigint());
      cutProfiles();
      if (profile && APISERVER_PROF_DIR) {
        const file = `${APISERVER_PROF_DIR}/apiserver-r${round}-${target}-${version}.pprof`;
        writeFileSync(file, await profile);
        console.log(`    kube-apiserver CPU profile: ${file}`);
      }
      const cpuAfter = sampleCpu(classifyProcess);
      const after = [await apiserverMetrics(), await serverMetrics()] as const;
      const seg: Segment = {
        round,
        target,
        version,
        createsPerSecond: r.ms.length / r.seconds,
        p50: percentile(r.ms, 50),
        p99: percentile(r.ms, 99),
        load1,
        failures: r.failures,
        cpuMs: 1000 * [...cpuAfter].reduce((sum, [name, t]) => sum + t - (cpuBefore.get(name) ?? 0), 0),
        creates: r.ms.length,
        seconds: r.seconds,
      };
      segments.push(seg);
      console.log(
        `round ${round} ${target.padEnd(8)} ${version}: ${fmt(seg.createsPerSecond, 0)} creates/s, p50 ${fmt(seg.p50, 1)} ms, p99 ${fmt(seg.p99, 1)} ms, load1 ${fmt(load1, 2)}${r.failures ? `, ${r.failures} FAILED` : ""}`,
      );
      console.log(`    CPU per create: ${describeCpu(cpuAfter, cpuBefore, r.ms.length)}`);
      // CLOCK_MONOTONIC seconds, for a system-wide profiler's time filter (`perf record -k mono`, `perf report --time`).
      console.log(`    window: ${window.map((t) => (Number(t / 1000n) / 1e6).toFixed(6)).join(",")}`);
      // The route requests of this segment's group (the other target's series stay flat), and any
      // other request of a rate that counts: the operator's own (leases, events, Secrets) included.
      const apiserverDiff = new Map(
        [...diff(after[0], before[0])].filter(
          ([k, v]) =>
            !k.startsWith("apiserver_request_total{") || k.includes("edgeroutes") || v / CREATES >= 0.05,
        ),
      );
      const lines = describeHistograms(apiserverDiff, CREATES);
      for (const l of [...lines, ...describeHistograms(diff(after[1], before[1]), CREATES)]) console.log(l);
      // Gauges over the segment: prom-client resets its event-loop delay histogram at each scrape.
      const lag = (q: string): string =>
        fmt(1000 * (after[1].get(`nodejs_eventloop_lag_${q}_seconds{}`) ?? NaN), 1);
      console.log(
        `    serve's event-loop delay: p50 ${lag("p50")} ms, p99 ${lag("p99")} ms, max ${lag("max")} ms`,
      );
      await deleteAll(kube, target, storage);
      await settle();
    }
  }

  console.log("\nsummary (per round: operator / floor, back to back in the same round)");
  for (const version of VERSIONS) {
    const pairs: { ratio: number; dp50: number; cpuRatio: number }[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const op = segments.find((s) => s.round === round && s.version === version && s.target === "operator");
      const fl = segments.find((s) => s.round === round && s.version === version && s.target === "floor");
      if (!op || !fl) continue;
      const pair = {
        ratio: op.createsPerSecond / fl.createsPerSecond,
        dp50: op.p50 - fl.p50,
        cpuRatio: fl.cpuMs / fl.creates / (op.cpuMs / op.creates),
      };
      pairs.push(pair);
      console.log(
        `  ${version} round ${round}: operator ${fmt(op.createsPerSecond, 0)}/s p50 ${fmt(op.p50, 1)} p99 ${fmt(op.p99, 1)}; floor ${fmt(fl.createsPerSecond, 0)}/s p50 ${fmt(fl.p50, 1)} p99 ${fmt(fl.p99, 1)}; ratio ${fmt(pair.ratio, 2)}, p50 ${pair.dp50 >= 0 ? "+" : ""}${fmt(pair.dp50, 1)} ms; CPU per create, floor / operator ${fmt(pair.cpuRatio, 2)}`,
      );
    }
    if (pairs.length === 0) continue;
    // Over the run: creates over seconds summed per target (a slow segment weighs as long as it lasted).
    const total = (t: Target): { rate: number; cpuPerCreate: number } => {
      const mine = segments.filter((s) => s.version === version && s.target === t);
      const creates = mine.reduce((n, s) => n + s.creates, 0);
      return {
        rate: creates / mine.reduce((n, s) => n + s.seconds, 0),
        cpuPerCreate: mine.reduce((n, s) => n + s.cpuMs, 0) / creates,
      };
    };
    const [op, fl] = [total("operator"), total("floor")];
    const ratios = summarize(pairs.map((p) => p.ratio));
    console.log(
      `  ${version} over ${pairs.length} rounds: ratio median ${fmt(ratios.p50, 2)} (${fmt(ratios.min, 2)}-${fmt(ratios.max, 2)}), p50 difference median ${fmt(summarize(pairs.map((p) => p.dp50)).p50, 1)} ms; whole run ${fmt(op.rate, 0)}/s against ${fmt(fl.rate, 0)}/s = ${fmt(op.rate / fl.rate, 2)}, CPU per create ${fmt(op.cpuPerCreate, 2)} against ${fmt(fl.cpuPerCreate, 2)} ms = ${fmt(fl.cpuPerCreate / op.cpuPerCreate, 2)}`,
    );
  }
  if (JSON_OUT)
    writeFileSync(
      JSON_OUT,
      JSON.stringify({ storage, creates: CREATES, inFlight: IN_FLIGHT, segments }, null, 2),
    );
}

if (process.argv.includes("--noop")) await noopServer();
else await main();
