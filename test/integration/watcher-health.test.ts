// `edge-operator watch`'s probes and trust material, as a process against the
// real control plane: /readyz says "caches synced" (a standby counts), a
// rotated CA or token file is followed without a restart, and /healthz fails
// when calls to /reconcile get no reply for a while, never because the server
// answers errors. The /reconcile endpoint is a small HTTPS server in the test
// whose certificate can be swapped, as a server restarted with a new one would.

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import https from "node:https";
import os from "node:os";
import path from "node:path";
import type { AddressInfo, Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCrd } from "../../src/api/crd.js";
import { createCa, issueCertificate, type KeyPair } from "../../src/certs/pki.js";
import { SNAPSHOT_KEY } from "../../src/reconcile/protocol.js";
import { startControlPlane } from "../harness/control-plane.js";
import type { ControlPlane } from "../../tools/testenv/control-plane.js";
import { startCli } from "../../tools/testenv/operator.js";
import { sleep, waitFor, type Supervised } from "../../tools/testenv/process.js";

const CRD = "edgeroutes.net.10xdev.io";
const NS = "default";

type Tls = { cert: string; key: string };
const leafOf = (ca: KeyPair): Tls =>
  issueCertificate(ca, { commonName: "reconcile", ips: ["127.0.0.1"], usage: "server" });

/** POST /reconcile answered with `status` for the token it accepts; every call recorded. */
class Endpoint {
  readonly calls: { key: string; token: string; at: number; status: number }[] = [];
  status = 200;
  token = "";
  private server!: https.Server;
  private readonly sockets = new Set<Socket>();
  url = "";

  async start(tls: Tls): Promise<void> {
    this.server = https.createServer(tls, (req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const token = (req.headers.authorization ?? "").replace(/^Bearer /, "");
        const { key } = JSON.parse(Buffer.concat(chunks).toString()) as { key: string };
        const status = token === this.token ? this.status : 401;
        this.calls.push({ key, token, at: Date.now(), status });
        res
          .writeHead(status, { "content-type": "application/json" })
          .end(status === 200 ? '{"result":"done","did":[]}' : '{"error":"no"}');
      });
    });
    // Every TCP connection, from before its TLS handshake on.
    this.server.on("connection", (socket: Socket) => {
      this.sockets.add(socket);
      socket.once("close", () => this.sockets.delete(socket));
    });
    await new Promise<void>((r) => this.server.listen(0, "127.0.0.1", r));
    this.url = `https://127.0.0.1:${(this.server.address() as AddressInfo).port}/reconcile`;
  }

  /**
   * A new certificate, and every connection dropped, as a restarted server:
   * also one still in its handshake, which closeAllConnections does not know
   * of yet and which would finish with the old certificate (a busy CI machine
   * saw calls answered over such a connection after the swap).
   */
  async serveWith(tls: Tls): Promise<void> {
    this.server.setSecureContext(tls);
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
    await sleep(100);
  }

  since(t: number, status?: number) {
    return this.calls.filter((c) => c.at >= t && (status === undefined || c.status === status));
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

type Probe = { status: number; body: { ok: boolean; synced: boolean; leader: boolean; unhealthy?: string } };

/** Calls to /reconcile the watcher counts as failed, from its /metrics. */
async function failedCalls(base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  let n = 0;
  for (const m of text.matchAll(
    /^edge_operator_watcher_reconcile_calls_total\{[^}]*outcome="failed"[^}]*\} (\d+)$/gm,
  ))
    n += Number(m[1]);
  return n;
}

async function probe(base: string, path: "/healthz" | "/readyz"): Promise<Probe> {
  const res = await fetch(`${base}${path}`);
  return { status: res.status, body: (await res.json()) as Probe["body"] };
}

