// Which Leases the chart's ServiceAccounts may write, on the real apiserver
// with the chart installed: the server's ACK records are Leases the chart
// makes (`<fullname>-xds-N`), so RBAC names each one it may get and update,
// with no create or delete; RBAC cannot limit `create` by name, so the chart's
// ValidatingAdmissionPolicy (templates/lease-policy.yaml) holds the watcher to
// its leader Lease, and the server to `<fullname>-xds-*` should its Role be
// widened. Each identity authenticates with a real token
// of its ServiceAccount, and the writes that must go on are made by the code
// that makes them in production (AckRecordWriter, LeaderElector).

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { silentLogger } from "../../src/observability/logger.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as fromYaml, stringify as toYaml } from "yaml";
import { AckRecordWriter } from "../../src/dataplane/xds/ack-records-lease.js";
import { kubeClient, KubeError, type KubeClient } from "../../src/kube/client.js";
import { LeaderElector } from "../../src/kube/lease.js";
import { loadKubeConfig } from "../../src/kube/load-kubeconfig.js";
import { startControlPlane } from "../harness/control-plane.js";
import type { ControlPlane } from "../../tools/testenv/control-plane.js";
import { must, waitFor } from "../../tools/testenv/process.js";
import { REPO_ROOT } from "../../tools/testenv/testbin.js";

const CHART = path.join(REPO_ROOT, "charts/edge-operator");
const NS = "edge-system";
const RELEASE = "edge";
const FULLNAME = "edge-edge-operator";
const LEADER_LEASE = `${FULLNAME}-watcher`;
const ACK_PREFIX = `${FULLNAME}-xds`;
const LEASES = `/apis/coordination.k8s.io/v1/namespaces/${NS}/leases`;
const log = silentLogger();

let cp: ControlPlane;
let dir: string;
let server: KubeClient;
let watcher: KubeClient;

/** The product's own client, authenticated as ServiceAccount `sa` by a token the apiserver issued. */
async function clientAs(sa: string): Promise<KubeClient> {
  const token = (await must(`create token ${sa}`, cp.kubectl(["create", "token", sa, "-n", NS]))).trim();
  const admin = fromYaml(readFileSync(cp.kubeconfig, "utf8")) as { clusters: { cluster: unknown }[] };
  const file = path.join(dir, `${sa}.kubeconfig`);
  writeFileSync(
    file,
    toYaml({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "c", cluster: admin.clusters[0]?.cluster }],
      users: [{ name: sa, user: { token } }],
      contexts: [{ name: sa, context: { cluster: "c", user: sa, namespace: NS } }],
      "current-context": sa,
    }),
  );
  const access = loadKubeConfig(file);
  if (!access) throw new Error(`no access from ${file}`);
  return kubeClient(access);
}

interface Lease {
  metadata: { name: string; resourceVersion?: string; annotations?: Record<string, string> };
  spec?: { holderIdentity?: string };
}

const lease = (name: string): Lease => ({ metadata: { name }, spec: {} }) as Lease;

/** The status of a write, 2xx as 200. */
async function statusOf(p: Promise<unknown>): Promise<{ status: number; message: string }> {
  try {
    await p;
    return { status: 200, message: "" };
  } catch (err) {
    if (err instanceof KubeError) return { status: err.status, message: err.message };
    throw err;
  }
}

/**
 * Waits for the policy to be enforced (from when the apiserver's informer
 * has the binding, a moment after the install) by creating a throwaway Lease
 * as the watcher (RBAC lets it create) until that is refused. Gives up quietly
 * after a while: on a chart without the policy the checks that follow then
 * fail, each with its own write accepted.
 */
async function untilEnforced(): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const r = await statusOf(watcher.json("POST", LEASES, { body: lease("policy-probe") }));
    if (r.status === 403) return;
    if (r.status === 200) await cp.kube().json("DELETE", `${LEASES}/policy-probe`);
    await new Promise((res) => setTimeout(res, 250));
  }
}

