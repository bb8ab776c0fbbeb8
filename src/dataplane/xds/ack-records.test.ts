import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  combineRecords,
  decodeRecord,
  encodeRecord,
  isLive,
  type AckRecord,
  type ClientAck,
} from "./ack-records.js";
import { ackIdentityFromEnv, recordFromLease } from "./ack-records-lease.js";

const V = "v2";

function rec(replica: string, ...clients: ClientAck[]): AckRecord {
  return { replica, served: V, clients };
}

describe("servesTls in a record", () => {
  it("travels as false only, and a client record without it reads as before", () => {
    const r = rec("pod-a", { id: "a-envoy", acked: V, scope: "*", servesTls: false }, { id: "c2", acked: V });
    const text = encodeRecord(r);
    expect(text).toContain('"servesTls":false');
    expect(decodeRecord("pod-a", text)).toEqual(r);
    expect(() => decodeRecord("pod-a", '{"clients":[{"id":"x","servesTls":true}]}')).toThrow(
      "clients[0].servesTls: must be false when present",
    );
  });
});

describe("combineRecords", () => {
  it("synced only when every client of every replica ACKed the version", () => {
    const a = rec("pod-a", { id: "c1", acked: V });
    const b = rec("pod-b", { id: "c2", acked: V }, { id: "c3", acked: V });
    expect(combineRecords([a, b], V)).toEqual({ kind: "synced", clients: 3 });
    // One client on the other replica still holds the old version: not synced.
    const lagging = rec("pod-b", { id: "c2", acked: V }, { id: "c3", acked: "v1" });
    expect(combineRecords([a, lagging], V)).toEqual({ kind: "pending", waiting: ["c3"] });
  });

  it("a NACK of the version on any replica: rejected, in the client's words", () => {
    const a = rec("pod-a", { id: "c1", acked: V });
    const b = rec("pod-b", {
      id: "c2",
      acked: "v1",
      nack: { version: V, message: "unsupported lb_policy: MAGLEV" },
    });
    expect(combineRecords([a, b], V)).toEqual({
      kind: "rejected",
      message: "xDS client c2 rejected it: unsupported lb_policy: MAGLEV",
    });
    // A NACK of an older version does not speak for this one.
    expect(combineRecords([a, b], "v3")).toEqual({ kind: "pending", waiting: ["c1", "c2"] });
  });

  it("no record, or records without clients: none connected anywhere", () => {
    expect(combineRecords([], V)).toEqual({ kind: "none" });
    expect(combineRecords([rec("pod-a"), rec("pod-b")], V)).toEqual({ kind: "none" });
  });

  const client = fc.record(
    {
      id: fc.constantFrom("c1", "c2", "c3", "node-x"),
      acked: fc.constantFrom("v1", V, "v3"),
      nack: fc.record({ version: fc.constantFrom("v1", V), message: fc.constantFrom("bad", "worse", "no") }),
    },
    { requiredKeys: ["id"] },
  );
  const records = fc.array(
    fc.record({
      replica: fc.constantFrom("pod-a", "pod-b", "pod-c"),
      clients: fc.array(client, { maxLength: 4 }),
    }),
    { maxLength: 4 },
  );

  it("an unreachable client counts, as pending and named, until it is connected again on any replica", () => {
    const since = Date.parse("2026-12-02T10:00:00Z");
    const silent = rec("pod-a", { id: "proxy", acked: "v1", unreachableSince: since });
    expect(combineRecords([silent], V)).toEqual({
      kind: "pending",
      waiting: ["proxy"],
      unreachable: [{ id: "proxy", since }],
    });
    // It reconnected to the other replica and ACKed there: the connected one alone speaks.
    const back = rec("pod-b", { id: "proxy", acked: V });
    expect(combineRecords([silent, back], V)).toEqual({ kind: "synced", clients: 1 });
    expect(combineRecords([back, silent], V)).toEqual({ kind: "synced", clients: 1 });
    // A record keeps when it went silent through its annotation.
    expect(decodeRecord("pod-a", encodeRecord(silent))).toEqual(silent);
    expect(() =>
      decodeRecord("pod-a", JSON.stringify({ clients: [{ id: "x", unreachableSince: "soon" }] })),
    ).toThrow(/clients\[0\]\.unreachableSince: must be a number/);
  });

  it("property: the order of the records and of their clients never changes the verdict", () => {
    fc.assert(
      fc.property(records, fc.func(fc.integer()), (rs, key) => {
        const shuffled = [...rs]
          .map((r) => ({ ...r, clients: [...r.clients].reverse() }))
          .sort((x, y) => key(x.replica, x.clients.length) - key(y.replica, y.clients.length))
          .reverse();
        expect(combineRecords(shuffled, V)).toEqual(combineRecords(rs, V));
      }),
    );
  });

  it("property: synced exactly when there is a client and every one ACKed the version; rejected only on a NACK of it", () => {
    fc.assert(
      fc.property(records, (rs) => {
        const all = rs.flatMap((r) => r.clients);
        const verdict = combineRecords(rs, V);
        if (all.length === 0) {
          expect(verdict).toEqual({ kind: "none" });
          return;
        }
        if (all.every((c) => c.acked === V)) {
          expect(verdict).toEqual({ kind: "synced", clients: all.length });
          return;
        }
        const refused = all.filter((c) => c.acked !== V && c.nack?.version === V);
        if (refused.length > 0) {
          expect(verdict.kind).toBe("rejected");
          // The words are one refusing client's own.
          const msg = verdict.kind === "rejected" ? verdict.message : "";
          expect(refused.some((c) => msg.includes(`${c.id} rejected it: ${c.nack?.message}`))).toBe(true);
        } else expect(verdict.kind).toBe("pending");
      }),
    );
  });

  it("property: the record survives its annotation (encode, decode)", () => {
    fc.assert(
      fc.property(
        fc.record({
          replica: fc.constant("pod-a"),
          served: fc.string({ minLength: 1 }),
          clients: fc.uniqueArray(client, { selector: (c) => c.id }),
        }),
        (r) => {
          const back = decodeRecord("pod-a", encodeRecord(r));
          expect(combineRecords([back], V)).toEqual(combineRecords([r], V));
          expect(back.served).toBe(r.served);
          expect([...back.clients].sort((a, b) => (a.id < b.id ? -1 : 1))).toEqual(
            [...r.clients].sort((a, b) => (a.id < b.id ? -1 : 1)),
          );
        },
      ),
    );
  });
});

