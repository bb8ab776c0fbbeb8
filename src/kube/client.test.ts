// The client's retries, deadlines, User-Agent and proxy-url, against real
// HTTP(S) servers on loopback that answer as a struggling apiserver would: a
// 429 with Retry-After, a 503, a connection cut mid-answer, an answer that
// trickles and never ends. The real apiserver cannot be made to do these on
// cue; test/integration/faults-*.test.ts puts a proxy in front of it instead.

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import net from "node:net";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { stringify as toYaml } from "yaml";
import { createCa, issueCertificate, type KeyPair } from "../certs/pki.js";
import { DeadlineExceeded, KubeError, kubeClient, type ClientOptions } from "./client.js";
import { loadKubeconfigFiles, type ClusterAccess } from "./kubeconfig.js";
import { utf8Lines } from "./watch-lines.js";
import { userAgent, VERSION } from "./user-agent.js";

type Handler = (req: http.IncomingMessage, res: http.ServerResponse, n: number) => void;

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c();
});

async function listen(server: http.Server | net.Server): Promise<number> {
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  closers.push(
    () =>
      new Promise((r) => {
        if ("closeAllConnections" in server) server.closeAllConnections();
        server.close(() => r());
      }),
  );
  return (server.address() as AddressInfo).port;
}

/** An HTTP server that answers request n (from 1) with `handler`; `seen` holds each request's method and headers. */
async function scripted(handler: Handler) {
  const seen: { method: string; url: string; headers: http.IncomingHttpHeaders; at: number }[] = [];
  const server = http.createServer((req, res) => {
    seen.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, at: Date.now() });
    req.resume();
    handler(req, res, seen.length);
  });
  const port = await listen(server);
  const access: ClusterAccess = {
    source: "test",
    server: `http://127.0.0.1:${port}`,
    tls: { rejectUnauthorized: true },
    credentials: () => Promise.resolve({ headers: {} }),
  };
  const fast: ClientOptions = { backoff: { baseMs: 20, capMs: 200 } };
  return { seen, access, client: (o: ClientOptions = fast) => kubeClient(access, o) };
}

const ok = (res: http.ServerResponse, body: unknown = { ok: true }): void =>
  void res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body));
const status = (res: http.ServerResponse, code: number, headers: http.OutgoingHttpHeaders = {}): void =>
  void res
    .writeHead(code, { "content-type": "application/json", ...headers })
    .end(JSON.stringify({ kind: "Status", code, reason: "Scripted", message: `scripted ${code}` }));

