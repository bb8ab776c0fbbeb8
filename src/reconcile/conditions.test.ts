import { describe, expect, it } from "vitest";
import fc from "fast-check";
import type { Condition, EdgeRouteStatus } from "../api/types.js";
import { nextStatus, nowRfc3339, type DesiredCondition } from "./conditions.js";

const accepted: DesiredCondition = { type: "Accepted", status: "True", reason: "Valid", message: "ok" };
const programmed: DesiredCondition = {
  type: "Programmed",
  status: "True",
  reason: "Synced",
  message: "in 1a2b",
};

describe("nextStatus", () => {
  it("writes both conditions with observedGeneration on a fresh route", () => {
    const s = nextStatus(undefined, [accepted, programmed], 3, "2026-01-01T00:00:00Z");
    expect(s).toEqual({
      observedGeneration: 3,
      conditions: [
        { ...accepted, observedGeneration: 3, lastTransitionTime: "2026-01-01T00:00:00Z" },
        { ...programmed, observedGeneration: 3, lastTransitionTime: "2026-01-01T00:00:00Z" },
      ],
    });
  });

  it("returns undefined when nothing would change (no no-op write)", () => {
    const s = nextStatus(undefined, [accepted, programmed], 3, "2026-01-01T00:00:00Z");
    expect(nextStatus(s, [programmed, accepted], 3, "2026-02-02T00:00:00Z")).toBeUndefined();
  });

  it("keeps lastTransitionTime when only the reason or message moves", () => {
    const s1 = nextStatus(
      undefined,
      [{ type: "Programmed", status: "False", reason: "Pending", message: "a" }],
      1,
      "T1",
    );
    const s2 = nextStatus(
      s1,
      [{ type: "Programmed", status: "False", reason: "PushFailed", message: "b" }],
      1,
      "T2",
    );
    expect(s2?.conditions?.[0]?.lastTransitionTime).toBe("T1");
    expect(s2?.conditions?.[0]?.reason).toBe("PushFailed");
  });

  it("moves lastTransitionTime when status moves", () => {
    const s1 = nextStatus(
      undefined,
      [{ type: "Accepted", status: "False", reason: "ServiceNotFound", message: "a" }],
      1,
      "T1",
    );
    const s2 = nextStatus(s1, [accepted], 1, "T2");
    expect(s2?.conditions?.[0]?.lastTransitionTime).toBe("T2");
  });

  it("writes when only the generation moved, and keeps conditions it was not asked about", () => {
    const s1 = nextStatus(undefined, [accepted, programmed], 1, "T1");
    const s2 = nextStatus(s1, [accepted], 2, "T2");
    expect(s2?.observedGeneration).toBe(2);
    expect(s2?.conditions?.map((c) => c.type)).toEqual(["Accepted", "Programmed"]);
    expect(s2?.conditions?.[0]?.lastTransitionTime).toBe("T1");
  });

  it("formats times as Kubernetes does", () => {
    expect(nowRfc3339(new Date("2026-11-29T10:11:12.345Z"))).toBe("2026-11-29T10:11:12Z");
  });
});

describe("nextStatus, removing a condition", () => {
  const refs: DesiredCondition = {
    type: "ResolvedRefs",
    status: "True",
    reason: "ResolvedRefs",
    message: "ok",
  };
  it("drops a type named in `remove` and counts that as a change; keeps Accepted and Programmed first", () => {
    const s1 = nextStatus(undefined, [refs, programmed, accepted], 1, "T1");
    expect(s1?.conditions?.map((c) => c.type)).toEqual(["Accepted", "Programmed", "ResolvedRefs"]);
    const s2 = nextStatus(s1, [accepted, programmed], 1, "T2", ["ResolvedRefs"]);
    expect(s2?.conditions?.map((c) => c.type)).toEqual(["Accepted", "Programmed"]);
    expect(nextStatus(s2, [accepted, programmed], 1, "T3", ["ResolvedRefs"])).toBeUndefined();
  });
});

describe("nextStatus, over all inputs", () => {
  const type = fc.constantFrom("Accepted", "Programmed", "ResolvedRefs");
  const status = fc.constantFrom("True", "False", "Unknown");
  const reason = fc.constantFrom("Valid", "Synced", "Pending");
  const message = fc.constantFrom("a", "b");
  const generation = fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined });
  const condition = fc.record({ type, status, reason, message, observedGeneration: generation });
  const current = fc.option(
    fc.record({
      observedGeneration: generation,
      conditions: fc.uniqueArray(condition, { selector: (c) => c.type, maxLength: 3 }),
    }),
    { nil: undefined },
  );
  const desired = fc.uniqueArray(condition, { selector: (c) => c.type, maxLength: 3 });
  const remove = fc.subarray(["ResolvedRefs"] as const);
  const says = (
    s: EdgeRouteStatus | undefined,
    d: Omit<Condition, "lastTransitionTime">,
    g: number | undefined,
  ) =>
    s?.conditions?.some(
      (c) =>
        c.type === d.type &&
        c.status === d.status &&
        c.reason === d.reason &&
        c.message === d.message &&
        c.observedGeneration === g,
    ) === true;

  it("writes nothing exactly when the status already says it all, and what it writes it says", () => {
    fc.assert(
      fc.property(current, desired, generation, remove, (cur, want, gen, rm) => {
        const withTimes = cur && {
          ...cur,
          conditions: cur.conditions.map((c) => ({ ...c, lastTransitionTime: "T0" })),
        };
        const ds = want as unknown as DesiredCondition[];
        const next = nextStatus(withTimes, ds, gen, "T1", rm);
        const goneLeft = (s: EdgeRouteStatus | undefined) =>
          s?.conditions?.some(
            (c) => rm.includes(c.type as "ResolvedRefs") && !ds.some((d) => d.type === c.type),
          );
        const saysAll =
          withTimes?.observedGeneration === gen &&
          ds.every((d) => says(withTimes, d, gen)) &&
          !goneLeft(withTimes);
        expect(next === undefined).toBe(saysAll);
        if (next !== undefined) {
          expect(ds.every((d) => says(next, d, gen))).toBe(true);
          expect(nextStatus(next, ds, gen, "T2", rm)).toBeUndefined();
        }
      }),
      { numRuns: 2000 },
    );
  });
});
