// The app's reply path on a real socket: small replies go out whole with a
// Content-Length, large ones in chunks as the socket drains, and a caller
// that goes away mid-answer costs the server nothing further.

import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "./app.js";
import { MiB, type JsonHandler } from "./json-handler.js";
import { serverDeps } from "../../test/fixtures/server-deps.js";

const big = {
  kind: "Echo",
  items: Array.from({ length: 20_000 }, (_, i) => ({ name: `item-${i}`, text: "x".repeat(50) })),
};
let served = 0;
const routes: JsonHandler[] = [
  { path: "/big", method: "GET", limit: 0, handle: () => ({ status: 200, body: big }) },
  { path: "/echo", limit: MiB, handle: (body) => ({ status: 200, body: { got: body } }) },
  {
    path: "/count",
    method: "GET",
    limit: 0,
    handle: () => ({ status: 200, body: { served: ++served } }),
  },
  {
    path: "/throws",
    limit: MiB,
    handle: () => {
      throw new Error("a handler bug");
    },
  },
];
const deps = serverDeps();

let server: http.Server;
let base: string;

beforeAll(async () => {
  server = http.createServer(createApp({ handlers: routes, ready: () => true, ...deps }));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

type Reply = { status: number; headers: http.IncomingHttpHeaders; text: string };

/** One request to `url`, its answer read whole. */
function send(url: string, method: string, body?: string, agent?: http.Agent): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, ...(agent ? { agent } : {}) }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          text: Buffer.concat(chunks).toString("utf8"),
        }),
      );
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** A GET to the shared server's `path`, or a POST of `body`. */
function request(path: string, body?: string, agent?: http.Agent): Promise<Reply> {
  return send(`${base}${path}`, body === undefined ? "GET" : "POST", body, agent);
}

describe("the app's replies", () => {
  it("sends a small reply whole, with a Content-Length", async () => {
    const r = await request("/echo", JSON.stringify({ a: [1, "two"] }));
    expect(r.status).toBe(200);
    expect(r.headers["content-type"]).toMatch(/^application\/json/);
    expect(r.headers["content-length"]).toBe(String(Buffer.byteLength(r.text)));
    expect(JSON.parse(r.text)).toEqual({ got: { a: [1, "two"] } });
  });

  it("sends a large reply in chunks that join to exactly its JSON", async () => {
    const r = await request("/big");
    expect(r.status).toBe(200);
    expect(r.headers["content-type"]).toMatch(/^application\/json/);
    expect(r.headers["transfer-encoding"]).toBe("chunked");
    expect(r.headers["content-length"]).toBeUndefined();
    expect(r.text).toBe(JSON.stringify(big));
  });

  it("keeps serving after a caller walks away in the middle of a large reply", async () => {
    await new Promise<void>((resolve, reject) => {
      const req = http.get(`${base}/big`, (res) => {
        res.once("data", () => {
          req.destroy();
          resolve();
        });
      });
      req.on("error", (e) => ((e as NodeJS.ErrnoException).code === "ECONNRESET" ? resolve() : reject(e)));
    });
    const before = served;
    const r = await request("/count");
    expect(JSON.parse(r.text)).toEqual({ served: before + 1 });
    expect((await request("/big")).text).toBe(JSON.stringify(big));
  });
});