describe("retries", () => {
  it("waits out a 429's Retry-After, then succeeds", async () => {
    const s = await scripted((_req, res, n) =>
      n === 1 ? status(res, 429, { "retry-after": "1" }) : ok(res),
    );
    const out = await kubeClient(s.access).json<{ ok: boolean }>("GET", "/apis/x");
    expect(out).toEqual({ ok: true });
    expect(s.seen).toHaveLength(2);
    const gap = (s.seen[1]?.at ?? 0) - (s.seen[0]?.at ?? 0);
    expect(gap).toBeGreaterThanOrEqual(950);
    expect(gap).toBeLessThan(1500);
  });

  it("retries 500, 502, 503 and 504 on a read with growing backoff", async () => {
    const codes = [500, 502, 503, 504];
    const s = await scripted((_req, res, n) => {
      const code = codes[n - 1];
      if (code) status(res, code);
      else ok(res);
    });
    await s.client().json("GET", "/apis/x");
    expect(s.seen).toHaveLength(5);
  });

  it("retries a read whose connection is cut in the middle of the answer", async () => {
    const s = await scripted((_req, res, n) => {
      if (n > 1) return ok(res, { items: [1, 2, 3] });
      res.writeHead(200, { "content-type": "application/json", "content-length": "1000" });
      res.write('{"items": [1,');
      setTimeout(() => res.socket?.resetAndDestroy(), 20);
    });
    expect(await s.client().json("GET", "/apis/x")).toEqual({ items: [1, 2, 3] });
    expect(s.seen).toHaveLength(2);
  });

  it("never sends a blind POST twice after a 5xx or a reset, but does after a 429", async () => {
    const s503 = await scripted((_req, res) => status(res, 503));
    await expect(
      s503.client().json("POST", "/api/v1/namespaces/a/events", { body: {} }),
    ).rejects.toMatchObject({ status: 503 });
    expect(s503.seen).toHaveLength(1);

    const sReset = await scripted((req) => req.socket.resetAndDestroy());
    await expect(sReset.client().json("POST", "/x", { body: {} })).rejects.toThrow(
      /ECONNRESET|socket hang up/,
    );
    expect(sReset.seen).toHaveLength(1);

    const s429 = await scripted((_req, res, n) =>
      n === 1 ? status(res, 429, { "retry-after": "0" }) : ok(res),
    );
    await s429.client().json("POST", "/x", { body: {} });
    expect(s429.seen).toHaveLength(2);
  });

  it("retries a PATCH that carries its resourceVersion, not one that does not", async () => {
    const guarded = await scripted((_req, res, n) => (n === 1 ? status(res, 500) : ok(res)));
    await guarded.client().json("PATCH", "/x", {
      body: [
        { op: "test", path: "/metadata/resourceVersion", value: "7" },
        { op: "remove", path: "/metadata/finalizers/0" },
      ],
      contentType: "application/json-patch+json",
    });
    expect(guarded.seen).toHaveLength(2);

    const blind = await scripted((_req, res) => status(res, 500));
    await expect(
      blind.client().json("PATCH", "/x", {
        body: { metadata: { labels: { a: "b" } } },
        contentType: "application/merge-patch+json",
      }),
    ).rejects.toBeInstanceOf(KubeError);
    expect(blind.seen).toHaveLength(1);
  });

  it("does not retry what will not pass: 400, 403, 404, 409, 422", async () => {
    for (const code of [400, 403, 404, 409, 422]) {
      const s = await scripted((_req, res) => status(res, code));
      await expect(s.client().json("GET", "/x")).rejects.toMatchObject({ status: code });
      expect(s.seen, String(code)).toHaveLength(1);
    }
  });

  it("gives up at once when the Retry-After would end past the deadline", async () => {
    const s = await scripted((_req, res) => status(res, 429, { "retry-after": "30" }));
    const started = Date.now();
    await expect(kubeClient(s.access).json("GET", "/x", { timeoutMs: 2000 })).rejects.toMatchObject({
      status: 429,
    });
    expect(Date.now() - started).toBeLessThan(1000);
    expect(s.seen).toHaveLength(1);
  });
});

describe("deadlines", () => {
  it("ends an answer that trickles forever at the call's deadline (an idle timeout never would)", async () => {
    const s = await scripted((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write("[");
      const t = setInterval(() => res.write(" "), 50);
      res.on("close", () => clearInterval(t));
    });
    const started = Date.now();
    const err = await s
      .client()
      .json("GET", "/x", { timeoutMs: 600, retry: false })
      .catch((e: unknown) => e);
    const took = Date.now() - started;
    expect(err).toBeInstanceOf(DeadlineExceeded);
    expect((err as Error).message).toContain("no complete answer from the apiserver in 600 ms");
    expect(took).toBeGreaterThanOrEqual(590);
    expect(took).toBeLessThan(1500);
  });

  it("bounds the retries too: a 503 that never ends fails by the deadline, after several attempts", async () => {
    const s = await scripted((_req, res) => status(res, 503));
    const started = Date.now();
    const err = await s
      .client()
      .json("GET", "/x", { timeoutMs: 800 })
      .catch((e: unknown) => e);
    // Either the last 503 (no wait fitted before the deadline) or the deadline, naming it.
    expect((err as Error).message).toMatch(/503 scripted 503/);
    const took = Date.now() - started;
    expect(took).toBeLessThan(1300);
    expect(s.seen.length).toBeGreaterThan(2);
  });

  it("ends a watch that the server does not end, at the stream's deadline", async () => {
    const s = await scripted((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write(`${JSON.stringify({ type: "BOOKMARK", object: {} })}\n`);
    });
    const stop = new AbortController();
    const started = Date.now();
    const res = await s.client().stream("/x?watch=true", { signal: stop.signal, timeoutMs: 500 });
    const lines: string[] = [];
    const err = await (async () => {
      for await (const l of utf8Lines(res)) lines.push(l);
    })().catch((e: unknown) => e);
    expect(lines).toHaveLength(1);
    expect(err).toBeInstanceOf(Error);
    expect(Date.now() - started).toBeGreaterThanOrEqual(490);
  });
});