beforeAll(async () => {
  cp = await startControlPlane();
  dir = mkdtempSync(path.join(os.tmpdir(), "edge-lease-policy-"));
  await must("create namespace", cp.kubectl(["create", "namespace", NS]));
  // Out of cluster: the ServiceAccounts, RBAC, the watcher's Lease and the policy as in cluster, no pods.
  await must(
    "helm install",
    cp.helm([
      "install",
      RELEASE,
      CHART,
      "-n",
      NS,
      "--set",
      "webhook.urlOverride=https://127.0.0.1:9443",
      "--set",
      "webhook.caBundle=Q0E=",
    ]),
  );
  server = await clientAs(`${FULLNAME}-server`);
  watcher = await clientAs(`${FULLNAME}-watcher`);
  await must("the chart's leader Lease", cp.kubectl(["get", "lease", LEADER_LEASE, "-n", NS]));
  await untilEnforced();
});

afterAll(async () => {
  await cp?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("the server's ServiceAccount and the Leases", () => {
  it("may not update or delete the watcher's leader Lease, nor create any Lease: RBAC names its own", async () => {
    const current = await cp.kube().json<Lease>("GET", `${LEASES}/${LEADER_LEASE}`);
    current.spec = { ...current.spec, holderIdentity: "the-server" };
    const rbac = (verb: string) => `cannot ${verb} resource "leases" in API group "coordination.k8s.io"`;
    const update = await statusOf(server.json("PUT", `${LEASES}/${LEADER_LEASE}`, { body: current }));
    expect.soft(update.status, `PUT ${LEADER_LEASE}: ${update.message}`).toBe(403);
    expect.soft(update.message).toContain(rbac("update"));
    const del = await statusOf(server.json("DELETE", `${LEASES}/${LEADER_LEASE}`));
    expect.soft(del.status, `DELETE ${LEADER_LEASE}: ${del.message}`).toBe(403);
    expect.soft(del.message).toContain(rbac("delete"));
    // Not even one named like an ACK record: the chart makes those.
    for (const name of ["not-an-ack-record", `${ACK_PREFIX}-server-pod-a`]) {
      const create = await statusOf(server.json("POST", LEASES, { body: lease(name) }));
      expect.soft(create.status, `POST ${name}: ${create.message}`).toBe(403);
      expect.soft(create.message).toContain(rbac("create"));
    }
    // Nor delete its own.
    const own = await statusOf(server.json("DELETE", `${LEASES}/${ACK_PREFIX}-0`));
    expect.soft(own.status, `DELETE ${ACK_PREFIX}-0: ${own.message}`).toBe(403);

    const left = await cp.kube().json<Lease>("GET", `${LEASES}/${LEADER_LEASE}`);
    expect(left.spec?.holderIdentity).not.toBe("the-server");
  });

  it("is held to `<fullname>-xds-*` by the policy too, should its Role be widened", async () => {
    const wide = "widened-leases";
    await must(
      "a Role on every Lease",
      cp.kubectl(["create", "role", wide, "-n", NS, "--verb=create,update,delete", "--resource=leases"]),
    );
    await must(
      "bound to the server",
      cp.kubectl([
        "create",
        "rolebinding",
        wide,
        "-n",
        NS,
        `--role=${wide}`,
        `--serviceaccount=${NS}:${FULLNAME}-server`,
      ]),
    );
    try {
      // RBAC's authorizer reads bindings from a cache: wait until the widened Role counts.
      let r = { status: 0, message: "" };
      await waitFor(
        "the widened Role in force",
        async () => {
          r = await statusOf(server.json("POST", LEASES, { body: lease("not-an-ack-record") }));
          return r.message.includes("cannot create") ? undefined : true;
        },
        15_000,
      );
      expect(r.status, r.message).toBe(403);
      expect(r.message).toContain(`may write only its ACK-record Leases, ${NS}/${ACK_PREFIX}-N`);
      const del = await statusOf(server.json("DELETE", `${LEASES}/${LEADER_LEASE}`));
      expect(del.status, del.message).toBe(403);
      // The prefix is the whole `<fullname>-xds-`, not a name that merely starts like it.
      const near = await statusOf(server.json("POST", LEASES, { body: lease(`${ACK_PREFIX}x`) }));
      expect(near.status, `POST ${ACK_PREFIX}x: ${near.message}`).toBe(403);
    } finally {
      await cp.kubectl(["delete", "rolebinding,role", wide, "-n", NS]);
    }
  });

  it("claims, renews and releases one of the chart's ACK-record Leases, as the xds sink does", async () => {
    const slots = (await cp.kube().json<{ items: Lease[] }>("GET", LEASES)).items
      .map((l) => l.metadata.name)
      .filter((n) => /^edge-edge-operator-xds-\d+$/.test(n));
    // server.replicas=2: twice that, plus one.
    expect(slots.sort()).toEqual([0, 1, 2, 3, 4].map((i) => `${ACK_PREFIX}-${i}`));
    const writer = new AckRecordWriter({
      client: server,
      identity: { namespace: NS, prefix: ACK_PREFIX, pod: "server-pod-a", durationSeconds: 1, slots: 5 },
      record: () => ({ replica: "server-pod-a", clients: [] }),
      log,
    });
    writer.start();
    let name = "";
    try {
      // Claimed, then renewed (a PUT) every third of the duration.
      await waitFor(
        "two writes of the ACK record",
        async () => (writer.writes >= 2 ? true : undefined),
        15_000,
      );
      name = writer.name;
      expect(name).toBe(`${ACK_PREFIX}-0`);
      const written = await cp.kube().json<Lease>("GET", `${LEASES}/${name}`);
      expect(written.spec?.holderIdentity).toBe("server-pod-a");
      expect(written.metadata.annotations?.["net.10xdev.io/xds-acks"]).toBeDefined();
    } finally {
      await writer.stop();
    }
    // Released, not deleted: the chart's Lease stays for the next pod.
    const left = await cp.kube().json<Lease>("GET", `${LEASES}/${name}`);
    expect(left.spec?.holderIdentity).toBeUndefined();
    expect(left.metadata.annotations?.["net.10xdev.io/xds-acks"]).toBeUndefined();
  });
  it("three server pods starting at once each claim a Lease of their own", async () => {
    const pods = ["server-pod-x", "server-pod-y", "server-pod-z"];
    const writers = pods.map(
      (pod) =>
        new AckRecordWriter({
          client: server,
          identity: { namespace: NS, prefix: ACK_PREFIX, pod, durationSeconds: 5, slots: 5 },
          record: () => ({ replica: pod, clients: [] }),
          log,
        }),
    );
    for (const w of writers) w.start();
    try {
      await waitFor(
        "a write by each",
        async () => (writers.every((w) => w.writes >= 1) ? true : undefined),
        15_000,
      );
      const names = writers.map((w) => w.name);
      expect(new Set(names).size, names.join(", ")).toBe(3);
      for (const [i, name] of names.entries()) {
        const held = await cp.kube().json<Lease>("GET", `${LEASES}/${name}`);
        expect(held.spec?.holderIdentity).toBe(pods[i]);
      }
    } finally {
      await Promise.all(writers.map((w) => w.stop()));
    }
  });
});

describe("the watcher's ServiceAccount and the Leases", () => {
  it("may not create a Lease other than its leader Lease", async () => {
    const create = await statusOf(watcher.json("POST", LEASES, { body: lease("not-the-leader-lease") }));
    expect(create.status, create.message).toBe(403);
    expect(create.message).toContain(`may write only its leader Lease, ${NS}/${LEADER_LEASE}`);
  });

  it("takes, renews and releases its leader Lease", async () => {
    let leading = false;
    const elector = new LeaderElector({
      client: watcher,
      namespace: NS,
      name: LEADER_LEASE,
      identity: "watcher-a",
      log,
      leaseDurationMs: 3_000,
      onStartedLeading: () => (leading = true),
      onStoppedLeading: () => (leading = false),
    });
    elector.start();
    try {
      await waitFor("the watcher leading", async () => (leading ? true : undefined), 15_000);
      const held = await cp.kube().json<Lease>("GET", `${LEASES}/${LEADER_LEASE}`);
      expect(held.spec?.holderIdentity).toBe("watcher-a");
    } finally {
      await elector.stop();
    }
    expect(leading).toBe(false);
  });

  it("creates its leader Lease again when it is gone", async () => {
    await must("delete the leader Lease", cp.kubectl(["delete", "lease", LEADER_LEASE, "-n", NS]));
    const created = await statusOf(watcher.json("POST", LEASES, { body: lease(LEADER_LEASE) }));
    expect(created.status, created.message).toBe(200);
  });
});