describe("webhook POSTs, answered without express", () => {
  it("answer the same on the exact path as on the path express also matches (query, trailing slash, case)", async () => {
    const body = JSON.stringify({ uid: "u-1" });
    const exact = await request("/echo", body);
    for (const path of ["/echo?timeout=10s", "/echo/", "/ECHO"]) {
      const r = await request(path, body);
      expect(r.status, path).toBe(200);
      expect(r.headers["content-type"], path).toBe(exact.headers["content-type"]);
      expect(JSON.parse(r.text), path).toEqual(JSON.parse(exact.text));
    }
    // GET on a POST path still gets express's 405.
    const get = await request("/echo");
    expect(get.status).toBe(405);
    expect(get.headers.allow).toBe("POST");
  });

  it("answer a handler that throws with a JSON 500, and keep serving", async () => {
    const r = await request("/throws", "{}");
    expect(r.status).toBe(500);
    expect(JSON.parse(r.text)).toMatchObject({
      kind: "Status",
      code: 500,
      message: "internal error: a handler bug",
    });
    expect((await request("/echo", "{}")).status).toBe(200);
  });

  it("count each connection once, however many requests it carries", async () => {
    const count = async (): Promise<number> =>
      (await deps.metrics.connections.get()).values.reduce((n, v) => n + v.value, 0);
    const before = await count();
    const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 1 });
    for (let i = 0; i < 5; i++) expect((await request("/echo", "{}", keepAlive)).status).toBe(200);
    keepAlive.destroy();
    expect(await count()).toBe(before + 1);
    for (let i = 0; i < 3; i++) await request("/echo", "{}", new http.Agent({ keepAlive: false }));
    expect(await count()).toBe(before + 4);
  });
});

describe("the probes and /metrics, answered without express", () => {
  /** A server whose listener is the app, recording the prototypes the app left on each request and response. */
  async function recording(): Promise<{
    url: string;
    seen: { path: string; req: object | null; res: object | null }[];
    close: () => Promise<void>;
  }> {
    const app = createApp({ handlers: routes, ready: () => true, ...deps });
    const seen: { path: string; req: object | null; res: object | null }[] = [];
    const s = http.createServer((req, res) => {
      app(req, res);
      seen.push({ path: req.url ?? "", req: Object.getPrototypeOf(req), res: Object.getPrototypeOf(res) });
    });
    await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve));
    return {
      url: `http://127.0.0.1:${(s.address() as AddressInfo).port}`,
      seen,
      close: async () => {
        s.closeAllConnections();
        await new Promise((resolve) => s.close(resolve));
      },
    };
  }

  const call = (url: string, method: string): Promise<Reply> => send(url, method);

  it("leave node's request and response as they are, where express would give them its prototypes", async () => {
    const r = await recording();
    try {
      for (const path of ["/healthz", "/readyz", "/metrics"])
        expect((await call(`${r.url}${path}`, "GET")).status).toBe(200);
      expect(r.seen.map((s) => s.path)).toEqual(["/healthz", "/readyz", "/metrics"]);
      for (const s of r.seen) {
        expect(s.req, s.path).toBe(http.IncomingMessage.prototype);
        expect(s.res, s.path).toBe(http.ServerResponse.prototype);
      }
    } finally {
      await r.close();
    }
  });

  it("answer as express did: text, a Content-Length, HEAD without a body, other spellings too, 405 for a POST", async () => {
    const r = await recording();
    try {
      for (const path of ["/healthz", "/readyz", "/healthz/", "/READYZ", "/healthz?verbose"]) {
        const get = await call(`${r.url}${path}`, "GET");
        expect(get.status, path).toBe(200);
        expect(get.text, path).toBe("ok");
        expect(get.headers["content-type"], path).toBe("text/plain; charset=utf-8");
        expect(get.headers["content-length"], path).toBe("2");
        const head = await call(`${r.url}${path}`, "HEAD");
        expect(head.status, path).toBe(200);
        expect(head.text, path).toBe("");
      }
      const metrics = await call(`${r.url}/metrics`, "GET");
      expect(metrics.headers["content-type"]).toBe(deps.metrics.registry.contentType);
      expect(metrics.text).toMatch(/^# HELP /m);
      const post = await call(`${r.url}/healthz`, "POST");
      expect(post.status).toBe(405);
      expect(post.headers.allow).toBe("GET, HEAD");
    } finally {
      await r.close();
    }
  });

  it("say not ready with a 503 while the caller is not", async () => {
    const app = createApp({ handlers: routes, ready: () => false, ...deps });
    const s = http.createServer(app);
    await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve));
    try {
      const r = await call(`http://127.0.0.1:${(s.address() as AddressInfo).port}/readyz`, "GET");
      expect(r.status).toBe(503);
      expect(r.text).toBe("not ready");
    } finally {
      s.closeAllConnections();
      await new Promise((resolve) => s.close(resolve));
    }
  });
});
