// `edge-operator status` on a real apiserver, as a user runs it with a
// kubeconfig of their own: the whole operator (serve with the xds sink, as a
// pod would run it, so that it writes its ACK record Lease, and the watcher),
// three hand-driven xDS clients (one ACKs everything, one stops answering,
// one refuses), and routes in several states. What status prints must be what
// the apiserver holds: the routes' conditions as written, each client as its
// replica recorded it.

import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as fromYaml, stringify as toYaml } from "yaml";
import { recordFromLease } from "../../src/dataplane/xds/ack-records-lease.js";
import type { StoredRecord } from "../../src/dataplane/xds/ack-records.js";
import type { Watched } from "../../src/api/object-key.js";
import type { EdgeRouteV2 } from "../../src/api/types.js";
import type { StatusReport } from "../../src/cli/status-report.js";
import { startControlPlane } from "../harness/control-plane.js";
import { startOperatorStack, SYSTEM_NAMESPACE, type OperatorStack } from "../harness/operator-stack.js";
import type { ControlPlane } from "../../tools/testenv/control-plane.js";
import { CLI } from "../../tools/testenv/operator.js";
import { freePort, run, waitFor, type RunResult } from "../../tools/testenv/process.js";
import { startPickyClient, type PickyClient } from "../xds/picky-ads-client.js";
import { apply, cond, getRoute, service, v2Route, waitForConditions } from "./routes.js";

const REPLICA = "edge-operator-0";
const NACK_WORDS = "grpc-picky: cluster shop/blue: unknown field";

let cp: ControlPlane;
let stack: OperatorStack;
let home: string;
let reader: string;
let routesOnly: string;
const clients: PickyClient[] = [];

/** `edge-operator status ARGS` as a user: only their kubeconfig (KUBECONFIG unless --kubeconfig), no cluster env. */
function status(args: string[], env: Record<string, string> = {}): Promise<RunResult> {
  return run(process.execPath, [CLI, "status", ...args], {
    env: { PATH: process.env.PATH ?? "", HOME: home, ...env },
    timeoutMs: 30_000,
  });
}

async function statusJson(args: string[], env: Record<string, string> = {}): Promise<StatusReport> {
  const r = await status([...args, "-o", "json"], env);
  if (r.code !== 0) throw new Error(`status failed (${r.code}): ${r.stderr}`);
  return JSON.parse(r.stdout) as StatusReport;
}

/** Until the route's Accepted reads `want` (`True(Valid)`, `False(ServiceNotFound)`). */
function waitAccepted(name: string, namespace: string, want: string): Promise<true> {
  return waitFor(`${namespace}/${name} to be Accepted=${want}`, async () =>
    cond(await getRoute(cp, name, namespace), "Accepted") === want ? true : undefined,
  );
}

/** This replica's ACK record, straight from its Lease. */
async function ackRecord(): Promise<StoredRecord | undefined> {
  const lease = await cp
    .kube()
    .json<Watched>(
      "GET",
      `/apis/coordination.k8s.io/v1/namespaces/${SYSTEM_NAMESPACE}/leases/edge-operator-xds-${REPLICA}`,
    );
  return recordFromLease(lease, "edge-operator-xds");
}