describe("decodeRecord", () => {
  it("names the field that is wrong", () => {
    expect(() => decodeRecord("p", "{")).toThrow(/^net.10xdev.io\/xds-acks: not JSON/);
    expect(() => decodeRecord("p", "[]")).toThrow("net.10xdev.io/xds-acks: must be an object");
    expect(() => decodeRecord("p", '{"clients":{}}')).toThrow(
      "net.10xdev.io/xds-acks.clients: must be an array",
    );
    expect(() => decodeRecord("p", '{"clients":[{"id":""}]}')).toThrow(
      "net.10xdev.io/xds-acks.clients[0].id: must be a non-empty string",
    );
    expect(() => decodeRecord("p", '{"clients":[{"id":"a"},{"id":"b","acked":3}]}')).toThrow(
      "net.10xdev.io/xds-acks.clients[1].acked: must be a string",
    );
    expect(() => decodeRecord("p", '{"clients":[{"id":"a","nack":{"version":"v"}}]}')).toThrow(
      "net.10xdev.io/xds-acks.clients[0].nack: must be {version: string, message: string}",
    );
  });
});

describe("liveness and leases", () => {
  const lease = (name: string, renewTime: string | undefined, seconds = 15) => ({
    metadata: {
      name,
      namespace: "edge-system",
      annotations: { "net.10xdev.io/xds-acks": encodeRecord(rec("pod-a", { id: "c1", acked: V })) },
    },
    spec: { holderIdentity: "pod-a", leaseDurationSeconds: seconds, ...(renewTime ? { renewTime } : {}) },
  });

  it("a record counts until its lease duration has passed since its renewal", () => {
    const r = recordFromLease(lease("op-xds-pod-a", "2026-12-01T10:00:00.000000Z"), "op-xds");
    expect(r).toMatchObject({ replica: "pod-a", durationSeconds: 15 });
    const t0 = Date.parse("2026-12-01T10:00:00Z");
    expect(isLive(r!, t0 + 14_999)).toBe(true);
    expect(isLive(r!, t0 + 15_000)).toBe(false);
  });

  it("another release's records (another prefix) are not ours; a record without renewTime is an error", () => {
    expect(
      recordFromLease(lease("other-xds-pod-a", "2026-12-01T10:00:00.000000Z"), "op-xds"),
    ).toBeUndefined();
    expect(() => recordFromLease(lease("op-xds-pod-a", undefined), "op-xds")).toThrow(
      "lease op-xds-pod-a: spec.renewTime and spec.leaseDurationSeconds are required",
    );
  });

  it("the identity comes from the downward API's env; bad durations are named", () => {
    expect(ackIdentityFromEnv({})).toBeUndefined();
    expect(ackIdentityFromEnv({ POD_NAME: "p", POD_NAMESPACE: "ns", POD_UID: "u" })).toEqual({
      pod: "p",
      namespace: "ns",
      podUid: "u",
      prefix: "edge-operator-xds",
      durationSeconds: 15,
    });
    expect(() =>
      ackIdentityFromEnv({ POD_NAME: "p", POD_NAMESPACE: "ns", EDGE_OPERATOR_XDS_ACK_LEASE_SECONDS: "0.5" }),
    ).toThrow(
      'EDGE_OPERATOR_XDS_ACK_LEASE_SECONDS: must be a whole number of seconds from 1 to 3600, got "0.5"',
    );
  });
});
