// CPU time the server spends per admission and conversion request: the real app
// (createApp + startHttpsServer hosting /mutate, /validate and /convert) against a
// bare node:https handler that parses the review and answers allowed, or maps a
// ConversionReview's fields (the write-path bench's no-op webhooks), in one
// process, measured with process.cpuUsage() around a fixed number of requests
// sent by a child process over keep-alive HTTPS.
//
// Run: npx tsx bench/webhook-cpu.bench.ts   (N, CONNECTIONS, RUNS to change the defaults;
//   ONLY to run the targets whose name contains it; PROBE_MS to send a GET /healthz that often
//   during each run, as the kubelet's probes come)

import { fork } from "node:child_process";
import https from "node:https";
import { fileURLToPath } from "node:url";
import { createCa, issueCertificate } from "../src/certs/pki.js";
import { createApp } from "../src/server/app.js";
import { startHttpsServer } from "../src/server/https.js";
import { admissionHandlers } from "../src/server/admission-handlers.js";
import { conversionHandler } from "../src/server/conversion-review.js";
import { createLogger } from "../src/observability/logger.js";
import { createRegistry, createServerMetrics } from "../src/observability/metrics.js";
import { fmt } from "./stats.js";
import { noopAnswer } from "./floor-conversion.js";

const N = Number(process.env.N ?? 4000);
const CONNECTIONS = Number(process.env.CONNECTIONS ?? 16);
const RUNS = Number(process.env.RUNS ?? 3);
/** Only the targets whose name contains this (for a CPU profile of one). */
const ONLY = process.env.ONLY ?? "";
/** A GET /healthz (through express, as the kubelet's probes go) every PROBE_MS during each run; 0 for none. */
const PROBE_MS = Number(process.env.PROBE_MS ?? 0);

function review(version: "v1" | "v2"): string {
  return admissionReview(version, routeObject(version));
}

/** A ConversionReview of one route in `from`, to the other version (what the apiserver sends per object). */
function conversionReview(from: "v1" | "v2"): string {
  return JSON.stringify({
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "ConversionReview",
    request: {
      uid: "705ab4f5-6393-11e8-b7cc-42010a800003",
      desiredAPIVersion: `net.10xdev.io/${from === "v1" ? "v2" : "v1"}`,
      objects: [routeObject(from)],
    },
  });
}

/** The same route as a v1 or a v2 object, with the metadata the apiserver sends (managedFields of its version). */
function routeObject(version: "v1" | "v2"): object {
  const apiVersion = `net.10xdev.io/${version}`;
  const fields =
    version === "v1"
      ? { ".": {}, "f:host": {}, "f:pathPrefix": {}, "f:port": {}, "f:service": {} }
      : { ".": {}, "f:hostnames": {}, "f:rules": {} };
  const spec =
    version === "v1"
      ? { host: "r-1.example.com", pathPrefix: "/api", service: "checkout", port: 8080 }
      : {
          hostnames: ["r-1.example.com"],
          rules: [
            {
              matches: [{ path: { type: "PathPrefix", value: "/api" } }],
              backends: [{ name: "checkout", port: 8080 }],
            },
          ],
        };
  return {
    apiVersion,
    kind: "EdgeRoute",
    metadata: {
      name: "r-1",
      namespace: "bench",
      uid: "0f6a3b6c-5d0a-4a9e-9f0e-3f7d0e1c2b3a",
      generation: 1,
      creationTimestamp: "2026-01-01T00:00:00Z",
      managedFields: [
        {
          manager: "bench",
          operation: "Update",
          apiVersion,
          time: "2026-01-01T00:00:00Z",
          fieldsType: "FieldsV1",
          fieldsV1: { "f:spec": fields },
        },
      ],
    },
    spec,
  };
}

function admissionReview(version: "v1" | "v2", object: object): string {
  return JSON.stringify({
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    request: {
      uid: "705ab4f5-6393-11e8-b7cc-42010a800002",
      kind: { group: "net.10xdev.io", version, kind: "EdgeRoute" },
      resource: { group: "net.10xdev.io", version, resource: "edgeroutes" },
      requestKind: { group: "net.10xdev.io", version, kind: "EdgeRoute" },
      requestResource: { group: "net.10xdev.io", version, resource: "edgeroutes" },
      name: "r-1",
      namespace: "bench",
      operation: "CREATE",
      userInfo: { username: "admin", groups: ["system:masters", "system:authenticated"] },
      object,
      oldObject: null,
      dryRun: false,
      options: { apiVersion: "meta.k8s.io/v1", kind: "CreateOptions", fieldManager: "bench" },
    },
  });
}

interface Call {
  url: string;
  body: string;
}

