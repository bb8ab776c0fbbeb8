import { describe, expect, it } from "vitest";
import { ACKED, PENDING, TypeAck, clientStatus, combine } from "./ack-tracker.js";

describe("TypeAck", () => {
  it("an ACK of the response sent makes its content held; a NACK keeps the old and says why", () => {
    const t = new TypeAck();
    expect(t.status("d1")).toEqual(PENDING);
    t.sent("1", "v1", "d1");
    expect(t.isLatest("1")).toBe(true);
    expect(t.ack("1")).toBe(true);
    expect(t.status("d1")).toEqual(ACKED);
    expect(t.isLatest("1")).toBe(true);
    t.sent("2", "v2", "d2");
    expect(t.isLatest("1")).toBe(false);
    expect(t.reject("2", "bad cluster")).toBe(true);
    expect(t.status("d2")).toEqual({ kind: "rejected", message: "bad cluster" });
    expect(t.status("d1")).toEqual(ACKED);
    expect(t.ackedVersion()).toBe("v1");
    expect(t.lastNack()).toEqual({ version: "v2", message: "bad cluster" });
    // The same content under a later version is still refused; new content is pending.
    expect(t.status("d3")).toEqual(PENDING);
    t.sent("3", "v3", "d3");
    expect(t.ack("2")).toBe(false);
    expect(t.ack("3")).toBe(true);
    expect(t.lastNack()).toBeUndefined();
    expect(t.status("d3")).toEqual(ACKED);
  });

  it("an ACK of a later response answers the earlier ones too", () => {
    const t = new TypeAck();
    t.sent("1", "v1", "d1");
    t.sent("2", "v2", "d2");
    expect(t.ack("2")).toBe(true);
    expect(t.ack("1")).toBe(false);
    expect(t.status("d2")).toEqual(ACKED);
  });
});

describe("combine", () => {
  const rejected = (message: string) => ({ kind: "rejected", message }) as const;

  it("no client: none; all ACKed: synced; any waiting: pending", () => {
    expect(combine([])).toEqual({ kind: "none" });
    expect(combine([{ id: "a", status: ACKED }])).toEqual({ kind: "synced", clients: 1 });
    expect(
      combine([
        { id: "a", status: ACKED },
        { id: "b", status: PENDING },
      ]),
    ).toEqual({ kind: "pending", waiting: ["b"] });
  });

  it("a refusal wins, names the first client by id whatever the order, and counts the rest", () => {
    const clients = [
      { id: "b", status: rejected("no B") },
      { id: "c", status: PENDING },
      { id: "a", status: rejected("no A") },
    ];
    const expected = { kind: "rejected", message: "xDS client a rejected it: no A (and 1 more client(s))" };
    expect(combine(clients)).toEqual(expected);
    expect(combine([...clients].reverse())).toEqual(expected);
  });

  it("a client's types: a refusal of any, then any wait", () => {
    expect(clientStatus([ACKED, PENDING, rejected("x")])).toEqual(rejected("x"));
    expect(clientStatus([ACKED, PENDING])).toEqual(PENDING);
    expect(clientStatus([])).toEqual(ACKED);
  });
});

describe("a client's words", () => {
  it("a NACK's message past 2,048 characters is cut, and says how much was left out", () => {
    const ack = new TypeAck();
    ack.sent("1", "v1", "d1");
    ack.reject("1", "x".repeat(40_000));
    const message = ack.lastNack()?.message ?? "";
    expect(message.length).toBeLessThan(2_100);
    expect(message.endsWith("… (37952 more characters)")).toBe(true);
    expect(ack.status("d1")).toEqual({ kind: "rejected", message });
  });
});

describe("a response sent in parts", () => {
  it("is held once its last part is ACKed; a part refused is the whole refused, whatever the last part's answer", () => {
    const taken = new TypeAck();
    taken.sent("1", "v1", "d/part-0", "3");
    taken.sent("2", "v1", "d/part-1", "3");
    taken.sent("3", "v1", "d", "3");
    // Answers to the earlier parts speak for now: they are parts of the latest response.
    expect(taken.isLatest("1")).toBe(true);
    expect(taken.wholeOf("2")).toBe("3");
    taken.ack("1");
    taken.ack("2");
    expect(taken.status("d")).toEqual({ kind: "pending" });
    taken.ack("3");
    expect(taken.status("d")).toEqual({ kind: "acked" });

    const refused = new TypeAck();
    refused.sent("1", "v1", "d/part-0", "2");
    refused.sent("2", "v1", "d", "2");
    refused.reject("1", "bad route");
    expect(refused.status("d")).toEqual({ kind: "rejected", message: "bad route" });
    refused.ack("2");
    expect(refused.status("d")).toEqual({ kind: "rejected", message: "bad route" });
  });
});
