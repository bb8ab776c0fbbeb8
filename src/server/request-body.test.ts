// Request bodies that must not hurt the server: compressed floods, bodies
// shaped to outgrow the heap, deep nesting, a full budget, truncated bodies,
// unknown encodings, wrong methods. Each is sent over a real socket to the
// real app; each must get a JSON 4xx (or 503 with Retry-After), and the
// server must go on answering.

import http from "node:http";
import type { AddressInfo } from "node:net";
import zlib from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "./app.js";
import { MiB, type JsonReply, type JsonHandler } from "./json-handler.js";
import { serverDeps } from "../../test/fixtures/server-deps.js";
import { CONVERSION_SHARE, MemoryBudget } from "./memory-budget.js";

/** The chart's heap (--max-old-space-size=384, 4 MiB semi-spaces) as V8 reports its limit. */
const CHART_HEAP_LIMIT = 396 * MiB;
const conversion = new MemoryBudget("conversion", Math.floor(CHART_HEAP_LIMIT * CONVERSION_SHARE));
// One caller here (127.0.0.1) may take the whole budget: a peer's share has its own test (slow-callers.test.ts).
const small = new MemoryBudget("small", 3 * MiB, 1);
let handled = 0;
let authorizedBodies = 0;

const routes: JsonHandler[] = [
  {
    path: "/convert",
    limit: 64 * MiB,
    budget: "conversion",
    handle: (body) => ({ status: 200, body: { length: Array.isArray(body) ? body.length : -1 } }),
  },
  {
    path: "/echo",
    limit: MiB,
    handle: (body) => {
      handled++;
      return { status: 200, body: { got: body } };
    },
  },
  {
    path: "/guarded",
    limit: 1024,
    authorize: (headers): Promise<JsonReply | undefined> =>
      Promise.resolve(
        headers.authorization === "Bearer good"
          ? undefined
          : { status: 401, body: { kind: "Status", code: 401, reason: "Unauthorized" } },
      ),
    handle: () => {
      authorizedBodies++;
      return { status: 200, body: {} };
    },
  },
];

let server: http.Server;
let port: number;

beforeAll(async () => {
  server = http.createServer(
    createApp({ handlers: routes, ready: () => true, budgets: { conversion, small }, ...serverDeps() }),
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  json: { reason?: string; message?: string; code?: number } & Record<string, unknown>;
}

function send(
  path: string,
  body: Buffer | string | undefined,
  opts: { method?: string; headers?: http.OutgoingHttpHeaders } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: "127.0.0.1", port, path, method: opts.method ?? "POST", headers: opts.headers, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            json: JSON.parse(text) as Answer["json"],
          });
        });
        res.on("error", reject);
      },
    );
    // The server may answer and close before it has read all we send: that is the point.
    req.on("error", (err: NodeJS.ErrnoException) => {
      if (err.code !== "EPIPE" && err.code !== "ECONNRESET") reject(err);
    });
    req.end(body);
  });
}

/** `[{},{},...]` of about `bytes` bytes: about 21x its size in heap once parsed. */
function emptyObjects(bytes: number): Buffer {
  const n = Math.floor(bytes / 3);
  return Buffer.from(`[${"{},".repeat(n - 1)}{}]`);
}

async function stillServing(): Promise<void> {
  const before = handled;
  const r = await send("/echo", JSON.stringify({ ok: 1 }));
  expect(r.status).toBe(200);
  expect(r.json).toEqual({ got: { ok: 1 } });
  expect(handled).toBe(before + 1);
}

