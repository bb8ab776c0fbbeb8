// Two `serve --dataplane xds` replicas on a real apiserver, each recording its
// clients' ACK state in a Lease, with real gRPC xDS clients (each its own
// process: grpc-js-xds reads one bootstrap per process) and a hand-driven
// client on replica B that ACKs, holds or NACKs as the test says. Whichever
// replica writes status decides from every live replica's record.
//
// Each replica serves its own watch-fed cache's snapshot (snapshot-pipeline.ts):
// replica B gets no /reconcile call until A is gone, and its clients are
// served all the same. The watcher calls A; once A is killed, the test calls
// B's /reconcile as a Service in front of both would route the watcher's calls.

import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO_ROOT } from "../../tools/testenv/testbin.js";
import { SNAPSHOT_KEY } from "../../src/reconcile/protocol.js";
import { startControlPlane } from "../harness/control-plane.js";
import type { ControlPlane } from "../../tools/testenv/control-plane.js";
import {
  registerOperator,
  startOperatorStack,
  SYSTEM_NAMESPACE,
  type OperatorStack,
} from "../harness/operator-stack.js";
import { httpsJson } from "../../tools/testenv/https-json.js";
import { startServe, type ServeProcess } from "../../tools/testenv/operator.js";
import { freePort, sleep, supervise, waitFor, type Supervised } from "../../tools/testenv/process.js";
import { startFailoverForwarder, type FailoverForwarder } from "../xds/failover-forwarder.js";
import { startPickyClient, type PickyClient } from "../xds/picky-ads-client.js";
import { apply, getRoute, service, v2Route, waitForConditions } from "./routes.js";

const HOST = "shop.example.com";
const LEASE_SECONDS = 4;
const PREFIX = "edge-operator-xds";
const CLIENT_MAIN = path.join(REPO_ROOT, "test/xds/xds-client-main.ts");

let cp: ControlPlane;
let stack: OperatorStack;
let serveB: ServeProcess;
let adsA: number;
let adsB: number;
let forwarder: FailoverForwarder;
let grpcA: Supervised;
let grpcB: Supervised;
let picky: PickyClient;
let pumping = true;
let pump: Promise<void> | undefined;

/** The watcher's calls, as a Service would route them once A is gone: B's /reconcile, once a second, bounded. */
function reconcileOnB(): Promise<void> {
  return (async () => {
    for (let i = 0; pumping && i < 300; i++) {
      await httpsJson(
        `${serveB.url}/reconcile`,
        serveB.caPem,
        "POST",
        { key: SNAPSHOT_KEY },
        stack.token,
      ).catch(() => undefined);
      await sleep(1_000);
    }
  })();
}

const replicaEnv = (pod: string) => ({
  POD_NAME: pod,
  POD_NAMESPACE: SYSTEM_NAMESPACE,
  EDGE_OPERATOR_XDS_ACK_LEASE_SECONDS: String(LEASE_SECONDS),
  EDGE_OPERATOR_XDS_ACK_LEASE_PREFIX: PREFIX,
});
const xdsArgs = (port: number) => [
  "--dataplane",
  "xds",
  "--xds-listen",
  `127.0.0.1:${port}`,
  "--xds-plaintext",
  "--xds-ack-timeout",
  "3s",
  // The test reads each replica's clients and records at /debug/xds.
  "--debug-routes",
];

function grpcClient(name: string, adsPort: number): Supervised {
  const bootstrap = {
    xds_servers: [
      {
        server_uri: `127.0.0.1:${adsPort}`,
        channel_creds: [{ type: "insecure" }],
        server_features: ["xds_v3"],
      },
    ],
    node: { id: name, locality: {} },
  };
  return supervise(name, process.execPath, ["--import", "tsx", CLIENT_MAIN, HOST], {
    cwd: REPO_ROOT,
    env: { ...process.env, GRPC_XDS_BOOTSTRAP_CONFIG: JSON.stringify(bootstrap) },
  });
}

type Outcome = { echo: string; other: string };

/** The client's latest outcome line. */
function outcome(p: Supervised): Outcome | undefined {
  const lines = p
    .output()
    .split("\n")
    .filter((l) => l.startsWith('{"echo"'));
  const last = lines.at(-1);
  return last ? (JSON.parse(last) as Outcome) : undefined;
}

function waitOutcome(p: Supervised, want: Outcome, timeoutMs = 30_000): Promise<true> {
  return waitFor(
    `${p.name} to see ${JSON.stringify(want)} (last: ${JSON.stringify(outcome(p))})`,
    async () => {
      const o = outcome(p);
      return o && o.echo === want.echo && o.other === want.other ? true : undefined;
    },
    timeoutMs,
    100,
  );
}

