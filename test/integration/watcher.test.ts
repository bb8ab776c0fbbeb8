// `edge-operator watch` as a process against the real control plane. The
// reconcile endpoint is a recording HTTPS server inside the test that answers
// the contract, tells the callers apart by their bearer token, and checks
// that no key is ever in flight twice, across every watcher.

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import https from "node:https";
import type { ServerResponse } from "node:http";
import os from "node:os";
import path from "node:path";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { buildCrd } from "../../src/api/crd.js";
import { createCa, issueCertificate } from "../../src/certs/pki.js";
import { SNAPSHOT_KEY } from "../../src/reconcile/protocol.js";
import { startControlPlane } from "../harness/control-plane.js";
import type { ControlPlane } from "../../tools/testenv/control-plane.js";
import { startCli } from "../../tools/testenv/operator.js";
import { sleep, waitFor as waitForHarness, type Supervised } from "../../tools/testenv/process.js";

interface Call {
  key: string;
  caller: string;
  start: number;
  end: number;
}

type Reply = { status: number; body: unknown; delayMs?: number };

/** The reconcile contract, answered and recorded. */
class Recorder {
  readonly calls: Call[] = [];
  readonly overlaps: string[] = [];
  readonly rejected: string[] = [];
  /** What went wrong inside the server's callback: the tests' waits throw it at once. */
  readonly failures: unknown[] = [];
  private fail!: (err: unknown) => void;
  /** Rejects with the first failure inside the server's callback. */
  readonly failed: Promise<never> = new Promise<never>((_, reject) => (this.fail = reject));
  private readonly inFlight = new Map<string, string>();
  maxRouteConcurrency = 0;
  maxSnapshotConcurrency = 0;
  /** Per-key scripted replies, taken in order; afterwards `done`. */
  readonly script = new Map<string, Reply[]>();
  private server!: https.Server;
  url = "";

  constructor(
    private readonly tokens: Map<string, string>,
    private readonly tls: { cert: string; key: string },
  ) {
    // Raced by every wait; a failure nobody waits on is caught by afterEach.
    this.failed.catch(() => undefined);
  }

  async start(): Promise<void> {
    this.server = https.createServer(this.tls, (req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on(
        "end",
        () =>
          void this.answer(req.headers.authorization ?? "", Buffer.concat(chunks).toString(), res).catch(
            (err: unknown) => {
              this.failures.push(err);
              this.fail(err);
              res
                .writeHead(500, { "content-type": "application/json" })
                .end(JSON.stringify({ error: String(err) }));
            },
          ),
      );
    });
    await new Promise<void>((r) => this.server.listen(0, "127.0.0.1", r));
    this.url = `https://127.0.0.1:${(this.server.address() as AddressInfo).port}/reconcile`;
  }

  private async answer(auth: string, text: string, res: ServerResponse): Promise<void> {
    const caller = this.tokens.get(auth.replace(/^Bearer /, ""));
    if (!caller) {
      this.rejected.push(auth);
      res.writeHead(401, { "content-type": "application/json" }).end('{"error":"unauthorized"}');
      return;
    }
    const { key } = JSON.parse(text) as { key: string };
    const other = this.inFlight.get(key);
    if (other !== undefined) this.overlaps.push(`${key}: ${caller} while ${other}`);
    this.inFlight.set(key, caller);
    const routes = [...this.inFlight.keys()].filter((k) => k !== SNAPSHOT_KEY).length;
    this.maxRouteConcurrency = Math.max(this.maxRouteConcurrency, routes);
    this.maxSnapshotConcurrency = Math.max(
      this.maxSnapshotConcurrency,
      this.inFlight.has(SNAPSHOT_KEY) ? 1 : 0,
    );
    const start = Date.now();
    const reply = this.script.get(key)?.shift() ?? { status: 200, body: { result: "done", did: [] } };
    // Long enough for overlaps to show if the watcher allowed them.
    await sleep(reply.delayMs ?? (key === SNAPSHOT_KEY ? 60 : 10));
    if (this.inFlight.get(key) === caller) this.inFlight.delete(key);
    this.calls.push({ key, caller, start, end: Date.now() });
    res.writeHead(reply.status, { "content-type": "application/json" }).end(JSON.stringify(reply.body));
  }