describe("request bodies", () => {
  it("refuses a 61 KB gzip of 60 MiB of [{},...] with a 413, without parsing it", async () => {
    const raw = emptyObjects(60 * MiB);
    const gz = zlib.gzipSync(raw, { level: 9 });
    expect(gz.length).toBeLessThan(200_000);
    const heapBefore = process.memoryUsage().heapUsed;
    const r = await send("/convert", gz, {
      headers: { "content-encoding": "gzip", "content-type": "application/json" },
    });
    expect(r.status).toBe(413);
    expect(r.json.reason).toBe("RequestEntityTooLarge");
    expect(r.json.message).toMatch(/would take about .* MiB of memory to parse/);
    // Refused early: it never came near the 1.3 GB that parsing it takes.
    expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(100 * MiB);
    expect(conversion.inUse).toBe(0);
    await stillServing();
  });

  it("refuses a gzip that inflates past the route's limit, on its inflated size", async () => {
    const inner = Buffer.alloc(2 * MiB, " "); // whitespace: cheap to parse, only the size counts
    const gz = zlib.gzipSync(Buffer.concat([Buffer.from('{"a":1}'), inner]));
    expect(gz.length).toBeLessThan(MiB);
    const r = await send("/echo", gz, { headers: { "content-encoding": "gzip" } });
    expect(r.status).toBe(413);
    expect(r.json.message).toContain("once decompressed");
    const ok = await send("/echo", zlib.deflateSync('{"a":[1,2]}'), {
      headers: { "content-encoding": "deflate" },
    });
    expect(ok.status).toBe(200);
    expect(ok.json).toEqual({ got: { a: [1, 2] } });
  });

  it("refuses 100,000-deep nesting with a 400 naming the limit, not a stack overflow", async () => {
    for (const open of ["[", '{"a":']) {
      const r = await send("/echo", open.repeat(100_000));
      expect(r.status).toBe(400);
      expect(r.json.reason).toBe("BadRequest");
      expect(r.json.message).toBe("the JSON body nests deeper than 64 levels");
    }
    // Brackets inside strings are text, not nesting.
    const inString = JSON.stringify({ s: "[".repeat(10_000) });
    expect((await send("/echo", inString)).status).toBe(200);
    await stillServing();
  });

  it("answers 503 with Retry-After while the budget is taken, and takes the body once it is free", async () => {
    // Hold a body in flight: headers and half a body, the rest later.
    const held = http.request({
      host: "127.0.0.1",
      port,
      path: "/echo",
      method: "POST",
      agent: false,
      headers: { "content-length": String(MiB - 10) },
    });
    const heldAnswer = new Promise<number>((resolve) =>
      held.on("response", (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      }),
    );
    const first = `{"s":"${"x".repeat(900_000)}`;
    held.write(first);
    await expect.poll(() => small.inUse, { timeout: 10_000 }).toBeGreaterThan(900_000);
    const busy = await send("/echo", JSON.stringify({ s: "y".repeat(800_000) }));
    expect(busy.status).toBe(503);
    expect(busy.headers["retry-after"]).toBe("2");
    expect(busy.json.reason).toBe("ServiceUnavailable");
    held.end(`${"x".repeat(MiB - 10 - first.length - 2)}"}`);
    expect(await heldAnswer).toBe(200);
    await expect.poll(() => small.inUse).toBe(0);
    expect((await send("/echo", JSON.stringify({ s: "y".repeat(800_000) }))).status).toBe(200);
  });

  it("survives a body cut short, and gives its share of the budget back", async () => {
    await new Promise<void>((resolve) => {
      const req = http.request({
        host: "127.0.0.1",
        port,
        path: "/echo",
        method: "POST",
        agent: false,
        headers: { "content-length": "100000" },
      });
      req.on("error", () => resolve());
      req.write('{"a":"' + "z".repeat(50_000));
      setTimeout(() => {
        req.destroy();
        resolve();
      }, 200);
    });
    await expect.poll(() => small.inUse).toBe(0);
    await stillServing();
  });

  it("says 415 UnsupportedMediaType for an encoding it cannot undo", async () => {
    const r = await send("/echo", zlib.brotliCompressSync("{}"), { headers: { "content-encoding": "br" } });
    expect(r.status).toBe(415);
    expect(r.json.reason).toBe("UnsupportedMediaType");
    expect(r.json.message).toContain('"br"');
  });

  it("says 400 for a corrupt gzip and for text that is not JSON", async () => {
    const bad = await send("/echo", Buffer.from("not gzip at all"), {
      headers: { "content-encoding": "gzip" },
    });
    expect(bad.status).toBe(400);
    expect(bad.json.message).toMatch(/not valid gzip/);
    const text = await send("/echo", '{"a":', { headers: { "content-type": "text/plain" } });
    expect(text.status).toBe(400);
    expect(text.json.message).toMatch(/not valid JSON/);
  });

  it("answers a wrong method with 405 and the methods the path takes", async () => {
    for (const method of ["GET", "PUT", "DELETE"]) {
      const r = await send("/echo", undefined, { method });
      expect(r.status).toBe(405);
      expect(r.headers.allow).toBe("POST");
      expect(r.json.reason).toBe("MethodNotAllowed");
    }
    const r = await send("/healthz", "{}", { method: "POST" });
    expect(r.status).toBe(405);
    expect(r.headers.allow).toBe("GET, HEAD");
    expect((await send("/nowhere", undefined, { method: "GET" })).status).toBe(404);
  });

  it("refuses an unauthorized caller from its headers alone, before reading the body", async () => {
    // Headers only: the body is promised but never sent. The answer must come anyway.
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request({
        host: "127.0.0.1",
        port,
        path: "/guarded",
        method: "POST",
        agent: false,
        headers: { "content-length": "1000", authorization: "Bearer bogus" },
      });
      req.on("response", (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
        req.destroy();
      });
      req.on("error", reject);
      req.flushHeaders();
    });
    expect(status).toBe(401);
    expect(authorizedBodies).toBe(0);
    // A keep-alive caller refused with a body too large to drain is told the connection will not carry another.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const connectionAfter = (size: number) =>
      new Promise<string | undefined>((resolve, reject) => {
        const req = http.request(
          {
            host: "127.0.0.1",
            port,
            path: "/guarded",
            method: "POST",
            agent,
            headers: { authorization: "Bearer bogus" },
          },
          (res) => {
            res.resume();
            res.on("end", () => resolve(res.headers.connection));
          },
        );
        req.on("error", (err: NodeJS.ErrnoException) => (err.code === "EPIPE" ? undefined : reject(err)));
        req.end(Buffer.alloc(size, " "));
      });
    expect(await connectionAfter(100)).toBe("keep-alive");
    expect(await connectionAfter(2 * MiB)).toBe("close");
    agent.destroy();
    const good = await send("/guarded", "{}", { headers: { authorization: "Bearer good" } });
    expect(good.status).toBe(200);
    expect(authorizedBodies).toBe(1);
  });
});