beforeAll(async () => {
  cp = await startControlPlane();
  home = mkdtempSync(path.join(os.tmpdir(), "edge-status-home-"));
  const ads = await freePort();
  stack = await startOperatorStack(cp, {
    storageVersion: "v2",
    serveArgs: [
      "--dataplane",
      "xds",
      "--xds-listen",
      `127.0.0.1:${ads}`,
      "--xds-plaintext",
      "--xds-ack-timeout",
      "3s",
      // grpc-picky refuses every version from a point on, to be shown as it stands: not held back.
      "--xds-serve-refused",
    ],
    // As the chart's pod: its name and namespace from the downward API, so the replica writes its ACK record.
    serveEnv: { POD_NAME: REPLICA, POD_NAMESPACE: SYSTEM_NAMESPACE },
  });
  for (const name of ["envoy-ok", "envoy-lagging", "grpc-picky"])
    clients.push(startPickyClient(ads, name, { kind: "ack" }));
  for (const ns of ["shop", "blog"]) await cp.kubectl(["create", "namespace", ns]);

  // A user who may read routes and the ACK records, and nothing else; another who may not read Leases.
  const routes = { apiGroups: ["net.10xdev.io"], resources: ["edgeroutes"], verbs: ["list"] };
  const crd = {
    apiGroups: ["apiextensions.k8s.io"],
    resources: ["customresourcedefinitions"],
    verbs: ["get"],
  };
  reader = await cp.restrictedKubeconfig("status-reader", [
    routes,
    crd,
    { apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["list"] },
  ]);
  routesOnly = await cp.restrictedKubeconfig("routes-only", [routes, crd]);

  // web: served, and every client took it.
  await apply(
    cp,
    service("blue", "shop"),
    v2Route("web", { namespace: "shop", host: "shop.example.com", service: "blue" }),
  );
  await waitForConditions(cp, "web", "True(Valid)", "True(Synced)", "shop");
  await waitFor("every client to ACK web's version", async () => {
    const r = await ackRecord();
    return r?.served && r.clients.length === 3 && r.clients.every((c) => c.acked === r.served)
      ? true
      : undefined;
  });

  // dup must be younger than web: creationTimestamp has whole seconds, and a
  // tie goes to namespace/name, where blog/dup would win.
  const webCreated = Date.parse((await getRoute(cp, "web", "shop"))?.metadata.creationTimestamp ?? "");
  await new Promise((r) => setTimeout(r, Math.max(0, webCreated + 1100 - Date.now())));

  // From now on one client takes nothing more, and one refuses.
  clients[1]?.mode({ kind: "hold" });
  clients[2]?.mode({ kind: "nack", message: NACK_WORDS });
  await apply(
    cp,
    // cart: its Service does not exist
    v2Route("cart", { namespace: "shop", host: "cart.example.com", service: "missing" }),
    // dup: the same host and path as web, and younger
    v2Route("dup", { namespace: "blog", host: "shop.example.com", service: "blue" }),
    service("blue", "blog"),
    // secure: TLS from a Secret that does not exist
    {
      ...v2Route("secure", { namespace: "shop", host: "secure.example.com", path: "/pay", service: "blue" }),
      spec: {
        ...v2Route("secure", { namespace: "shop", host: "secure.example.com", path: "/pay", service: "blue" })
          .spec,
        tls: { secretName: "secure-cert" },
      },
    },
  );
  await waitAccepted("cart", "shop", "False(ServiceNotFound)");
  await waitAccepted("dup", "blog", "False(Conflicted)");
  await waitAccepted("secure", "shop", "True(Valid)");
  await waitFor("the refusal and the held version in the ACK record", async () => {
    const r = await ackRecord();
    const by = new Map(r?.clients.map((c) => [c.id, c]));
    return r?.served &&
      by.get("envoy-ok")?.acked === r.served &&
      by.get("envoy-lagging")?.acked !== r.served &&
      by.get("grpc-picky")?.nack?.version === r.served
      ? true
      : undefined;
  });
  // ResolvedRefs as the reconciler writes it for a Secret that does not exist.
  const securePath = "/apis/net.10xdev.io/v2/namespaces/shop/edgeroutes/secure";
  await waitFor("secure's ResolvedRefs=False/SecretNotFound", async () => {
    const r = await cp
      .kube()
      .json<{ status?: { conditions?: { type: string; reason: string }[] } }>("GET", securePath);
    return r.status?.conditions?.some((c) => c.type === "ResolvedRefs" && c.reason === "SecretNotFound")
      ? true
      : undefined;
  });
}, 180_000);

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await stack?.stop();
  await cp?.stop();
  if (home) rmSync(home, { recursive: true, force: true });
}, 60_000);

