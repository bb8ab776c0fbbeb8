// SaidStatuses is nextStatus remembered: over any sequence of routes (objects
// that stay, and new ones as a status write or an edit makes them) and of the
// conditions a pass wants (shared objects and fresh copies), it answers what
// nextStatus answers.

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { EdgeRouteStatus, EdgeRouteV2 } from "../api/types.js";
import { nextStatus, type ConditionType, type DesiredCondition } from "./conditions.js";
import { SaidStatuses } from "./said-statuses.js";

const accepted: DesiredCondition = { type: "Accepted", status: "True", reason: "Valid", message: "ok" };
const synced: DesiredCondition = { type: "Programmed", status: "True", reason: "Synced", message: "served" };
const pending: DesiredCondition = {
  type: "Programmed",
  status: "False",
  reason: "Pending",
  message: "waiting",
};
const refs: DesiredCondition = {
  type: "ResolvedRefs",
  status: "True",
  reason: "ResolvedRefs",
  message: "tls",
};

/** A route with `status`, as the cache would hand it: a new object per version. */
function route(generation: number, status: EdgeRouteStatus | undefined): EdgeRouteV2 {
  return {
    apiVersion: "net.10xdev.io/v2",
    kind: "EdgeRoute",
    metadata: { name: "r", namespace: "ns", generation },
    spec: { hostnames: ["a.example.com"], rules: [] },
    ...(status ? { status } : {}),
  } as EdgeRouteV2;
}

/** One step: which route (by slot), whether the slot's object is replaced first, and what the pass wants. */
const step = fc.record({
  slot: fc.nat({ max: 2 }),
  replace: fc.option(fc.record({ generation: fc.integer({ min: 1, max: 3 }), written: fc.boolean() }), {
    nil: undefined,
  }),
  programmed: fc.constantFrom(synced, pending),
  fresh: fc.boolean(),
  tls: fc.boolean(),
});

describe("SaidStatuses", () => {
  it("answers as nextStatus does, over any sequence of route objects and wanted conditions", () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), (steps) => {
        const said = new SaidStatuses();
        const slots = [route(1, undefined), route(1, undefined), route(2, undefined)];
        for (const s of steps) {
          const wanted: DesiredCondition[] = [accepted, s.programmed, ...(s.tls ? [refs] : [])];
          const desired = s.fresh ? wanted.map((c) => ({ ...c })) : wanted;
          const remove: ConditionType[] = s.tls ? [] : ["ResolvedRefs"];
          if (s.replace) {
            const old = slots[s.slot] as EdgeRouteV2;
            // A status write leaves what the pass wanted; an edit moves the generation.
            const status = s.replace.written
              ? nextStatus(old.status, desired, s.replace.generation, "2026-01-01T00:00:00Z", remove)
              : old.status;
            slots[s.slot] = route(s.replace.generation, status ?? old.status);
          }
          const r = slots[s.slot] as EdgeRouteV2;
          const want = nextStatus(r.status, desired, r.metadata.generation, "", remove) !== undefined;
          expect(said.changes(r, desired, remove)).toBe(want);
        }
      }),
      { numRuns: 500 },
    );
  });

  it("remembers only an answer of no change, for that route object and those conditions", () => {
    const said = new SaidStatuses();
    const r = route(1, undefined);
    expect(said.changes(r, [accepted, synced], ["ResolvedRefs"])).toBe(true);
    const written = route(1, nextStatus(r.status, [accepted, synced], 1, "2026-01-01T00:00:00Z"));
    expect(said.changes(written, [accepted, synced], ["ResolvedRefs"])).toBe(false);
    expect(said.changes(written, [accepted, synced], ["ResolvedRefs"])).toBe(false);
    // The same object, wanted otherwise (a client has not answered yet): a change.
    expect(said.changes(written, [accepted, pending], ["ResolvedRefs"])).toBe(true);
    expect(said.changes(written, [accepted, synced, refs], [])).toBe(true);
  });
});
