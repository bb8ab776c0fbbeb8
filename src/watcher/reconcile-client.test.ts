import { describe, expect, it } from "vitest";
import { parseReply } from "./reconcile-client.js";

describe("parseReply", () => {
  it("reads done and requeue replies, with keys to enqueue", () => {
    expect(parseReply('{"result":"done","did":["status"]}')).toEqual({
      kind: "done",
      did: ["status"],
      enqueue: [],
    });
    expect(parseReply('{"result":"requeue","requeueAfterMs":250,"did":[],"enqueue":["$snapshot"]}')).toEqual({
      kind: "requeue",
      afterMs: 250,
      did: [],
      enqueue: ["$snapshot"],
    });
    expect(parseReply('{"result":"requeue"}')).toMatchObject({ kind: "requeue", afterMs: undefined });
  });

  it("turns a malformed reply into a failure that names the field", () => {
    expect(parseReply("<html>")).toEqual({ kind: "failed", reason: "reply is not JSON" });
    expect(parseReply("[]")).toEqual({ kind: "failed", reason: "reply is not a JSON object" });
    expect(parseReply('{"result":"ok"}')).toEqual({
      kind: "failed",
      reason: 'reply.result: must be "done" or "requeue", got "ok"',
    });
    expect(parseReply('{"result":"requeue","requeueAfterMs":-1}')).toEqual({
      kind: "failed",
      reason: "reply.requeueAfterMs: must be a number >= 0",
    });
    expect(parseReply('{"result":"done","enqueue":[1]}')).toEqual({
      kind: "failed",
      reason: "reply.enqueue: must be an array of strings",
    });
  });
});