function programmed(r: Awaited<ReturnType<typeof getRoute>>): {
  status?: string;
  reason?: string;
  message?: string;
} {
  return r?.status?.conditions?.find((c) => c.type === "Programmed") ?? {};
}

async function debugXds(serve: ServeProcess): Promise<Record<string, unknown>> {
  const r = await httpsJson(`${serve.url}/debug/xds`, serve.caPem, "GET", undefined, stack.token);
  if (r.status !== 200) throw new Error(`GET /debug/xds: ${r.status}`);
  return r.body as Record<string, unknown>;
}

beforeAll(async () => {
  cp = await startControlPlane();
  adsA = await freePort();
  adsB = await freePort();
  stack = await startOperatorStack(cp, { serveArgs: xdsArgs(adsA), serveEnv: replicaEnv("replica-a") });
  serveB = await startServe({
    args: ["--kubeconfig", cp.kubeconfig, ...xdsArgs(adsB)],
    env: replicaEnv("replica-b"),
  });
  forwarder = await startFailoverForwarder([adsA, adsB]);
}, 120_000);

afterAll(async () => {
  pumping = false;
  await picky?.close();
  await Promise.all([grpcA?.stop(), grpcB?.stop()]);
  await pump;
  await forwarder?.close();
  await serveB?.stop();
  await stack?.stop();
  await cp?.stop();
}, 60_000);