describe("User-Agent", () => {
  it("names the program, its version and its job", async () => {
    const s = await scripted((_req, res) => ok(res));
    await kubeClient(s.access).json("GET", "/x");
    await kubeClient(s.access, { userAgent: userAgent("watch") }).json("GET", "/x");
    expect(VERSION).toMatch(/^\d+\.\d+\.\d+/);
    expect(s.seen.map((r) => r.headers["user-agent"])).toEqual([
      `edge-operator/${VERSION} (cli)`,
      `edge-operator/${VERSION} (watch)`,
    ]);
  });
});

describe("proxy-url", () => {
  let dir: string;
  let ca: KeyPair;
  let leaf: KeyPair;
  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "kube-client-proxy-"));
    ca = createCa({ commonName: "proxy-test-ca" });
    leaf = issueCertificate(ca, { commonName: "127.0.0.1", ips: ["127.0.0.1"], usage: "server" });
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** A CONNECT proxy on loopback that records each tunnel's target and refuses anything but loopback. */
  async function connectProxy() {
    const tunnels: string[] = [];
    const proxy = http.createServer((_req, res) => void res.writeHead(405).end());
    const sockets = new Set<net.Socket>();
    proxy.on("connect", (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
      tunnels.push(req.url ?? "");
      sockets.add(client);
      const [host, port] = (req.url ?? "").split(":");
      if (host !== "127.0.0.1") return void client.end("HTTP/1.1 403 Forbidden\r\n\r\n");
      const upstream = net.connect(Number(port), host, () => {
        sockets.add(upstream);
        client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
        if (head.length) upstream.write(head);
        upstream.pipe(client);
        client.pipe(upstream);
      });
      upstream.on("error", () => client.destroy());
      client.on("error", () => upstream.destroy());
    });
    const port = await listen(proxy);
    // Tunnels are the proxy server's connections too: they go first, or its close waits for them.
    closers.push(async () => sockets.forEach((sock) => sock.destroy()));
    return { port, tunnels };
  }

  function kubeconfig(server: string, proxyUrl: string): string {
    const file = path.join(dir, `kc-${Math.random().toString(36).slice(2)}`);
    writeFileSync(
      file,
      toYaml({
        apiVersion: "v1",
        kind: "Config",
        clusters: [
          {
            name: "c",
            cluster: {
              server,
              "proxy-url": proxyUrl,
              "certificate-authority-data": Buffer.from(ca.cert).toString("base64"),
            },
          },
        ],
        users: [{ name: "u", user: { token: "secret" } }],
        contexts: [{ name: "x", context: { cluster: "c", user: "u" } }],
        "current-context": "x",
      }),
    );
    return file;
  }

  it("tunnels HTTPS through an http:// proxy with CONNECT, TLS end to end, one tunnel for kept-alive calls", async () => {
    const api = https.createServer({ cert: leaf.cert, key: leaf.key }, (req, res) =>
      ok(res, { auth: req.headers.authorization ?? null }),
    );
    const apiPort = await listen(api);
    const proxy = await connectProxy();
    const access = loadKubeconfigFiles([
      kubeconfig(`https://127.0.0.1:${apiPort}`, `http://127.0.0.1:${proxy.port}`),
    ]);
    expect(access.proxyUrl?.href).toBe(`http://127.0.0.1:${proxy.port}/`);
    const kube = kubeClient(access);
    expect(await kube.json("GET", "/version")).toEqual({ auth: "Bearer secret" });
    expect(await kube.json("GET", "/version")).toEqual({ auth: "Bearer secret" });
    expect(proxy.tunnels).toEqual([`127.0.0.1:${apiPort}`]);
  });

  it("says why when the proxy refuses the tunnel", async () => {
    const proxy = await connectProxy();
    const kube = kubeClient(
      loadKubeconfigFiles([kubeconfig("https://localhost:1", `http://127.0.0.1:${proxy.port}`)]),
    );
    await expect(kube.json("GET", "/version", { retry: false })).rejects.toThrow(
      /refused CONNECT localhost:1: HTTP\/1.1 403 Forbidden/,
    );
  });

  it("refuses a proxy it cannot speak to, naming the field", () => {
    const file = kubeconfig("https://127.0.0.1:6443", "socks5://127.0.0.1:1080");
    expect(() => loadKubeconfigFiles([file])).toThrow(
      /cluster "c": proxy-url socks5:\/\/127.0.0.1:1080: only http:\/\/ proxies \(HTTP CONNECT\) are supported/,
    );
  });
});
