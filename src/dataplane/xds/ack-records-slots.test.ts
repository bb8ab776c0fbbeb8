// ACK records in the chart's Leases made ahead (slots): each replica claims
// one no live replica holds, with the read resourceVersion as its claim, and
// only ever GETs and PUTs them (what the chart's RBAC grants by name).

import { describe, expect, it } from "vitest";
import type { KubeClient } from "../../kube/client.js";
import { KubeError } from "../../kube/kube-error.js";
import { ACK_ANNOTATION } from "./ack-records.js";
import { AckRecordWriter, ackIdentityFromEnv, ackLeaseSlots } from "./ack-records-lease.js";

const NS = "edge-system";
const PREFIX = "edge-edge-operator-xds";
const BASE = `/apis/coordination.k8s.io/v1/namespaces/${NS}/leases`;

interface Lease {
  metadata: {
    name: string;
    resourceVersion?: string;
    annotations?: Record<string, string>;
    ownerReferences?: unknown[];
  };
  spec?: { holderIdentity?: string; renewTime?: string; leaseDurationSeconds?: number };
}

/** An apiserver's Lease store, enough for the writer: GET and PUT with resourceVersion preconditions. */
class Leases {
  readonly store = new Map<string, Lease>();
  readonly calls: string[] = [];
  private rv = 1;

  constructor(names: string[]) {
    for (const name of names)
      this.store.set(name, { metadata: { name, resourceVersion: String(this.rv++) }, spec: {} });
  }

  client(): KubeClient {
    return {
      json: <T>(method: string, path: string, opts?: { body?: unknown }): Promise<T> => {
        this.calls.push(`${method} ${path.replace(`${BASE}/`, "")}`);
        const name = decodeURIComponent(path.slice(BASE.length + 1));
        const held = this.store.get(name);
        if (method === "GET") {
          if (!held) return Promise.reject(new KubeError(404, "NotFound", `${name} not found`));
          return Promise.resolve(structuredClone(held) as T);
        }
        if (method === "PUT") {
          const body = structuredClone(opts?.body) as Lease;
          if (!held) return Promise.reject(new KubeError(404, "NotFound", `${name} not found`));
          if (body.metadata.resourceVersion !== held.metadata.resourceVersion)
            return Promise.reject(new KubeError(409, "Conflict", `${name}: the object has been modified`));
          body.metadata.resourceVersion = String(this.rv++);
          this.store.set(name, body);
          return Promise.resolve(structuredClone(body) as T);
        }
        return Promise.reject(new KubeError(403, "Forbidden", `${method} is not granted`));
      },
      stream: () => Promise.reject(new Error("no watch here")),
    };
  }
}

const writer = (leases: Leases, pod: string, now: () => number = Date.now) =>
  new AckRecordWriter({
    client: leases.client(),
    identity: { namespace: NS, prefix: PREFIX, pod, podUid: `uid-${pod}`, slots: 3 },
    record: () => ({ replica: pod, clients: [] }),
    now,
  });

describe("ACK records in the chart's Leases", () => {
  it("each replica claims its own slot, writes only with GET and PUT, and releases it on stop", async () => {
    const leases = new Leases(ackLeaseSlots(PREFIX, 3));
    const a = writer(leases, "server-a");
    const b = writer(leases, "server-b");
    a.start();
    await a.idle();
    b.start();
    await b.idle();
    expect([a.name, b.name]).toEqual([`${PREFIX}-0`, `${PREFIX}-1`]);
    const held = leases.store.get(`${PREFIX}-0`);
    expect(held?.spec?.holderIdentity).toBe("server-a");
    expect(held?.metadata.annotations?.[ACK_ANNOTATION]).toBeDefined();
    // The chart made it: a pod must not own it (its deletion would take the Lease with it).
    expect(held?.metadata.ownerReferences).toBeUndefined();
    await a.stop();
    await b.stop();
    expect(new Set(leases.calls.map((c) => c.split(" ")[0]))).toEqual(new Set(["GET", "PUT"]));
    for (const name of ackLeaseSlots(PREFIX, 2)) {
      const left = leases.store.get(name);
      expect(left?.spec).toEqual({});
      expect(left?.metadata.annotations?.[ACK_ANNOTATION]).toBeUndefined();
    }
  });

  it("two replicas racing for one free slot: the loser's PUT conflicts and it claims another", async () => {
    const leases = new Leases(ackLeaseSlots(PREFIX, 3));
    const a = writer(leases, "server-a");
    const b = writer(leases, "server-b");
    a.start();
    b.start();
    await Promise.all([a.idle(), b.idle()]);
    expect(new Set([a.name, b.name]).size).toBe(2);
    expect(leases.calls.filter((c) => c.startsWith("PUT")).length).toBeGreaterThanOrEqual(2);
    await Promise.all([a.stop(), b.stop()]);
  });

  it("takes a slot whose holder stopped renewing, and the same pod takes its own slot back", async () => {
    const leases = new Leases(ackLeaseSlots(PREFIX, 1));
    let now = Date.parse("2026-01-01T00:00:00Z");
    const clock = () => now;
    const dead = writer(leases, "server-dead", clock);
    dead.start();
    await dead.idle();
    // Still live: nothing for another replica.
    const early = writer(leases, "server-new", clock);
    early.start();
    await early.idle();
    expect(early.name).toBe("");
    // Past its duration (15 s) without a renewal: free.
    now += 16_000;
    const late = writer(leases, "server-late", clock);
    late.start();
    await late.idle();
    expect(late.name).toBe(`${PREFIX}-0`);
    expect(leases.store.get(`${PREFIX}-0`)?.spec?.holderIdentity).toBe("server-late");
    // The old holder's release conflicts (the slot is another's now) and changes nothing.
    await dead.stop();
    expect(leases.store.get(`${PREFIX}-0`)?.spec?.holderIdentity).toBe("server-late");
    await Promise.all([early.stop(), late.stop()]);
    // A restarted pod of the same name finds the slot it holds.
    const again = new Leases(ackLeaseSlots(PREFIX, 2));
    const first = writer(again, "server-a", clock);
    first.start();
    await first.idle();
    const restarted = writer(again, "server-a", clock);
    restarted.start();
    await restarted.idle();
    expect(restarted.name).toBe(first.name);
    await Promise.all([first.stop(), restarted.stop()]);
  });
});

describe("the slots from the environment the chart sets", () => {
  const env = { POD_NAME: "p", POD_NAMESPACE: NS, EDGE_OPERATOR_XDS_ACK_LEASE_PREFIX: PREFIX };
  it("reads EDGE_OPERATOR_XDS_ACK_LEASE_SLOTS, and leaves per-pod Leases without it", () => {
    expect(ackIdentityFromEnv({ ...env, EDGE_OPERATOR_XDS_ACK_LEASE_SLOTS: "5" })?.slots).toBe(5);
    expect(ackIdentityFromEnv(env)).not.toHaveProperty("slots");
  });
  it.each(["0", "x", "1.5", "101"])("refuses %j with the variable's name", (v) => {
    expect(() => ackIdentityFromEnv({ ...env, EDGE_OPERATOR_XDS_ACK_LEASE_SLOTS: v })).toThrow(
      "EDGE_OPERATOR_XDS_ACK_LEASE_SLOTS: must be a whole number from 1 to 100",
    );
  });
});