describe("two xDS replicas, ACK state in Leases", () => {
  it("a route turns Programmed=True only once the clients on BOTH replicas ACKed it", async () => {
    // grpc-a reaches A through the forwarder (B only once A is gone); grpc-b and picky-b are on B.
    grpcA = grpcClient("grpc-a", forwarder.port);
    grpcB = grpcClient("grpc-b", adsB);
    picky = startPickyClient(adsB, "picky-b", { kind: "hold" });
    await apply(
      cp,
      service("blue", "default", 50051),
      v2Route("echo", { host: HOST, path: "/echo.Echo", service: "blue", port: 50051 }),
    );
    // Both real clients hold the route...
    await waitOutcome(grpcA, { echo: "routed", other: "unrouted" });
    await waitOutcome(grpcB, { echo: "routed", other: "unrouted" });
    expect(forwarder.connections()).toContain(adsA);
    // ...but picky-b on B has not taken it: not Programmed, on A's word (the watcher calls A).
    await waitFor("echo to say Pending", async () => {
      const p = programmed(await getRoute(cp, "echo"));
      if (p.reason !== "Pending") throw new Error(`Programmed is ${JSON.stringify(p)}`);
      return true;
    });
    await sleep(2 * LEASE_SECONDS * 1000);
    expect(programmed(await getRoute(cp, "echo"))).toMatchObject({ status: "False", reason: "Pending" });
    const a = await debugXds(stack.serve);
    expect(a.verdict).toMatchObject({ kind: "synced", clients: 1 }); // A's own client alone would say synced
    expect(a.combined).toMatchObject({ kind: "pending", waiting: ["picky-b"] });
    expect((a.records as { replica: string }[]).map((r) => r.replica).sort()).toEqual([
      "replica-a",
      "replica-b",
    ]);

    picky.mode({ kind: "ack" });
    await waitForConditions(cp, "echo", "True(Valid)", "True(Synced)", "default", 30_000);
    expect(await debugXds(stack.serve)).toMatchObject({ combined: { kind: "synced", clients: 3 } });
  });

  it("a NACK by a client on replica B: B finds the route and holds it back with the client's words; A and B serve the rest; an edit brings it back", async () => {
    picky.mode({ kind: "nack", message: "picky-b will not take this cluster" });
    // A backend of its own: the clusters change, which is what picky-b subscribes to.
    await apply(
      cp,
      service("red", "default", 50051),
      v2Route("other", { host: HOST, path: "/other.Other", service: "red", port: 50051 }),
    );
    // B's client refused it, so B searches (trials to its own clients) and holds it back;
    // the hold is in the route's status, which A reads too.
    await waitFor("other to be held back", async () => {
      const accepted = (await getRoute(cp, "other"))?.status?.conditions?.find((c) => c.type === "Accepted");
      return accepted?.reason === "Rejected" ? accepted : undefined;
    }).then((a) =>
      expect(a.message).toBe(
        "held back from every xDS client: xDS client picky-b rejected it: picky-b will not take this cluster; it is tried again when its spec changes",
      ),
    );
    // A new route held back is in no client's configuration; the rest still is, on both replicas.
    await waitOutcome(grpcA, { echo: "routed", other: "unrouted" });
    await waitOutcome(grpcB, { echo: "routed", other: "unrouted" });
    await waitForConditions(cp, "echo", "True(Valid)", "True(Synced)", "default", 30_000);
    // The same words on every retry: the watcher's retries rewrite nothing.
    const before = (await getRoute(cp, "other"))?.metadata.resourceVersion;
    await sleep(3_000);
    expect((await getRoute(cp, "other"))?.metadata.resourceVersion).toBe(before);

    // Taken again once the client takes it and the route's spec changes (a hold is for one generation).
    picky.mode({ kind: "ack" });
    const edited = v2Route("other", { host: HOST, path: "/other.Other", service: "red", port: 50051 });
    (edited.spec.rules[0] as { timeout?: string }).timeout = "10s";
    await apply(
      cp,
      edited,
      service("green", "default", 50051),
      v2Route("green", { host: "green.example.com", service: "green", port: 50051 }),
    );
    await waitForConditions(cp, "other", "True(Valid)", "True(Synced)", "default", 30_000);
    await waitForConditions(cp, "green", "True(Valid)", "True(Synced)", "default", 30_000);
    await waitOutcome(grpcA, { echo: "routed", other: "routed" });
  });

  it("a deleted route's finalizer goes only once the clients on both replicas ACKed a version without it", async () => {
    picky.mode({ kind: "hold" });
    const r = await cp.kubectl(["delete", "edgeroutes.v2.net.10xdev.io", "other", "--wait=false"]);
    expect(r.code).toBe(0);
    // A's and B's real clients no longer route it...
    await waitOutcome(grpcA, { echo: "routed", other: "unrouted" });
    await waitOutcome(grpcB, { echo: "routed", other: "unrouted" });
    // ...but picky-b still may: the object stays, Terminating.
    await sleep(2 * LEASE_SECONDS * 1000);
    const held = await getRoute(cp, "other");
    expect(held?.metadata.deletionTimestamp).toBeDefined();
    expect(held?.metadata.finalizers?.length).toBeGreaterThan(0);
    picky.mode({ kind: "ack" });
    await waitFor(
      "other to be gone",
      async () => ((await getRoute(cp, "other")) === undefined ? true : undefined),
      30_000,
      100,
    );
  });

  it("replica A SIGKILLed: its client reconnects to B and gets the current version; Programmed waits out A's record", async () => {
    await stack.serve.process.kill();
    const killedAt = Date.now();
    // The apiserver's webhooks, conversion and the watcher's calls go to B now, as a Service in front of both would.
    await registerOperator(cp, serveB);
    pump = reconcileOnB();
    // A route applied after the kill: only B serves it, and B's reconcile writes statuses.
    await apply(cp, v2Route("other", { host: HOST, path: "/other.Other", service: "red", port: 50051 }));
    await waitOutcome(grpcA, { echo: "routed", other: "routed" });
    await waitOutcome(grpcB, { echo: "routed", other: "routed" });
    expect(forwarder.connections()).not.toContain(adsA);
    const b = await debugXds(serveB);
    expect((b.clients as { id: string }[]).map((c) => c.id).sort()).toEqual(["grpc-a", "grpc-b", "picky-b"]);
    // A's last record says grpc-a holds an older version: until it expires, nobody may claim the new one.
    let firstTrueAt = 0;
    await waitFor(
      "other to be Programmed",
      async () => {
        const p = programmed(await getRoute(cp, "other"));
        if (p.status === "True") firstTrueAt = Date.now();
        return p.status === "True" ? p : undefined;
      },
      30_000,
      100,
    );
    // A renews every LEASE/3 s: its record expired at least 2/3 of the lease after the kill.
    expect(firstTrueAt - killedAt).toBeGreaterThanOrEqual(((LEASE_SECONDS * 2) / 3) * 1000 - 200);
    expect(programmed(await getRoute(cp, "other"))).toMatchObject({ status: "True", reason: "Synced" });
    // Every client B counts holds it.
    expect(await debugXds(serveB)).toMatchObject({ combined: { kind: "synced", clients: 3 } });
  });

  it("a clean stop deletes the replica's record; a SIGKILLed one's stays, expired (in a cluster, its Pod's deletion takes it)", async () => {
    const leases = async () => {
      const r = await cp.kubectl([
        "get",
        "leases",
        "-n",
        SYSTEM_NAMESPACE,
        "-l",
        "app.kubernetes.io/component=xds-acks",
        "-o",
        "jsonpath={.items[*].metadata.name}",
      ]);
      return r.stdout.trim().split(/\s+/).filter(Boolean).sort();
    };
    expect(await leases()).toEqual([`${PREFIX}-replica-a`, `${PREFIX}-replica-b`]);
    pumping = false;
    await pump;
    await serveB.stop();
    expect(await leases()).toEqual([`${PREFIX}-replica-a`]);
  });
});
