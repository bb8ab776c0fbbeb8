// Abuse benchmark: what one attacker inside the cluster does to admission.
//
// The operator runs as the demo runs it (a real kube-apiserver and etcd, the
// chart installed out of cluster, `serve --dataplane xds` with TLS on the ADS
// port and the chart's NODE_OPTIONS, the watcher). A probe POSTs a valid
// AdmissionReview to /validate every 20 ms on one kept-alive connection, as
// the apiserver's pooled client does, and times each answer from when it was
// due (open loop: a stalled server shows, no coordinated omission). Each run
// measures the floor (no attack) and then each attack in turn, every one
// from a child process of its own (abuse-attack.ts) so the attacker's work
// does not slow the probe's event loop:
//   delta-names  a Delta stream subscribing to 1,000,000 route-configuration names
//   delta-streams 64 Delta streams from one address, 9,000 route-configuration names each
//   idle-ads     12,000 idle TCP connections to the ADS port
//   idle-https   12,000 idle TLS connections to the HTTPS port
//   slow-body    five chunked POSTs trickling 21 MB each to /validate, again and again
// For each: probe p50/p99/max and failures, the server's peak RSS (its
// memory limit in the chart: 768 MiB), whether it stayed up, and what the
// attacker met.
//
// Run: npm run bench:abuse   (RUNS, SECONDS, CONNECTIONS, ATTACKS to change the defaults)

import { readFileSync, writeFileSync } from "node:fs";
import https from "node:https";
import os from "node:os";
import path from "node:path";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { startDemoEnvironment } from "../tools/demo/environment.js";
import { Teardown } from "../tools/demo/teardown.js";
import { freePort, sleep } from "../tools/testenv/process.js";
import { pidsOf, type Classify } from "./process-cpu.js";
import { fmt, percentile } from "./stats.js";

const RUNS = Number(process.env.RUNS ?? 3);
const SECONDS = Number(process.env.SECONDS ?? 20);
const PROBE_MS = 20;
const ATTACKS = (process.env.ATTACKS ?? "delta-names,delta-streams,idle-ads,idle-https,slow-body").split(",");
const NODE_OPTIONS = "--enable-source-maps --max-old-space-size=384 --max-semi-space-size=4 --expose-gc";
const LIMIT_MIB = 768;
const HERE = path.dirname(fileURLToPath(import.meta.url));

const classify: Classify = (argv) => {
  const exe = argv[0] ?? "";
  if (/(^|\/)node$/.test(exe) && argv.some((a) => a.endsWith("cli/main.js")) && argv.includes("serve"))
    return "serve";
  return undefined;
};