/** The load: N POSTs (the calls given, in turn), CONNECTIONS at a time over keep-alive, in a child process so its CPU is not counted. */
async function client(): Promise<void> {
  process.on("message", async (m: { calls: Call[]; ca: string }) => {
    const agent = new https.Agent({ keepAlive: true, maxSockets: CONNECTIONS, ca: m.ca });
    let next = 0;
    const one = (call: Call): Promise<void> =>
      new Promise((resolve, reject) => {
        const req = https.request(
          call.url,
          { method: "POST", agent, headers: { "content-type": "application/json" } },
          (res) => {
            res.resume();
            res.on("end", () =>
              res.statusCode === 200 ? resolve() : reject(new Error(`status ${res.statusCode}`)),
            );
          },
        );
        req.on("error", reject);
        req.end(call.body);
      });
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async () => {
        while (next < N) await one(m.calls[next++ % m.calls.length] as Call);
      }),
    );
    agent.destroy();
    process.send?.("done");
  });
}

async function main(): Promise<void> {
  const ca = createCa();
  const pair = issueCertificate(ca, { commonName: "127.0.0.1", ips: ["127.0.0.1"], usage: "server" });
  const log = createLogger();
  const metrics = createServerMetrics(createRegistry());
  const app = createApp({
    handlers: [...admissionHandlers(undefined, { log, metrics }), conversionHandler(8 * 2 ** 20, metrics)],
    ready: () => true,
    log,
    metrics,
  });
  const running = await startHttpsServer(app, { host: "127.0.0.1", port: 0, tls: pair, drainMs: 100, log });
  const bare = https.createServer({ cert: pair.cert, key: pair.key, minVersion: "TLSv1.2" }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      // As the write path's no-op webhooks answer (FLOOR_CONVERSION=fields for a ConversionReview).
      const body = noopAnswer(Buffer.concat(chunks).toString("utf8"), "fields");
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
      res.end(body);
    });
  });
  bare.keepAliveTimeout = 95_000;
  await new Promise<void>((r) => bare.listen(0, "127.0.0.1", r));
  const bareUrl = `https://127.0.0.1:${(bare.address() as { port: number }).port}`;
  const appUrl = `https://127.0.0.1:${running.address.port}`;
  const child = fork(fileURLToPath(import.meta.url), ["--client"]);
  const probe = (): void => {
    https
      .get(`${appUrl}/healthz`, { ca: ca.cert, agent: false }, (res) => res.resume())
      .on("error", () => undefined);
  };
  const measure = async (calls: Call[]): Promise<number> => {
    const t0 = process.cpuUsage();
    const probes = PROBE_MS > 0 ? setInterval(probe, PROBE_MS) : undefined;
    child.send({ calls, ca: ca.cert });
    await new Promise((r) => child.once("message", r));
    clearInterval(probes);
    const d = process.cpuUsage(t0);
    return (d.user + d.system) / N;
  };
  const one = (url: string, body: string): Call[] => [{ url, body }];
  // What a v1 create sends its webhooks, in turn (BENCHMARKS.md, Write path: 1 /mutate, 1 /validate,
  // 1.0 v1 → v2 and 1.4 v2 → v1 conversions per create, here 2): the handlers' code meets every shape.
  const v1Create = (base: string, paths: [string, string, string]): Call[] => [
    { url: `${base}${paths[0]}`, body: review("v1") },
    { url: `${base}${paths[1]}`, body: review("v1") },
    { url: `${base}${paths[2]}`, body: conversionReview("v1") },
    { url: `${base}${paths[2]}`, body: conversionReview("v2") },
    { url: `${base}${paths[2]}`, body: conversionReview("v2") },
  ];
  const targets: [string, Call[]][] = [
    ["no-op (node:https)", one(`${bareUrl}/`, review("v2"))],
    ["/mutate v1", one(`${appUrl}/mutate`, review("v1"))],
    ["/mutate v2", one(`${appUrl}/mutate`, review("v2"))],
    ["/validate v1", one(`${appUrl}/validate`, review("v1"))],
    ["/validate v2", one(`${appUrl}/validate`, review("v2"))],
    ["no-op convert v1→v2", one(`${bareUrl}/`, conversionReview("v1"))],
    ["/convert v1→v2", one(`${appUrl}/convert`, conversionReview("v1"))],
    ["no-op convert v2→v1", one(`${bareUrl}/`, conversionReview("v2"))],
    ["/convert v2→v1", one(`${appUrl}/convert`, conversionReview("v2"))],
    ["no-op v1 create mix", v1Create(bareUrl, ["/", "/", "/"])],
    ["v1 create mix", v1Create(appUrl, ["/mutate", "/validate", "/convert"])],
  ];
  await measure(one(`${appUrl}/mutate`, review("v2"))); // warm-up
  await measure(one(`${bareUrl}/`, review("v2")));
  const results = new Map<string, number[]>();
  for (let run = 0; run < RUNS; run++) {
    for (const [name, calls] of targets.filter(([n]) => n.includes(ONLY))) {
      const us = await measure(calls);
      results.set(name, [...(results.get(name) ?? []), us]);
    }
  }
  console.log(
    `server CPU per request (µs, user+system), ${N} requests x ${RUNS} runs, ${CONNECTIONS} keep-alive connections`,
  );
  for (const [name, us] of results)
    console.log(`  ${name.padEnd(20)} ${us.map((u) => fmt(u, 0)).join(" / ")}`);
  child.kill();
  bare.close();
  await running.stop();
  process.exit(0);
}

if (process.argv.includes("--client")) await client();
else await main();
