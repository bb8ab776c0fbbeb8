import { describe, expect, it } from "vitest";
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
