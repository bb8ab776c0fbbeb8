// CPU time the server spends per admission and conversion request: the real app
// (createApp + startHttpsServer hosting /mutate, /validate and /convert) against a
// bare node:https handler that parses the review and answers allowed, or maps a
// ConversionReview's fields (the write-path bench's no-op webhooks), in one
// process, measured with process.cpuUsage() around a fixed number of requests
// sent by a child process over keep-alive HTTPS.
//
// Run: npx tsx bench/webhook-cpu.bench.ts   (N, CONNECTIONS, RUNS to change the defaults)

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

/** The load: N POSTs, CONNECTIONS at a time over keep-alive, in a child process so its CPU is not counted. */
async function client(): Promise<void> {
  process.on("message", async (m: { url: string; ca: string; body: string }) => {
    const agent = new https.Agent({ keepAlive: true, maxSockets: CONNECTIONS, ca: m.ca });
    let next = 0;
    const one = (): Promise<void> =>
      new Promise((resolve, reject) => {
        const req = https.request(
          m.url,
          { method: "POST", agent, headers: { "content-type": "application/json" } },
          (res) => {
            res.resume();
            res.on("end", () =>
              res.statusCode === 200 ? resolve() : reject(new Error(`status ${res.statusCode}`)),
            );
          },
        );
        req.on("error", reject);
        req.end(m.body);
      });
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async () => {
        while (next++ < N) await one();
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
  const measure = async (url: string, body: string): Promise<number> => {
    const t0 = process.cpuUsage();
    child.send({ url, ca: ca.cert, body });
    await new Promise((r) => child.once("message", r));
    const d = process.cpuUsage(t0);
    return (d.user + d.system) / N;
  };
  const targets: [string, string, string][] = [
    ["no-op (node:https)", `${bareUrl}/`, review("v2")],
    ["/mutate v1", `${appUrl}/mutate`, review("v1")],
    ["/mutate v2", `${appUrl}/mutate`, review("v2")],
    ["/validate v1", `${appUrl}/validate`, review("v1")],
    ["/validate v2", `${appUrl}/validate`, review("v2")],
    ["no-op convert v1→v2", `${bareUrl}/`, conversionReview("v1")],
    ["/convert v1→v2", `${appUrl}/convert`, conversionReview("v1")],
    ["no-op convert v2→v1", `${bareUrl}/`, conversionReview("v2")],
    ["/convert v2→v1", `${appUrl}/convert`, conversionReview("v2")],
  ];
  await measure(`${appUrl}/mutate`, review("v2")); // warm-up
  await measure(`${bareUrl}/`, review("v2"));
  const results = new Map<string, number[]>();
  for (let run = 0; run < RUNS; run++) {
    for (const [name, url, body] of targets.filter(([n]) => n.includes(ONLY))) {
      const us = await measure(url, body);
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
