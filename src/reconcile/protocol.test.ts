import { describe, expect, it } from "vitest";
import { parseReconcileReply, parseReconcileRequest } from "./protocol.js";

describe("parseReconcileRequest", () => {
  it("reads the key and what the caller has seen; seen is optional", () => {
    expect(parseReconcileRequest({ key: "$snapshot" })).toEqual({ key: "$snapshot" });
    expect(parseReconcileRequest({ key: "a/b", seen: { routes: "12", endpointslices: "9" } })).toEqual({
      key: "a/b",
      seen: { routes: "12", endpointslices: "9" },
    });
  });

  it("names what is wrong", () => {
    expect(parseReconcileRequest({ key: "" })).toHaveProperty("error", expect.stringContaining('"key"'));
    expect(parseReconcileRequest({ key: "a/b", seen: [] })).toEqual({ error: "seen: must be an object" });
    expect(parseReconcileRequest({ key: "a/b", seen: { pods: "1" } })).toEqual({
      error: "seen.pods: unknown; must be one of routes, services, endpointslices",
    });
    expect(parseReconcileRequest({ key: "a/b", seen: { routes: 12 } })).toEqual({
      error: "seen.routes: must be a resourceVersion (a non-empty string)",
    });
  });
});

describe("parseReconcileReply", () => {
  it("reads done and requeue replies, with keys to enqueue", () => {
    expect(parseReconcileReply('{"result":"done","did":["status"]}')).toEqual({
      kind: "done",
      did: ["status"],
      enqueue: [],
    });
    expect(
      parseReconcileReply('{"result":"requeue","requeueAfterMs":250,"did":[],"enqueue":["$snapshot"]}'),
    ).toEqual({
      kind: "requeue",
      afterMs: 250,
      did: [],
      enqueue: ["$snapshot"],
      // A wait the server named (xDS clients, a cache behind): at that period, the backoff not grown.
      notFailure: true,
    });
    const failure = parseReconcileReply('{"result":"requeue"}');
    expect(failure).toMatchObject({ kind: "requeue", afterMs: undefined });
    expect(failure).not.toHaveProperty("notFailure");
  });

  it("turns a malformed reply into a failure that names the field", () => {
    expect(parseReconcileReply("<html>")).toEqual({ kind: "failed", reason: "reply is not JSON" });
    expect(parseReconcileReply("[]")).toEqual({ kind: "failed", reason: "reply is not a JSON object" });
    expect(parseReconcileReply('{"result":"ok"}')).toEqual({
      kind: "failed",
      reason: 'reply.result: must be "done" or "requeue", got "ok"',
    });
    expect(parseReconcileReply('{"result":"requeue","requeueAfterMs":-1}')).toEqual({
      kind: "failed",
      reason: "reply.requeueAfterMs: must be a number >= 0",
    });
    expect(parseReconcileReply('{"result":"done","enqueue":[1]}')).toEqual({
      kind: "failed",
      reason: "reply.enqueue: must be an array of strings",
    });
  });
});