  callsSince(t: number, caller?: string): Call[] {
    return this.calls.filter((c) => c.start >= t && (caller === undefined || c.caller === caller));
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

const NS = "shop";
const CRD = "edgeroutes.net.10xdev.io";

function route(name: string, services: string[]) {
  return {
    apiVersion: "net.10xdev.io/v2",
    kind: "EdgeRoute",
    metadata: { name, namespace: NS },
    spec: {
      hostnames: [`${name}.example.com`],
      rules: services.map((s, i) => ({
        matches: [{ path: { type: "PathPrefix", value: `/${i}` } }],
        backends: [{ name: s, port: 80 }],
      })),
    },
  };
}

const list = (items: unknown[]) => JSON.stringify({ apiVersion: "v1", kind: "List", items });
const routeKeys = (calls: Call[]) => new Set(calls.map((c) => c.key).filter((k) => k !== SNAPSHOT_KEY));

describe("edge-operator watch", () => {
  let cp: ControlPlane;
  let recorder: Recorder;
  let dir: string;
  let kubeconfig: string;
  const tokenFiles = new Map<string, string>();
  const procs: Supervised[] = [];

  const kubectl = async (args: string[], input?: string): Promise<string> => {
    const r = await cp.kubectl(args, input === undefined ? undefined : { input });
    if (r.code !== 0) throw new Error(`kubectl ${args.join(" ")}: ${r.stderr}`);
    return r.stdout;
  };

  const startWatcher = (name: string, args: string[]): Supervised => {
    const p = startCli(
      name,
      [
        "watch",
        "--reconcile-url",
        recorder.url,
        "--reconcile-ca",
        path.join(dir, "ca.pem"),
        "--token-file",
        tokenFiles.get(name)!,
        "--kubeconfig",
        kubeconfig,
        "--identity",
        name,
        ...args,
      ],
      { LOG_LEVEL: "info" },
    );
    procs.push(p);
    return p;
  };

  const holder = async (): Promise<string> => {
    const lease = JSON.parse(
      await kubectl(["get", "lease", "-n", "default", "edge-watch-test", "-o", "json"]),
    ) as {
      spec: { holderIdentity?: string };
    };
    return lease.spec.holderIdentity ?? "";
  };

  beforeAll(async () => {
    cp = await startControlPlane();
    dir = mkdtempSync(path.join(os.tmpdir(), "edge-watch-"));
    const ca = createCa();
    writeFileSync(path.join(dir, "ca.pem"), ca.cert);
    const tokens = new Map<string, string>();
    for (const name of ["watcher-a", "watcher-b", "watcher-c", "watcher-d"]) {
      const token = `token-${name}-${Math.random().toString(36).slice(2)}`;
      tokens.set(token, name);
      const file = path.join(dir, `${name}.token`);
      writeFileSync(file, `${token}\n`);
      tokenFiles.set(name, file);
    }
    recorder = new Recorder(
      tokens,
      issueCertificate(ca, { commonName: "reconcile", ips: ["127.0.0.1"], usage: "server" }),
    );
    await recorder.start();

    // The watcher runs with only the access it needs, as the chart grants it.
    kubeconfig = await cp.restrictedKubeconfig("edge-watcher", [
      { apiGroups: ["net.10xdev.io"], resources: ["edgeroutes"], verbs: ["list", "watch"] },
      { apiGroups: [""], resources: ["services"], verbs: ["list", "watch"] },
      { apiGroups: ["discovery.k8s.io"], resources: ["endpointslices"], verbs: ["list", "watch"] },
      { apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["get", "create", "update"] },
    ]);

    await kubectl(["apply", "-f", "-"], JSON.stringify(buildCrd({ storageVersion: "v2" })));
    await kubectl(["wait", "--for", "condition=Established", `crd/${CRD}`, "--timeout=60s"]);
    await kubectl(["create", "namespace", NS]);
    const services = Array.from({ length: 10 }, (_, i) => ({
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: `svc-${i}`, namespace: NS },
      spec: { ports: [{ port: 80 }] },
    }));
    await kubectl(["apply", "-f", "-"], list(services));
  });

  /** The harness's wait, failing at once with whatever went wrong inside the fake /reconcile server. */
  const waitFor = <T>(what: string, fn: () => Promise<T | undefined>, timeoutMs?: number, everyMs?: number) =>
    Promise.race([waitForHarness(what, fn, timeoutMs, everyMs), recorder.failed]);
  afterEach(() => {
    expect(recorder?.failures ?? []).toEqual([]);
  });

  afterAll(async () => {
    await Promise.all(procs.map((p) => p.stop()));
    await recorder?.stop();
    await cp?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("rejects bad flags with a one-line reason", async () => {
    const p = startCli("bad", ["watch", "--reconcile-url", "https://x", "--resync", "soon"]);
    expect(await p.exited).toBe(2);
    expect(p.output().trim()).toBe(
      'edge-operator watch: --resync: must be a duration such as 300ms, 15s or 5m, got "soon"',
    );
  });

  describe("one watcher", () => {
    let a: Supervised;
    const since = { t: 0 };

    beforeAll(async () => {
      since.t = Date.now();
      // No route-key budget here: these tests follow each change to its own key
      // (the budget has its own test below).
      a = startWatcher("watcher-a", [
        "--no-leader-elect",
        "--concurrency",
        "4",
        "--resync",
        "0",
        "--route-key-qps",
        "0",
      ]);
      await waitFor(
        "the first snapshot call",
        async () =>
          recorder.callsSince(since.t, "watcher-a").some((c) => c.key === SNAPSHOT_KEY) || undefined,
      );
    });

    it("reconciles every one of 200 new routes, with a handful of snapshot builds", async () => {
      const t = Date.now();
      const routes = Array.from({ length: 200 }, (_, i) => route(`r${i}`, [`svc-${i % 10}`]));
      await kubectl(["apply", "-f", "-"], list(routes));
      await waitFor(
        "200 route keys",
        async () => routeKeys(recorder.callsSince(t)).size === 200 || undefined,
        60_000,
      );
      await sleep(1500);
      const calls = recorder.callsSince(t);
      expect(routeKeys(calls)).toEqual(new Set(routes.map((r) => `${NS}/${r.metadata.name}`)));
      const snapshots = calls.filter((c) => c.key === SNAPSHOT_KEY).length;
      const spanMs = Math.max(...calls.map((c) => c.end)) - t;
      expect(snapshots).toBeGreaterThanOrEqual(1);
      // The build waits for a quiet 200 ms, at most 1 s under churn: about one
      // per second of the burst, plus the one after it settles.
      expect(snapshots).toBeLessThanOrEqual(Math.ceil(spanMs / 1000) + 3);
      // Each route once: a create is one event, and the queue de-duplicates.
      expect(calls.length - snapshots).toBeLessThanOrEqual(220);
      expect(recorder.maxRouteConcurrency).toBeLessThanOrEqual(4);
      expect(recorder.maxRouteConcurrency).toBeGreaterThan(1);
      expect(recorder.maxSnapshotConcurrency).toBe(1);
      expect(recorder.overlaps).toEqual([]);
      expect(recorder.rejected).toEqual([]);
    });

    it("re-enqueues exactly the routes that use a Service when it changes", async () => {
      await sleep(500);
      const t = Date.now();
      await kubectl(["annotate", "service", "-n", NS, "svc-3", "touched=1"]);
      const expected = new Set(Array.from({ length: 20 }, (_, j) => `${NS}/r${3 + 10 * j}`));
      await waitFor("svc-3's routes", async () => routeKeys(recorder.callsSince(t)).size >= 20 || undefined);
      await sleep(800);
      expect(routeKeys(recorder.callsSince(t))).toEqual(expected);
      expect(recorder.callsSince(t).filter((c) => c.key === SNAPSHOT_KEY).length).toBeGreaterThanOrEqual(1);
    });

    it("re-enqueues the routes of a Service whose EndpointSlice changes", async () => {
      await sleep(500);
      const expected = new Set(Array.from({ length: 20 }, (_, j) => `${NS}/r${5 + 10 * j}`));
      const slice = (ip: string) =>
        JSON.stringify({
          apiVersion: "discovery.k8s.io/v1",
          kind: "EndpointSlice",
          metadata: { name: "svc-5-abc", namespace: NS, labels: { "kubernetes.io/service-name": "svc-5" } },
          addressType: "IPv4",
          endpoints: [{ addresses: [ip], conditions: { ready: true } }],
          ports: [{ port: 8080, protocol: "TCP" }],
        });
      for (const ip of ["10.1.0.5", "10.1.0.6"]) {
        const t = Date.now();
        await kubectl(["apply", "-f", "-"], slice(ip));
        await waitFor(
          "svc-5's routes",
          async () => routeKeys(recorder.callsSince(t)).size >= 20 || undefined,
        );
        await sleep(800);
        expect(routeKeys(recorder.callsSince(t))).toEqual(expected);
        expect(recorder.callsSince(t).some((c) => c.key === SNAPSHOT_KEY)).toBe(true);
      }
    });

    it("enqueues a route and the snapshot when the route changes, the snapshot alone when it goes", async () => {
      await sleep(500);
      let t = Date.now();
      await kubectl(["apply", "-f", "-"], JSON.stringify(route("r7", ["svc-7", "svc-8"])));
      await waitFor("r7", async () => recorder.callsSince(t).some((c) => c.key === `${NS}/r7`) || undefined);
      // r7 now also uses svc-8: svc-8's change reaches it.
      t = Date.now();
      await kubectl(["annotate", "service", "-n", NS, "svc-8", "touched=1"]);
      await waitFor("svc-8's routes", async () => routeKeys(recorder.callsSince(t)).size >= 21 || undefined);
      expect(routeKeys(recorder.callsSince(t)).has(`${NS}/r7`)).toBe(true);
      await sleep(500);
      t = Date.now();
      await kubectl(["delete", "edgeroute.v2.net.10xdev.io", "-n", NS, "r199"]);
      // Gone: the snapshot key alone (a route key would only find it gone).
      await waitFor("a snapshot after delete", async () => {
        const c = recorder.callsSince(t);
        return c.some((x) => x.key === SNAPSHOT_KEY) || undefined;
      });
      await sleep(500);
      expect(recorder.callsSince(t).some((x) => x.key === `${NS}/r199`)).toBe(false);
    });

    it("retries a failing key with growing backoff, and honours requeueAfterMs", async () => {
      const flaky = `${NS}/flaky`;
      const later = `${NS}/later`;
      recorder.script.set(flaky, [
        { status: 500, body: { error: "boom" } },
        { status: 200, body: { result: "bogus" } },
        { status: 503, body: {} },
      ]);
      recorder.script.set(later, [
        { status: 200, body: { result: "requeue", requeueAfterMs: 700, did: [] } },
      ]);
      const t = Date.now();
      await kubectl(["apply", "-f", "-"], list([route("flaky", ["svc-1"]), route("later", ["svc-1"])]));
      await waitFor(
        "flaky's 4th call",
        async () => recorder.callsSince(t).filter((c) => c.key === flaky).length >= 4 || undefined,
      );
      const calls = recorder.callsSince(t).filter((c) => c.key === flaky);
      const gaps = calls.slice(1).map((c, i) => c.start - calls[i]!.end);
      // The backoff doubles from 5 ms: the third retry waits at least 20 ms.
      expect(gaps[0]!).toBeGreaterThanOrEqual(4);
      expect(gaps[2]!).toBeGreaterThanOrEqual(19);
      await waitFor(
        "later's 2nd call",
        async () => recorder.callsSince(t).filter((c) => c.key === later).length >= 2 || undefined,
      );
      const laterCalls = recorder.callsSince(t).filter((c) => c.key === later);
      expect(laterCalls[1]!.start - laterCalls[0]!.end).toBeGreaterThanOrEqual(650);
      await sleep(500);
      expect(recorder.callsSince(t).filter((c) => c.key === flaky)).toHaveLength(4);
    });

    it("stops on SIGTERM with status 0", async () => {
      expect(await a.stop()).toBe(0);
      expect(a.output()).toContain('"msg":"stopped"');
      expect(recorder.overlaps).toEqual([]);
    });

    it("started again over 200 routes, and at each resync, calls the snapshot key alone; a change after is its own key", async () => {
      const t = Date.now();
      const again = startWatcher("watcher-a", ["--no-leader-elect", "--resync", "1s"]);
      await waitFor(
        "the start's snapshot call and a resync's",
        async () =>
          recorder.callsSince(t, "watcher-a").filter((c) => c.key === SNAPSHOT_KEY).length >= 2 || undefined,
        20_000,
      );
      // The routes already there are judged by the snapshot key, which reads them all.
      expect(routeKeys(recorder.callsSince(t))).toEqual(new Set());
      const t2 = Date.now();
      await kubectl(["apply", "-f", "-"], JSON.stringify(route("after-restart", ["svc-2"])));
      await waitFor(
        "the new route's key",
        async () => recorder.callsSince(t2).some((c) => c.key === `${NS}/after-restart`) || undefined,
      );
      await sleep(500);
      expect(routeKeys(recorder.callsSince(t))).toEqual(new Set([`${NS}/after-restart`]));
      expect(recorder.overlaps).toEqual([]);
      expect(await again.stop()).toBe(0);
    });

    it("with the default route-key budget (10/s, 20 at once), a burst of 150 creates is that many route calls at most, then the snapshot key", async () => {
      const w = startWatcher("watcher-a", ["--no-leader-elect", "--resync", "0"]);
      const t = Date.now();
      await waitFor(
        "the start's snapshot call",
        async () => recorder.callsSince(t, "watcher-a").some((c) => c.key === SNAPSHOT_KEY) || undefined,
        20_000,
      );
      const t1 = Date.now();
      const burst = Array.from({ length: 150 }, (_, i) => route(`budget${i}`, [`svc-${i % 10}`]));
      await kubectl(["apply", "-f", "-"], list(burst));
      const applied = Date.now();
      // Quiet for 1.5 s: the snapshot lane's last call is done.
      await waitFor(
        "the watcher to go quiet",
        async () => {
          const c = recorder.callsSince(t1, "watcher-a");
          const last = Math.max(...c.map((x) => x.end), applied);
          return Date.now() - last > 1500 || undefined;
        },
        60_000,
        250,
      );
      const calls = recorder.callsSince(t1, "watcher-a");
      const keys = [...routeKeys(calls)].filter((k) => k.startsWith(`${NS}/budget`));
      const spanSeconds = (applied - t1) / 1000;
      expect(keys.length).toBeLessThanOrEqual(20 + Math.ceil(10 * spanSeconds) + 2);
      // The snapshot key, which judges every route, ran after the last route key.
      const lastRouteCall = Math.max(...calls.filter((c) => c.key !== SNAPSHOT_KEY).map((c) => c.start), 0);
      expect(calls.some((c) => c.key === SNAPSHOT_KEY && c.start >= lastRouteCall)).toBe(true);
      expect(await w.stop()).toBe(0);
    });
  });

  describe("leader election", () => {
    const lease = [
      "--lease-namespace",
      "default",
      "--lease-name",
      "edge-watch-test",
      "--lease-duration",
      "6s",
    ];
    // No route-key budget: the handover is followed route by route.
    const metrics = ["--metrics-listen", "127.0.0.1:0", "--resync", "0", "--route-key-qps", "0"];

    it("only the leader calls; after kill -9 the standby takes over within the lease duration; SIGTERM hands over at once", async () => {
      const t0 = Date.now();
      const b = startWatcher("watcher-b", [...lease, ...metrics]);
      await waitFor(
        "b to lead",
        async () => (await holder().catch(() => "")) === "watcher-b" || undefined,
        30_000,
      );
      const c = startWatcher("watcher-c", [...lease, ...metrics]);
      // c is up, its caches warm (its /healthz says synced), and standing by.
      const cMetrics = await waitFor(
        "c's metrics address",
        async () => /"metrics":"(http:[^"]+)"/.exec(c.output())?.[1],
      );
      await waitFor("c synced", async () => {
        const h = (await (await fetch(`${cMetrics}/healthz`)).json()) as { synced: boolean; leader: boolean };
        expect(h.leader).toBe(false);
        return h.synced || undefined;
      });
      const metricsText = await (await fetch(`${cMetrics}/metrics`)).text();
      expect(metricsText).toContain("edge_operator_queue_depth");
      expect(metricsText).toMatch(/^edge_operator_watcher_leader 0$/m);

      // A burst of routes; the leader is killed in the middle of it.
      const burst = Array.from({ length: 60 }, (_, i) => route(`burst${i}`, [`svc-${i % 10}`]));
      const tBurst = Date.now();
      await kubectl(["apply", "-f", "-"], list(burst.slice(0, 30)));
      await waitFor(
        "b working on the burst",
        async () => recorder.callsSince(tBurst, "watcher-b").length > 0 || undefined,
      );
      expect(recorder.callsSince(t0, "watcher-c")).toEqual([]);
      const killedAt = Date.now();
      await b.kill();
      await kubectl(["apply", "-f", "-"], list(burst.slice(30)));
      await waitFor(
        "c to call",
        async () => recorder.callsSince(killedAt, "watcher-c").length > 0 || undefined,
        20_000,
      );
      const takeover = recorder.callsSince(killedAt, "watcher-c")[0]!.start - killedAt;
      // The lease duration (6 s) from when c last saw b renew, which is up to
      // one retry period (1.2 s, jittered) after the renewal, plus c's next try.
      expect(takeover).toBeLessThan(6000 + 3000);
      expect(await holder()).toBe("watcher-c");
      // Everything converges under the new leader: every burst route reconciled by c.
      await waitFor(
        "all 60 burst routes via c",
        async () => {
          const byC = routeKeys(recorder.callsSince(killedAt, "watcher-c"));
          return burst.every((r) => byC.has(`${NS}/${r.metadata.name}`)) || undefined;
        },
        30_000,
      );

      // A third watcher stands by; SIGTERM to the leader hands over at once.
      const d = startWatcher("watcher-d", [...lease, ...metrics]);
      const dMetrics = await waitFor(
        "d's metrics address",
        async () => /"metrics":"(http:[^"]+)"/.exec(d.output())?.[1],
      );
      await waitFor(
        "d synced",
        async () =>
          ((await (await fetch(`${dMetrics}/healthz`)).json()) as { synced: boolean }).synced || undefined,
      );
      await sleep(1000);
      expect(recorder.callsSince(t0, "watcher-d")).toEqual([]);
      const stoppedAt = Date.now();
      expect(await c.stop()).toBe(0);
      expect(c.output()).toContain("lease: released");
      await waitFor("d to lead", async () => (await holder()) === "watcher-d" || undefined, 10_000);
      const handover = Date.now() - stoppedAt;
      // Far inside the 6 s lease: d saw the empty holder at its next try.
      expect(handover).toBeLessThan(3500);
      await waitFor(
        "d to call",
        async () => recorder.callsSince(stoppedAt, "watcher-d").length > 0 || undefined,
        5000,
      );
      expect(recorder.callsSince(stoppedAt, "watcher-c")).toEqual([]);

      expect(recorder.overlaps).toEqual([]);
      expect(recorder.rejected).toEqual([]);
      expect(await d.stop()).toBe(0);
    });
  });
});