function rssMiB(pid: number): number | undefined {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

function review(uid: string): string {
  const route = {
    apiVersion: "net.10xdev.io/v2",
    kind: "EdgeRoute",
    metadata: { name: "probe", namespace: "default" },
    spec: {
      hostnames: ["probe.example.com"],
      rules: [
        { matches: [{ path: { type: "PathPrefix", value: "/" } }], backends: [{ name: "svc", port: 80 }] },
      ],
    },
  };
  return JSON.stringify({
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    request: {
      uid,
      kind: { group: "net.10xdev.io", version: "v2", kind: "EdgeRoute" },
      resource: { group: "net.10xdev.io", version: "v2", resource: "edgeroutes" },
      operation: "CREATE",
      namespace: "default",
      name: "probe",
      userInfo: { username: "bench" },
      object: route,
    },
  });
}

interface Probe {
  readonly latencies: number[];
  failures: number;
  readonly failureKinds: Map<string, number>;
}

/** Open-loop probe for `seconds`: one request every PROBE_MS, latency from its due time. */
async function probe(url: string, ca: string, seconds: number): Promise<Probe> {
  const agent = new https.Agent({ ca, keepAlive: true, maxSockets: 1 });
  const out: Probe = { latencies: [], failures: 0, failureKinds: new Map() };
  const t0 = performance.now();
  const n = Math.floor((seconds * 1000) / PROBE_MS);
  const fail = (kind: string) => {
    out.failures++;
    out.failureKinds.set(kind, (out.failureKinds.get(kind) ?? 0) + 1);
  };
  const calls: Promise<void>[] = [];
  for (let i = 0; i < n; i++) {
    const due = t0 + i * PROBE_MS;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    calls.push(
      new Promise<void>((resolve) => {
        const body = review(`probe-${i}`);
        // From when it was due, or when it went if a timer fired a little early.
        const from = Math.min(due, performance.now());
        const req = https.request(
          `${url}/validate`,
          { method: "POST", agent, headers: { "content-type": "application/json" }, timeout: 10_000 },
          (res) => {
            res.resume();
            res.on("end", () => {
              if (res.statusCode === 200) out.latencies.push(performance.now() - from);
              else fail(String(res.statusCode));
              resolve();
            });
          },
        );
        req.on("timeout", () => req.destroy(new Error("timeout")));
        req.on("error", (e) => {
          fail(e.message.slice(0, 40));
          resolve();
        });
        req.end(body);
      }),
    );
  }
  await Promise.all(calls);
  agent.destroy();
  return out;
}

function attack(kind: string, args: string[]): { done: Promise<string> } {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", path.join(HERE, "abuse-attack.ts"), kind, ...args],
    {
      env: { ...process.env, SECONDS: String(SECONDS) },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let out = "";
  let err = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (err += d.toString()));
  return {
    done: new Promise((resolve) =>
      child.on("exit", (code) => resolve(code === 0 ? out.trim() : `exit ${code}: ${err.slice(-300)}`)),
    ),
  };
}

async function main(): Promise<void> {
  const teardown = new Teardown();
  const progress = (m: string) => process.stderr.write(`[abuse] ${m}\n`);
  const adsPort = await freePort();
  try {
    const env = await startDemoEnvironment(
      {
        runId: `abuse${process.pid}`,
        workloads: false,
        progress,
        serveArgs: ["--dataplane", "xds", "--xds-listen", `127.0.0.1:${adsPort}`],
        serveEnv: { NODE_OPTIONS, MALLOC_ARENA_MAX: "2" },
      },
      teardown,
    );
    const { serve } = env;
    const caFile = path.join(os.tmpdir(), `abuse-ca-${process.pid}.crt`);
    writeFileSync(caFile, serve.caPem);
    const [pid] = pidsOf(classify, "serve");
    if (pid === undefined) throw new Error("no serve process found");
    const lines: string[] = [];
    const load = () =>
      os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(" ");
    lines.push(
      `machine: ${os.cpus().length} × ${os.cpus()[0]?.model ?? "?"}, ${fmt(os.totalmem() / 2 ** 30, 1)} GiB; load at start ${load()}`,
    );
    lines.push(
      "| run | phase | probe p50 ms | p99 ms | max ms | failed | p99 / floor p99 | serve peak RSS MiB | serve up | attacker saw |",
    );
    lines.push("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    await probe(serve.url, serve.caPem, 2); // warm-up
    for (let run = 1; run <= RUNS; run++) {
      let floorP99 = 0;
      for (const phase of ["floor", ...ATTACKS]) {
        let peak = rssMiB(pid) ?? 0;
        const sampler = setInterval(() => (peak = Math.max(peak, rssMiB(pid) ?? 0)), 100);
        const args =
          phase === "delta-names" || phase === "delta-streams"
            ? ["127.0.0.1", String(adsPort), caFile]
            : phase === "idle-ads"
              ? ["127.0.0.1", String(adsPort)]
              : ["127.0.0.1", String(serve.port), caFile];
        const a = phase === "floor" ? undefined : attack(phase, args);
        if (a) await sleep(1_000); // the attack under way before the probe counts
        const p = await probe(serve.url, serve.caPem, SECONDS - (a ? 2 : 0));
        const saw = a ? await a.done : "";
        clearInterval(sampler);
        const sorted = [...p.latencies].sort((x, y) => x - y);
        const p99 = percentile(sorted, 0.99);
        if (phase === "floor") floorP99 = p99;
        const up = rssMiB(pid) !== undefined;
        const failed =
          p.failures === 0
            ? "0"
            : `${p.failures} (${[...p.failureKinds].map(([k, v]) => `${k}: ${v}`).join(", ")})`;
        lines.push(
          `| ${run} | ${phase} | ${fmt(percentile(sorted, 0.5))} | ${fmt(p99)} | ${fmt(sorted.at(-1) ?? NaN)} | ${failed} | ${phase === "floor" ? "1.00" : fmt(p99 / floorP99)} | ${fmt(peak, 1)} (limit ${LIMIT_MIB}) | ${up ? "yes" : "NO"} | ${saw.replace(/\|/g, "/")} |`,
        );
        process.stderr.write(`${lines.at(-1)}\n`);
        if (!up) throw new Error(`serve died during ${phase}:\n${serve.output().slice(-2000)}`);
        await sleep(3_000); // the server lets go of what the attack left
      }
    }
    lines.push(`load at end ${load()}`);
    process.stdout.write(`${lines.join("\n")}\n`);
  } finally {
    await teardown.run();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
