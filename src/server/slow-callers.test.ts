// Slow callers must not starve the apiserver's requests of the body budget
// (memory-budget.ts) or hold it for long: five chunked connections from one
// address, each sending a large start and then a byte at a time, hold at most
// that address's share; reviews from another address are answered all along;
// a body that has not arrived by its deadline is answered 408, its budget back
// at once, its connection closed; headers that trickle are cut at their own
// deadline; a caller that stops reading a large answer is cut when its writes
// stand still. Two peers on loopback: 127.0.0.2 (the trickler, by
// `localAddress`) and 127.0.0.1.

import https from "node:https";
import tls from "node:tls";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCa, issueCertificate } from "../certs/pki.js";
import { serverDeps } from "../../test/fixtures/server-deps.js";
import { admissionHandlers } from "./admission-handlers.js";
import { createApp } from "./app.js";
import { conversionHandler } from "./conversion-review.js";
import { startHttpsServer, type RunningServer } from "./https.js";
import { MiB } from "./json-handler.js";
import { JsonShapeScanner } from "./json-shape.js";
import { MemoryBudget } from "./memory-budget.js";

const TRICKLER = "127.0.0.2";
const PROBE = "127.0.0.1";
const BODY_TIMEOUT_MS = 3_000;
const HEADERS_TIMEOUT_MS = 1_000;
const WRITE_STALL_TIMEOUT_MS = 1_000;

/** What each trickle sends at once: the start of a 1 MiB JSON string, the rest a byte at a time. */
const START = `{"kind":"AdmissionReview","s":"${"x".repeat(MiB)}`;
const startEstimate = (): number => {
  const scanner = new JsonShapeScanner(64);
  scanner.push(Buffer.from(START));
  return scanner.heapEstimate();
};
// Four starts fill a budget but for 1 KiB, less than a review takes (about
// 3 KiB): an attacker who sizes the trickles to the budget, as the attacker
// did; two of them fill one address's share.
const CAPACITY = 4 * startEstimate() + 1024;

const ca = createCa();
const small = new MemoryBudget("small", CAPACITY);
const conversion = new MemoryBudget("conversion", CAPACITY);
let server: RunningServer;

beforeAll(async () => {
  const deps = serverDeps();
  const app = createApp({
    handlers: [
      conversionHandler(64 * MiB, deps.metrics),
      ...admissionHandlers(undefined, deps),
      // A large answer, as a ConversionReview of a large LIST gets.
      {
        path: "/large-answer",
        limit: MiB,
        budget: "conversion",
        handle: () => ({ status: 200, body: Array.from({ length: 24 }, () => "y".repeat(MiB)) }),
      },
    ],
    ready: () => true,
    budgets: { small, conversion },
    bodyTimeoutMs: BODY_TIMEOUT_MS,
    ...deps,
  });
  server = await startHttpsServer(app, {
    host: "0.0.0.0",
    port: 0,
    tls: issueCertificate(ca, { commonName: "localhost", ips: ["127.0.0.1", "127.0.0.2"], usage: "server" }),
    headersTimeoutMs: HEADERS_TIMEOUT_MS,
    writeStallTimeoutMs: WRITE_STALL_TIMEOUT_MS,
    log: deps.log,
  });
});
afterAll(async () => {
  server.server.closeAllConnections();
  await server.stop();
});

const route = {
  apiVersion: "net.10xdev.io/v1",
  kind: "EdgeRoute",
  metadata: { name: "shop", namespace: "default", uid: "u-1" },
  spec: { host: "shop.example.com", pathPrefix: "/api", service: "checkout", port: 8080 },
};

const admissionReview = (uid: string) => ({
  apiVersion: "admission.k8s.io/v1",
  kind: "AdmissionReview",
  request: {
    uid,
    kind: { group: "net.10xdev.io", version: "v1", kind: "EdgeRoute" },
    resource: { group: "net.10xdev.io", version: "v1", resource: "edgeroutes" },
    namespace: "default",
    operation: "CREATE",
    object: route,
  },
});

const conversionReview = (uid: string) => ({
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "ConversionReview",
  request: { uid, desiredAPIVersion: "net.10xdev.io/v2", objects: [route] },
});

/** One review, as the apiserver sends it: the body whole, at once. */
function probe(path: string, body: unknown): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: "127.0.0.1",
        port: server.address.port,
        path,
        method: "POST",
        ca: ca.cert,
        localAddress: PROBE,
        agent: false,
        headers: { "content-type": "application/json" },
        timeout: 5_000,
      },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
      },
    );
    req.on("timeout", () => req.destroy(new Error("no answer in 5 s")));
    req.on("error", reject);
    req.end(JSON.stringify(body));
  });
}

interface Trickle {
  /** The answer's status and when it came, from the first byte sent; or status 0 for a cut connection. */
  readonly answered: Promise<{ status: number; afterMs: number; reason: string; message: string }>;
  /** When the connection closed, from the first byte sent. */
  readonly closed: Promise<number>;
}

