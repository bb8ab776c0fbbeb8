// Conversion benchmark: one ConversionReview of 10,000 objects.
//   in-process: handleConversionReview on the parsed review (the converter alone), objects/s;
//   over HTTPS: the same review posted to /convert on the real app (createApp + TLS from
//   src/server), against a floor in the same server: /floor parses the same review and sends
//   the objects back unconverted, so JSON and TLS are paid and conversion is not.
// The server runs in a child process (this file with --server) so the client does not
// share its event loop. Run: npm run bench:conversion

import { fork } from "node:child_process";
import https from "node:https";
import os from "node:os";
import { fileURLToPath } from "node:url";
import fc from "fast-check";
import { type EdgeRoute } from "../src/api/types.js";
import { createCa, issueCertificate } from "../src/certs/pki.js";
import { toV1 } from "../src/conversion/convert.js";
import {
  conversionHandler,
  handleConversionReview,
  REVIEW_API_VERSION,
  REVIEW_KIND,
} from "../src/server/conversion-review.js";
import { routeV1, routeV2 } from "../test/fixtures/route-arbitraries.js";
import { createApp } from "../src/server/app.js";
import { startHttpsServer } from "../src/server/https.js";
import { MiB, type JsonHandler } from "../src/server/json-handler.js";
import { createLogger } from "../src/observability/logger.js";
import { createRegistry, createServerMetrics } from "../src/observability/metrics.js";

const N = 10_000;
const RUNS = Number(process.env.RUNS ?? 15);
const HTTPS_RUNS = Number(process.env.HTTPS_RUNS ?? 9);
const LIMIT = 64 * MiB;

interface ServerReady {
  port: number;
  caPem: string;
}

/** The floor: parse (done by the app), then answer with the objects as they came. */
const floorRoute: JsonHandler = {
  path: "/floor",
  limit: LIMIT,
  handle(body) {
    const req = (body as { request: { uid: string; objects: unknown[] } }).request;
    return {
      status: 200,
      body: {
        apiVersion: REVIEW_API_VERSION,
        kind: REVIEW_KIND,
        response: { uid: req.uid, convertedObjects: req.objects, result: { status: "Success" } },
      },
    };
  },
};

async function server(): Promise<void> {
  const ca = createCa();
  const pair = issueCertificate(ca, { commonName: "127.0.0.1", ips: ["127.0.0.1"], usage: "server" });
  const log = createLogger();
  const metrics = createServerMetrics(createRegistry());
  const app = createApp({
    handlers: [conversionHandler(LIMIT, metrics), floorRoute],
    ready: () => true,
    log,
    metrics,
  });
  const running = await startHttpsServer(app, { host: "127.0.0.1", port: 0, tls: pair, drainMs: 100, log });
  process.send?.({ port: running.address.port, caPem: ca.cert } satisfies ServerReady);
  process.on("disconnect", () => void running.stop().then(() => process.exit(0)));
}

function objectsFor(seed: number): { v1Plain: EdgeRoute[]; v1Annotated: EdgeRoute[]; v2: EdgeRoute[] } {
  const quarter = N / 4;
  const v1Plain = fc.sample(routeV1, { numRuns: quarter, seed });
  const v2 = fc.sample(routeV2, { numRuns: N / 2, seed: seed + 1 });
  const v1Annotated = fc.sample(routeV2, { numRuns: quarter, seed: seed + 2 }).map(toV1);
  return { v1Plain, v1Annotated, v2 };
}

function review(objects: EdgeRoute[], desiredAPIVersion: string): unknown {
  return {
    apiVersion: REVIEW_API_VERSION,
    kind: REVIEW_KIND,
    request: { uid: "bench", desiredAPIVersion, objects },
  };
}

function percentile(sorted: number[], p: number): number {
  const i = Math.min(sorted.length - 1, Math.max(0, Math.round((p / 100) * (sorted.length - 1))));
  return sorted[i] as number;
}

function stats(xs: number[]): { median: number; p10: number; p90: number; min: number; max: number } {
  const s = [...xs].sort((a, b) => a - b);
  return {
    median: percentile(s, 50),
    p10: percentile(s, 10),
    p90: percentile(s, 90),
    min: s[0] as number,
    max: s[s.length - 1] as number,
  };
}

/**
 * Per run, interleaved so both see the same machine: the converter alone on the parsed review
 * (objects/s), and the JSON floor the server pays anyway (parse the review, stringify it back).
 */
function inProcess(name: string, body: unknown): string {
  const text = JSON.stringify(body);
  // Objects as the server gets them: fresh from JSON.parse, not as the generators built them.
  const parsed = (): unknown => JSON.parse(text);
  for (let i = 0; i < 3; i++) handleConversionReview(parsed()); // warm up the JIT
  const rates: number[] = [];
  const cpuRates: number[] = [];
  const floorRates: number[] = [];
  const ratios: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const review = parsed();
    const cpu0 = process.cpuUsage();
    let t0 = process.hrtime.bigint();
    const reply = handleConversionReview(review);
    const convertMs = Number(process.hrtime.bigint() - t0) / 1e6;
    const cpu = process.cpuUsage(cpu0);
    cpuRates.push(N / ((cpu.user + cpu.system) / 1e6));
    const res = (reply.body as { response: { result: { status: string } } }).response;
    if (res.result.status !== "Success") throw new Error(`${name}: ${JSON.stringify(res.result)}`);
    t0 = process.hrtime.bigint();
    JSON.stringify(JSON.parse(text));
    const floorMs = Number(process.hrtime.bigint() - t0) / 1e6;
    rates.push(N / (convertMs / 1000));
    floorRates.push(N / (floorMs / 1000));
    ratios.push(convertMs / floorMs);
  }
  const [s, c, f, r] = [stats(rates), stats(cpuRates), stats(floorRates), stats(ratios)];
  const k = (x: number) => `${Math.round(x / 1000)}k`;
  return `| ${name} | ${k(s.median)} (${k(s.p10)} – ${k(s.p90)}) | ${k(c.median)} (${k(c.p10)} – ${k(c.p90)}) | ${k(f.median)} (${k(f.p10)} – ${k(f.p90)}) | ${r.median.toFixed(2)} (${r.p10.toFixed(2)} – ${r.p90.toFixed(2)}) |`;
}

