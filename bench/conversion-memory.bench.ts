// Peak memory of `edge-operator serve` answering one large ConversionReview (a
// whole unpaginated LIST of v1 routes with managedFields, converted to v2): the
// server's VmHWM before and after, for each NODE_OPTIONS given, RUNS times each.
// A fresh server per run, so each peak is that review's alone.
//
//   npm run build && MIB=60 CONC=1 RUNS=3 npx tsx bench/conversion-memory.bench.ts \
//     "" "--max-old-space-size=384 --max-semi-space-size=4"

import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import https from "node:https";
import os from "node:os";
import path from "node:path";
import { createCa, issueCertificate } from "../src/certs/pki.js";
import { CLI } from "../tools/testenv/operator.js";
import { freePort, sleep } from "../tools/testenv/process.js";
import { fmt, summarize } from "./stats.js";

const MIB = Number(process.env.MIB ?? 60);
const CONC = Number(process.env.CONC ?? 1);
const RUNS = Number(process.env.RUNS ?? 3);
const OPTIONS = process.argv.length > 2 ? process.argv.slice(2) : [""];

const managedFields = Array.from({ length: 3 }, (_, k) => ({
  manager: `kubectl-${k}`,
  operation: "Update",
  apiVersion: "net.10xdev.io/v1",
  time: "2026-11-29T10:00:00Z",
  fieldsType: "FieldsV1",
  fieldsV1: {
    "f:spec": { "f:host": {}, "f:pathPrefix": {}, "f:port": {}, "f:service": {} },
    "f:status": { ".": {}, "f:conditions": {} },
  },
}));

function route(i: number) {
  const at = "2026-11-29T10:00:00Z";
  return {
    apiVersion: "net.10xdev.io/v1",
    kind: "EdgeRoute",
    metadata: {
      name: `r-${i}`,
      namespace: "bench",
      uid: `00000000-0000-0000-0000-${String(i).padStart(12, "0")}`,
      resourceVersion: String(1000 + i),
      generation: 1,
      creationTimestamp: at,
      finalizers: ["net.10xdev.io/deprogram"],
      managedFields,
    },
    spec: { host: `h${i % 50}.example.com`, pathPrefix: `/r/${i}`, service: "checkout", port: 8080 },
    status: {
      observedGeneration: 1,
      conditions: [
        {
          type: "Accepted",
          status: "True",
          reason: "Valid",
          message: "ok",
          observedGeneration: 1,
          lastTransitionTime: at,
        },
        {
          type: "Programmed",
          status: "True",
          reason: "Synced",
          message: "programmed",
          observedGeneration: 1,
          lastTransitionTime: at,
        },
      ],
    },
  };
}

const perObject = JSON.stringify(route(0)).length + 1;
const count = Math.floor((MIB * 1024 * 1024) / perObject);
const body = Buffer.from(
  JSON.stringify({
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "ConversionReview",
    request: {
      uid: "bench",
      desiredAPIVersion: "net.10xdev.io/v2",
      objects: Array.from({ length: count }, (_, i) => route(i)),
    },
  }),
);

function post(port: number, ca: string): Promise<{ status: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: "127.0.0.1",
        port,
        path: "/convert",
        method: "POST",
        ca,
        headers: { "content-type": "application/json", "content-length": body.length },
      },
      (res) => {
        let bytes = 0;
        res.on("data", (c: Buffer) => (bytes += c.length));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, bytes }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

function memoryMiB(pid: number): { rss: number; hwm: number } {
  const s = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (re: RegExp) => Number(re.exec(s)?.[1] ?? NaN) / 1024;
  return { rss: kb(/VmRSS:\s+(\d+)/), hwm: kb(/VmHWM:\s+(\d+)/) };
}

async function ready(port: number, ca: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    const ok = await new Promise<boolean>((resolve) => {
      https
        .get({ host: "127.0.0.1", port, path: "/readyz", ca }, (res) => {
          res.resume();
          resolve(res.statusCode === 200);
        })
        .on("error", () => resolve(false));
    });
    if (ok) return;
    await sleep(100);
  }
  throw new Error("serve did not become ready");
}

async function run(
  nodeOptions: string,
  dir: string,
  ca: string,
): Promise<{ before: number; peak: number; ms: number }> {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [
      CLI,
      "serve",
      "--listen",
      `127.0.0.1:${port}`,
      "--tls-cert",
      `${dir}/tls.crt`,
      "--tls-key",
      `${dir}/tls.key`,
    ],
    { env: { ...process.env, NODE_OPTIONS: nodeOptions, LOG_LEVEL: "warn" }, stdio: "inherit" },
  );
  try {
    await ready(port, ca);
    const before = memoryMiB(child.pid ?? 0).rss;
    const start = process.hrtime.bigint();
    const answers = await Promise.all(Array.from({ length: CONC }, () => post(port, ca)));
    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    for (const a of answers) if (a.status !== 200) throw new Error(`/convert answered ${a.status}`);
    return { before, peak: memoryMiB(child.pid ?? 0).hwm, ms };
  } finally {
    child.kill();
  }
}

const dir = mkdtempSync(path.join(os.tmpdir(), "conv-mem-"));
try {
  const authority = createCa({ commonName: "bench-ca" });
  const pair = issueCertificate(authority, { commonName: "127.0.0.1", ips: ["127.0.0.1"], usage: "server" });
  writeFileSync(`${dir}/tls.crt`, pair.cert);
  writeFileSync(`${dir}/tls.key`, pair.key);
  console.log(
    `machine: ${os.cpus().length} cores, load ${fmt(os.loadavg()[0] ?? NaN)}; review ${fmt(body.length / 1024 / 1024, 1)} MiB, ${count} objects, ${CONC} at once`,
  );
  for (const opts of OPTIONS) {
    const runs = [];
    for (let i = 0; i < RUNS; i++) runs.push(await run(opts, dir, authority.cert));
    const peak = summarize(runs.map((r) => r.peak));
    const ms = summarize(runs.map((r) => r.ms));
    console.log(
      `NODE_OPTIONS=${JSON.stringify(opts)}: RSS before ${fmt(summarize(runs.map((r) => r.before)).p50, 0)} MiB; peak p50 ${fmt(peak.p50, 0)} MiB (${fmt(peak.min, 0)}–${fmt(peak.max, 0)}); answered in p50 ${fmt(ms.p50, 0)} ms (${fmt(ms.min, 0)}–${fmt(ms.max, 0)})`,
    );
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