/** A chunked POST: START at once, then one byte every 250 ms, for at most 10 s. */
function trickle(path: string): Trickle {
  const started = Date.now();
  const req = https.request({
    host: "127.0.0.1",
    port: server.address.port,
    path,
    method: "POST",
    ca: ca.cert,
    localAddress: TRICKLER,
    agent: false,
    headers: { "content-type": "application/json" },
  });
  const answered = new Promise<{ status: number; afterMs: number; reason: string; message: string }>(
    (resolve) => {
      req.on("response", (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          const json = (text ? JSON.parse(text) : {}) as { reason?: string; message?: string };
          resolve({
            status: res.statusCode ?? 0,
            afterMs: Date.now() - started,
            reason: json.reason ?? "",
            message: json.message ?? "",
          });
        });
      });
      req.on("error", () => resolve({ status: 0, afterMs: Date.now() - started, reason: "", message: "" }));
    },
  );
  req.write(START);
  let ticks = 0;
  const timer = setInterval(() => {
    if (++ticks > 40 || req.destroyed) return void req.destroy();
    req.write("x");
  }, 250);
  const closed = new Promise<number>((resolve) => {
    req.on("close", () => {
      clearInterval(timer);
      resolve(Date.now() - started);
    });
  });
  return { answered, closed };
}

describe("bodies that trickle", () => {
  it("hold at most their address's share of the budget, while another address is answered; each is answered 408 at its deadline and gives its budget back", async () => {
    // Five on each budget, where four fill it.
    const tricklers = [
      ...Array.from({ length: 5 }, () => trickle("/validate")),
      ...Array.from({ length: 5 }, () => trickle("/convert")),
    ];
    await expect.poll(() => small.inUse, { timeout: 5_000 }).toBeGreaterThanOrEqual(CAPACITY / 2 - 1024);
    await expect.poll(() => conversion.inUse, { timeout: 5_000 }).toBeGreaterThanOrEqual(CAPACITY / 2 - 1024);

    // Meanwhile the apiserver's reviews, from another address, are all answered.
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) {
      statuses.push(await probe("/validate", admissionReview(`v-${i}`)));
      statuses.push(await probe("/convert", conversionReview(`c-${i}`)));
    }
    expect(statuses).toEqual(new Array<number>(20).fill(200));
    // ...while the trickles still held what they had.
    expect(small.inUse).toBeGreaterThanOrEqual(CAPACITY / 2 - 1024);
    expect(conversion.inUse).toBeGreaterThanOrEqual(CAPACITY / 2 - 1024);

    const answers = await Promise.all(tricklers.map((t) => t.answered));
    // The ones that got a share wait for their body until the deadline, then 408; the rest were told 503 at once.
    const timedOut = answers.filter((a) => a.status === 408);
    expect(timedOut.length).toBe(4);
    for (const a of timedOut) {
      expect(a.reason).toBe("RequestTimeout");
      expect(a.afterMs).toBeGreaterThanOrEqual(BODY_TIMEOUT_MS - 100);
      expect(a.afterMs).toBeLessThan(BODY_TIMEOUT_MS + 1_500);
    }
    for (const a of answers.filter((x) => x.status !== 408)) {
      expect(a.status).toBe(503);
      expect(a.message).toMatch(
        /^requests from 127\.0\.0\.2 already hold their share \(4\.0 MiB of at most 4\.0 MiB\)/,
      );
    }
    // The budget is back as the answers go, and every trickling connection is closed with its answer.
    expect(small.inUse).toBe(0);
    expect(conversion.inUse).toBe(0);
    const closed = await Promise.all(tricklers.map((t) => t.closed));
    for (const at of closed) expect(at).toBeLessThan(BODY_TIMEOUT_MS + 2_000);
  });

  it("headers that trickle are cut at their deadline", async () => {
    const started = Date.now();
    const answer = await new Promise<{ head: string; afterMs: number }>((resolve) => {
      let head = "";
      const socket = tls.connect({ host: "127.0.0.1", port: server.address.port, ca: ca.cert }, () => {
        socket.write("POST /validate HTTP/1.1\r\nHost: x\r\n");
        const timer = setInterval(() => socket.write("X-Slow: 1\r\n"), 100);
        socket.on("close", () => {
          clearInterval(timer);
          resolve({ head, afterMs: Date.now() - started });
        });
        setTimeout(() => socket.destroy(), 10_000).unref();
      });
      socket.on("data", (d: Buffer) => (head += d.toString("latin1")));
      socket.on("error", () => undefined);
    });
    expect(answer.head).toMatch(/^HTTP\/1\.1 408/);
    expect(answer.afterMs).toBeLessThan(HEADERS_TIMEOUT_MS + 1_500);
  });

  it("a caller that stops reading a large answer is cut when the writes stand still, and its budget is back", async () => {
    const body = JSON.stringify({ s: "z".repeat(200_000) });
    const socket = tls.connect({ host: "127.0.0.1", port: server.address.port, ca: ca.cert });
    socket.on("error", () => undefined);
    await new Promise<void>((resolve) => socket.once("secureConnect", () => resolve()));
    socket.write(
      `POST /large-answer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    );
    // Read nothing: the answer fills the socket's buffers, then stands still.
    socket.pause();
    await expect.poll(() => conversion.inUse, { timeout: 5_000 }).toBeGreaterThan(0);
    // The server cuts its end (this paused socket would not see it): the budget says so.
    const held = Date.now();
    try {
      await expect
        .poll(() => conversion.inUse, { timeout: WRITE_STALL_TIMEOUT_MS + 3_000, interval: 50 })
        .toBe(0);
      expect(Date.now() - held).toBeGreaterThanOrEqual(WRITE_STALL_TIMEOUT_MS - 500);
    } finally {
      socket.destroy();
    }
  });
});