describe("edge-operator status", () => {
  it("-A -o json: every route's conditions as the apiserver holds them", async () => {
    const report = await statusJson(["-A"], { KUBECONFIG: reader });
    expect(report.routes.map((r) => `${r.namespace}/${r.name}`)).toEqual([
      "blog/dup",
      "shop/cart",
      "shop/secure",
      "shop/web",
    ]);
    for (const row of report.routes) {
      const route = (await getRoute(cp, row.name, row.namespace)) as EdgeRouteV2;
      for (const [type, cell] of [
        ["Accepted", row.accepted],
        ["Programmed", row.programmed],
        ["ResolvedRefs", row.resolvedRefs],
      ] as const) {
        const c = route.status?.conditions?.find((x) => x.type === type);
        expect(cell && { status: cell.status, reason: cell.reason }, `${row.name} ${type}`).toEqual(
          c && { status: c.status, reason: c.reason },
        );
      }
    }
    const by = new Map(report.routes.map((r) => [r.name, r]));
    expect(by.get("web")).toMatchObject({ accepted: { status: "True" }, hosts: ["shop.example.com"] });
    expect(by.get("cart")?.accepted).toMatchObject({ status: "False", reason: "ServiceNotFound" });
    expect(by.get("dup")?.accepted).toMatchObject({ status: "False", reason: "Conflicted" });
    // ResolvedRefs only where the route has spec.tls
    expect(by.get("secure")?.resolvedRefs).toMatchObject({ status: "False", reason: "SecretNotFound" });
    expect([...by.values()].filter((r) => r.resolvedRefs).map((r) => r.name)).toEqual(["secure"]);
  });

  it("each client of the replica: current, stale (held an older version), nacked with its words", async () => {
    const record = await ackRecord();
    const { dataPlane } = await statusJson(["-A"], { KUBECONFIG: reader });
    expect(dataPlane.replicas).toHaveLength(1);
    const [replica] = dataPlane.replicas;
    expect(replica).toMatchObject({
      lease: `${SYSTEM_NAMESPACE}/edge-operator-xds-${REPLICA}`,
      replica: REPLICA,
      served: record?.served,
      live: true,
    });
    expect(replica?.clients.map((c) => [c.id, c.state])).toEqual([
      ["envoy-lagging", "stale"],
      ["envoy-ok", "current"],
      ["grpc-picky", "nacked"],
    ]);
    const picky = replica?.clients.find((c) => c.id === "grpc-picky");
    expect(picky?.nack).toEqual({ version: record?.served, message: NACK_WORDS });
    expect(dataPlane.servedVersions).toEqual([record?.served]);
  });

  it("prints one table of routes and one of clients, kubectl's way", async () => {
    const r = await status(["-A", "--kubeconfig", reader]);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe("");
    const lines = r.stdout.split("\n");
    expect(lines[0]).toMatch(/^NAMESPACE\s+NAME\s+HOSTS\s+ACCEPTED\s+PROGRAMMED\s+RESOLVEDREFS\s+AGE$/);
    expect(r.stdout).toMatch(/^shop\s+cart\s+cart\.example\.com\s+False\/ServiceNotFound\s/m);
    expect(r.stdout).toMatch(/^shop\s+secure\s+secure\.example\.com\s+True\s+\S+\s+False\/SecretNotFound\s/m);
    expect(r.stdout).toMatch(/^shop\s+web\s+shop\.example\.com\s+True\s+\S+\s+-\s/m);
    expect(r.stdout).toMatch(/^REPLICA\s+SERVES\s+RENEWED\s+CLIENT\s+ACKED\s+STATE\s+MESSAGE$/m);
    expect(r.stdout).toMatch(
      new RegExp(
        `^${REPLICA}\\s+\\S+\\s+\\S+\\s+grpc-picky\\s+\\S+\\s+nacked\\s+refused \\S+: ${NACK_WORDS}$`,
        "m",
      ),
    );
    // the docs show this run's output (docs/operations.md)
    if (process.env.STATUS_PRINT) process.stdout.write(`\n$ edge-operator status -A\n${r.stdout}`);
  });

  it("-n and the context's namespace: the routes of one namespace", async () => {
    const shop = await statusJson(["-n", "shop"], { KUBECONFIG: reader });
    expect(shop.routes.map((r) => r.name)).toEqual(["cart", "secure", "web"]);
    // restrictedKubeconfig's context says no namespace: default, which has none
    expect((await statusJson([], { KUBECONFIG: reader })).routes).toEqual([]);
  });

  it("finds the user's kubeconfig as kubectl does: ~/.kube/config, and --context in a merged KUBECONFIG", async () => {
    const text = readFileSync(reader, "utf8");
    mkdirSync(path.join(home, ".kube"), { recursive: true });
    writeFileSync(path.join(home, ".kube", "config"), text);
    try {
      expect((await statusJson(["-A"])).routes).toHaveLength(4);
    } finally {
      rmSync(path.join(home, ".kube"), { recursive: true, force: true });
    }
    // A first file whose current-context wins the merge, and names a cluster that is not there.
    const context = (fromYaml(text) as { contexts: { name: string }[] }).contexts[0]?.name ?? "";
    const first = path.join(home, "first.kubeconfig");
    writeFileSync(
      first,
      toYaml({
        apiVersion: "v1",
        kind: "Config",
        clusters: [{ name: "gone", cluster: { server: "https://127.0.0.1:1" } }],
        users: [{ name: "gone", user: {} }],
        contexts: [{ name: "gone", context: { cluster: "gone", user: "gone" } }],
        "current-context": "gone",
      }),
    );
    const merged = { KUBECONFIG: [first, reader].join(path.delimiter) };
    expect((await statusJson(["-A", "--context", context], merged)).routes).toHaveLength(4);
    const unknown = await status(["-A", "--context", "nope"], merged);
    expect(unknown).toMatchObject({ code: 2, stdout: "" });
    expect(unknown.stderr).toBe(`edge-operator status: ${merged.KUBECONFIG}: no context named "nope"\n`);
  });

  it("-o yaml is the same report", async () => {
    const r = await status(["-A", "-o", "yaml"], { KUBECONFIG: reader });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^routes:\n/);
    expect(r.stdout).toContain("state: nacked");
    expect(r.stdout).toContain(NACK_WORDS);
  });

  it("a user who may not read Leases still gets the routes, and is told why there is no data plane", async () => {
    const r = await status(["-A"], { KUBECONFIG: routesOnly });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^shop\s+web\s/m);
    expect(r.stdout).toContain(
      "No xDS ACK records found: not allowed to list Leases in all namespaces; pass --operator-namespace (the release's namespace)",
    );
  });

  it("exit 1 with the apiserver's words when the user may not list routes", async () => {
    const nobody = await cp.restrictedKubeconfig("nobody", [
      { apiGroups: ["apiextensions.k8s.io"], resources: ["customresourcedefinitions"], verbs: ["get"] },
    ]);
    const r = await status(["-A"], { KUBECONFIG: nobody });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^edge-operator status: .*forbidden.*\n$/);
  });
});
