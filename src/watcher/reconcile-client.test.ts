// The client for POST /reconcile against real HTTPS servers on loopback (the
// reply's parsing is tested with the protocol, in src/reconcile/protocol.test.ts).
import https from "node:https";
import type { AddressInfo } from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import { createCa, issueCertificate, type KeyPair } from "../certs/pki.js";
import { reconcileClient } from "./reconcile-client.js";

describe("reconcileClient over real TLS on loopback", () => {
  type Tls = { cert: string; key: string };
  const servers: https.Server[] = [];
  afterAll(async () => {
    for (const s of servers) {
      s.closeAllConnections();
      await new Promise<void>((r) => s.close(() => r()));
    }
  });

  const leaf = (ca: KeyPair): Tls =>
    issueCertificate(ca, { commonName: "reconcile", ips: ["127.0.0.1"], usage: "server" });

  /** An endpoint answering `status` with the contract's `done`; `use` swaps its certificate as a restarted server would. */
  async function endpoint(tls: Tls, status = 200) {
    const server = https.createServer(tls, (req, res) => {
      req.resume();
      req.on("end", () =>
        res.writeHead(status, { "content-type": "application/json" }).end('{"result":"done","did":[]}'),
      );
    });
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    return {
      url: `https://127.0.0.1:${(server.address() as AddressInfo).port}/reconcile`,
      async use(next: Tls) {
        server.setSecureContext(next);
        server.closeAllConnections();
        // Let the client see its kept-alive connection go before the next call.
        await new Promise((r) => setTimeout(r, 100));
      },
    };
  }

  it("verifies against the CA it is given now: a rotated CA is used from the next call, without a restart", async () => {
    const ca1 = createCa();
    const ca2 = createCa();
    const ep = await endpoint(leaf(ca1));
    let trusted = ca1.cert;
    const client = reconcileClient({ url: ep.url, token: () => "t", ca: () => trusted });
    try {
      expect(await client.reconcile("$snapshot")).toMatchObject({ kind: "done" });
      // The server moves to a certificate from a new CA; the watcher's CA file has not caught up yet.
      await ep.use(leaf(ca2));
      const refused = await client.reconcile("$snapshot");
      expect(refused).toMatchObject({ kind: "failed", unreachable: true });
      expect(refused.kind === "failed" && refused.reason).toMatch(/certificate|verify/i);
      trusted = ca2.cert;
      expect(await client.reconcile("$snapshot")).toMatchObject({ kind: "done" });
    } finally {
      client.close();
    }
  });

  it("sends what the caller has seen, and takes a 503 with Retry-After (a cache behind) as 'call again then'", async () => {
    const ca = createCa();
    const bodies: string[] = [];
    const server = https.createServer(leaf(ca), (req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        bodies.push(Buffer.concat(chunks).toString());
        res
          .writeHead(503, { "content-type": "application/json", "retry-after": "2" })
          .end('{"reason":"CacheBehind"}');
      });
    });
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/reconcile`;
    const client = reconcileClient({ url, token: () => "t", ca: () => ca.cert });
    try {
      const out = await client.reconcile("default/r", undefined, { routes: "42", services: "7" });
      expect(out).toMatchObject({ kind: "requeue", afterMs: 2000, notFailure: true });
      // Nothing seen yet: the body is what older servers read, the key alone.
      await client.reconcile("default/r", undefined, {});
    } finally {
      client.close();
    }
    expect(bodies.map((b) => JSON.parse(b) as unknown)).toEqual([
      { key: "default/r", seen: { routes: "42", services: "7" } },
      { key: "default/r" },
    ]);
  });

  it("tells a call that got no reply from a server answering an error", async () => {
    const ca = createCa();
    const failing = await endpoint(leaf(ca), 500);
    const client = reconcileClient({ url: failing.url, token: () => "t", ca: () => ca.cert });
    const answered = await client.reconcile("default/r");
    client.close();
    expect(answered).toEqual({ kind: "failed", reason: 'HTTP 500: {"result":"done","did":[]}' });

    const closed = await endpoint(leaf(ca));
    const url = closed.url;
    const s = servers.pop();
    s?.closeAllConnections();
    await new Promise<void>((r) => s?.close(() => r()));
    const nobody = reconcileClient({ url, token: () => "t", ca: () => ca.cert });
    const refused = await nobody.reconcile("default/r");
    nobody.close();
    expect(refused).toMatchObject({
      kind: "failed",
      unreachable: true,
      reason: expect.stringMatching(/ECONNREFUSED/),
    });

    // A call cut because the caller gave up is neither.
    const slow = await endpoint(leaf(ca));
    const c2 = reconcileClient({ url: slow.url, token: () => "t", ca: () => ca.cert });
    const ac = new AbortController();
    ac.abort();
    const aborted = await c2.reconcile("default/r", ac.signal);
    c2.close();
    expect(aborted).toMatchObject({ kind: "failed" });
    expect(aborted).not.toHaveProperty("unreachable");
  });
});