describe("edge-operator watch: probes and trust", () => {
  let cp: ControlPlane;
  let dir: string;
  let endpoint: Endpoint;
  const procs: Supervised[] = [];
  const ca1 = createCa();
  const ca2 = createCa();
  const untrusted = createCa();

  const kubectl = async (args: string[], input?: string): Promise<string> => {
    const r = await cp.kubectl(args, input === undefined ? undefined : { input });
    if (r.code !== 0) throw new Error(`kubectl ${args.join(" ")}: ${r.stderr}`);
    return r.stdout;
  };

  const start = async (name: string, args: string[]): Promise<{ proc: Supervised; metrics: string }> => {
    const proc = startCli(
      name,
      [
        "watch",
        "--reconcile-url",
        endpoint.url,
        "--reconcile-ca",
        path.join(dir, "ca.crt"),
        "--token-file",
        path.join(dir, "token"),
        "--kubeconfig",
        cp.kubeconfig,
        "--identity",
        name,
        "--metrics-listen",
        "127.0.0.1:0",
        "--resync",
        "0",
        ...args,
      ],
      { LOG_LEVEL: "info" },
    );
    procs.push(proc);
    const metrics = await waitFor(
      `${name}'s metrics address`,
      async () => /"metrics":"(http:[^"]+)"/.exec(proc.output())?.[1],
    );
    return { proc, metrics };
  };

  /** An edit the watcher must act on: the route's spec changes. */
  const touch = (port: number) =>
    kubectl(
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "net.10xdev.io/v2",
        kind: "EdgeRoute",
        metadata: { name: "r", namespace: NS },
        spec: {
          hostnames: ["r.example.com"],
          rules: [
            { matches: [{ path: { type: "PathPrefix", value: "/" } }], backends: [{ name: "s", port }] },
          ],
        },
      }),
    );

  beforeAll(async () => {
    cp = await startControlPlane();
    dir = mkdtempSync(path.join(os.tmpdir(), "edge-watch-health-"));
    writeFileSync(path.join(dir, "ca.crt"), ca1.cert);
    writeFileSync(path.join(dir, "token"), "token-1\n");
    endpoint = new Endpoint();
    endpoint.token = "token-1";
    await endpoint.start(leafOf(ca1));
  });

  afterAll(async () => {
    await Promise.all(procs.map((p) => p.stop()));
    await endpoint?.stop();
    await cp?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("is not ready until its informers have synced, and a standby with warm caches is ready", async () => {
    // Another replica holds the lease for an hour: this one stands by.
    await kubectl(
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        metadata: { name: "edge-health-test", namespace: NS },
        spec: {
          holderIdentity: "someone-else",
          leaseDurationSeconds: 3600,
          renewTime: new Date().toISOString().replace("Z", "000Z"),
        },
      }),
    );
    // The CRD does not exist yet: the EdgeRoute informer cannot list.
    const { proc, metrics } = await start("standby", [
      "--lease-namespace",
      NS,
      "--lease-name",
      "edge-health-test",
    ]);
    for (let i = 0; i < 10; i++) {
      const ready = await probe(metrics, "/readyz");
      expect(ready.status).toBe(503);
      expect(ready.body).toMatchObject({ ok: false, synced: false, leader: false });
      // Not synced is not dead: liveness stays up.
      expect((await probe(metrics, "/healthz")).status).toBe(200);
      await sleep(200);
    }

    await kubectl(["apply", "-f", "-"], JSON.stringify(buildCrd({ storageVersion: "v2" })));
    await kubectl(["wait", "--for", "condition=Established", `crd/${CRD}`, "--timeout=60s"]);
    const ready = await waitFor(
      "/readyz to say ready",
      async () => {
        const p = await probe(metrics, "/readyz");
        return p.status === 200 ? p : undefined;
      },
      60_000,
    );
    expect(ready.body).toMatchObject({ ok: true, synced: true, leader: false });
    expect(endpoint.calls).toEqual([]);
    expect(await proc.stop()).toBe(0);
  });

  describe("a leader calling /reconcile", () => {
    let leader: Supervised;
    let metrics = "";

    beforeAll(async () => {
      ({ proc: leader, metrics } = await start("leader", ["--no-leader-elect", "--unhealthy-after", "3s"]));
      const t = Date.now();
      await touch(8080);
      await waitFor("the first calls", async () => endpoint.since(t, 200).length >= 2 || undefined, 30_000);
    });

    it("follows a rotated CA file without a restart", async () => {
      await endpoint.serveWith(leafOf(ca2));
      const rotated = Date.now();
      const failedBefore = await failedCalls(metrics);
      await touch(8081);
      await waitFor(
        "calls refused over TLS",
        async () => (await failedCalls(metrics)) > failedBefore || undefined,
      );
      expect(endpoint.since(rotated)).toEqual([]);
      // The Secret (or `edge-operator certs`) brings the new CA.
      writeFileSync(path.join(dir, "ca.crt"), ca2.cert);
      const written = Date.now();
      const call = await waitFor(
        "a call over the new CA",
        async () => endpoint.since(written, 200)[0],
        15_000,
      );
      // Read within a second; then the key's next retry (its backoff is short so far).
      expect(call.at - written).toBeLessThan(10_000);
      expect(leader.output()).toContain("--reconcile-ca changed: using it from the next call");
      expect((await probe(metrics, "/healthz")).status).toBe(200);
    });

    it("follows a rotated token file within seconds", async () => {
      writeFileSync(path.join(dir, "token"), "token-2\n");
      endpoint.token = "token-2";
      const rotated = Date.now();
      await touch(8082);
      const call = await waitFor(
        "a call with the new token",
        async () => endpoint.since(rotated, 200)[0],
        15_000,
      );
      expect(call.token).toBe("token-2");
      expect(call.at - rotated).toBeLessThan(10_000);
    });

    it("turns /healthz unhealthy when calls get no reply for the window, and healthy at the next reply", async () => {
      // A certificate from a CA the watcher was never given: every call fails in the handshake.
      // The clock starts before the swap: a call may meet the new certificate while it is made.
      const leaf = leafOf(untrusted);
      const broke = Date.now();
      await endpoint.serveWith(leaf);
      await touch(8083);
      const sick = await waitFor(
        "/healthz to fail",
        async () => {
          const p = await probe(metrics, "/healthz");
          return p.status === 503 ? { ...p, at: Date.now() } : undefined;
        },
        30_000,
        100,
      );
      // Not before the window (3 s) from the first failed call.
      expect(sick.at - broke).toBeGreaterThanOrEqual(3000);
      expect(sick.body.ok).toBe(false);
      expect(sick.body.unhealthy).toMatch(
        /^\d+ calls in a row to \/reconcile got no reply over \d+ s; last: /,
      );
      expect(sick.body.unhealthy).toMatch(/certificate/i);
      // Readiness is about caches, not the endpoint.
      expect((await probe(metrics, "/readyz")).status).toBe(200);

      // The server is reachable again, but answers every call with an error.
      endpoint.status = 500;
      await endpoint.serveWith(leafOf(ca2));
      const answered = Date.now();
      await touch(8084);
      await waitFor("a 500 answered", async () => endpoint.since(answered, 500)[0], 30_000);
      expect((await probe(metrics, "/healthz")).status).toBe(200);
      // Errors answered for longer than the window (3 s), a new edit every
      // second so calls keep coming: alive all along.
      const statuses: number[] = [];
      for (let i = 0; i < 6; i++) {
        await touch(8090 + i);
        for (let j = 0; j < 4; j++) {
          statuses.push((await probe(metrics, "/healthz")).status);
          await sleep(250);
        }
      }
      expect(endpoint.since(answered, 500).length).toBeGreaterThanOrEqual(6);
      expect(new Set(statuses)).toEqual(new Set([200]));
      endpoint.status = 200;
    });

    it("is the same process all along", () => {
      expect(leader.child.exitCode).toBeNull();
      expect(endpoint.calls.some((c) => c.key === SNAPSHOT_KEY)).toBe(true);
    });
  });
});