function post(
  port: number,
  agent: https.Agent,
  path: string,
  body: Buffer,
): Promise<{ ms: number; status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const req = https.request(
      {
        host: "127.0.0.1",
        port,
        path,
        method: "POST",
        agent,
        headers: { "content-type": "application/json", "content-length": body.length },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () =>
          resolve({
            ms: Number(process.hrtime.bigint() - t0) / 1e6,
            status: res.statusCode ?? 0,
            text: Buffer.concat(chunks).toString("utf8"),
          }),
        );
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

async function overHttps(ready: ServerReady, name: string, body: unknown): Promise<string> {
  const agent = new https.Agent({ ca: ready.caPem, keepAlive: true, maxSockets: 1 });
  const bytes = Buffer.from(JSON.stringify(body));
  // Check the answers once, then time floor and convert alternately, so both see the same noise.
  for (const path of ["/floor", "/convert"]) {
    const r = await post(ready.port, agent, path, bytes);
    const parsed = JSON.parse(r.text) as {
      response: { result: { status: string }; convertedObjects: unknown[] };
    };
    if (
      r.status !== 200 ||
      parsed.response.result.status !== "Success" ||
      parsed.response.convertedObjects.length !== N
    ) {
      throw new Error(`${name} ${path}: ${r.status} ${r.text.slice(0, 300)}`);
    }
  }
  const floor: number[] = [];
  const convert: number[] = [];
  const ratios: number[] = [];
  for (let i = 0; i < HTTPS_RUNS; i++) {
    const f = (await post(ready.port, agent, "/floor", bytes)).ms;
    const c = (await post(ready.port, agent, "/convert", bytes)).ms;
    floor.push(f);
    convert.push(c);
    ratios.push(c / f);
  }
  agent.destroy();
  const [f, c, r] = [stats(floor), stats(convert), stats(ratios)];
  const mb = (bytes.length / MiB).toFixed(1);
  return `| ${name} | ${mb} MiB | ${f.median.toFixed(0)} (${f.p10.toFixed(0)} – ${f.p90.toFixed(0)}) | ${c.median.toFixed(0)} (${c.p10.toFixed(0)} – ${c.p90.toFixed(0)}) | ${r.median.toFixed(2)}× (${r.min.toFixed(2)} – ${r.max.toFixed(2)}) |`;
}

async function main(): Promise<void> {
  const { v1Plain, v1Annotated, v2 } = objectsFor(42);
  const mixed = [...v1Plain, ...v1Annotated, ...v2];
  const cases: [string, unknown][] = [
    ["mixed → v2 (5,000 v1 convert, half annotated; 5,000 v2 pass)", review(mixed, "net.10xdev.io/v2")],
    ["mixed → v1 (5,000 v2 convert; 5,000 v1 pass)", review(mixed, "net.10xdev.io/v1")],
    [
      "v1 storage read as v2 (all 10,000 convert, half annotated)",
      review([...v1Plain, ...v1Annotated, ...v1Plain, ...v1Annotated], "net.10xdev.io/v2"),
    ],
    ["v2 written to v1 storage (all 10,000 convert)", review([...v2, ...v2], "net.10xdev.io/v1")],
  ];
  const cpus = os.cpus();
  console.log(
    `machine: ${cpus.length} × ${cpus[0]?.model ?? "cpu"}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}`,
  );
  console.log(
    `load average at start: ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")}`,
  );
  console.log(`\nin-process, ${N} objects per review, ${RUNS} runs: median (p10 – p90)\n`);
  console.log(
    "| review | convert, objects/s (wall) | convert, objects per CPU-second | JSON floor (parse + stringify), objects/s (wall) | convert time / floor time |\n| --- | --- | --- | --- | --- |",
  );
  for (const [name, body] of cases) console.log(inProcess(name, body));

  const child = fork(fileURLToPath(import.meta.url), ["--server"], {
    stdio: ["ignore", "inherit", "inherit", "ipc"],
    env: { ...process.env, LOG_LEVEL: "warn" },
  });
  const ready = await new Promise<ServerReady>((resolve, reject) => {
    child.once("message", (m) => resolve(m as ServerReady));
    child.once("exit", (code) => reject(new Error(`server exited with ${code}`)));
  });
  try {
    console.log(
      `\nover HTTPS (server in a child process), ${HTTPS_RUNS} runs each, ms: median (p10 – p90)\n`,
    );
    console.log(
      "| review | body | floor: parse + echo | /convert | ratio to floor: median (min – max) |\n| --- | --- | --- | --- | --- |",
    );
    for (const [name, body] of cases.slice(0, 3)) console.log(await overHttps(ready, name, body));
  } finally {
    child.disconnect();
  }
  console.log(
    `\nload average at end: ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")}`,
  );
}

if (process.argv.includes("--server")) await server();
else await main();
