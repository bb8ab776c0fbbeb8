import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { FINALIZER } from "../../src/api/types.js";
import {
  conditionValue,
  deletionFields,
  LABEL_WIDTH,
  mismatches,
  observedFields,
  renderLine,
  type Fields,
} from "./lifecycle-line.js";

const cond = (type: string, status: "True" | "False", reason: string) => ({
  type,
  status,
  reason,
  message: "",
  lastTransitionTime: "2026-01-01T00:00:00Z",
});

describe("the lab's line format", () => {
  it("prints the lab's five lines byte for byte", () => {
    const lines = [
      renderLine("apply (service missing)", [
        ["Accepted", "false(ServiceNotFound)"],
        ["Programmed", "false"],
        ["dpPushes", "0"],
      ]),
      renderLine("service created (self-heal)", [
        ["Accepted", "true(Valid)"],
        ["Programmed", "true(Synced)"],
        ["dpPushes", "1"],
      ]),
      renderLine("reconcile x2 (idempotent)", [
        ["Accepted", "true"],
        ["Programmed", "true"],
        ["dpPushes", "1"],
      ]),
      renderLine("delete issued (Terminating)", [["exists", "true"]]),
      renderLine("reconcile (finalizer cleanup)", [
        ["exists", "false"],
        ["dpPushes", "2"],
        ["dpRoutes", "0"],
      ]),
    ];
    expect(lines).toEqual([
      "apply (service missing):       Accepted=false(ServiceNotFound) Programmed=false dpPushes=0",
      "service created (self-heal):   Accepted=true(Valid) Programmed=true(Synced) dpPushes=1",
      "reconcile x2 (idempotent):     Accepted=true Programmed=true dpPushes=1",
      "delete issued (Terminating):   exists=true",
      "reconcile (finalizer cleanup): exists=false dpPushes=2 dpRoutes=0",
    ]);
  });

  it("starts the fields in the same column for every label that fits", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: LABEL_WIDTH - 2 }), (label) => {
        expect(renderLine(label, [["k", "v"]]).indexOf("k=v")).toBe(LABEL_WIDTH);
      }),
    );
  });
});

describe("checking a step", () => {
  const expected: Fields = [
    ["Accepted", "true(Valid)"],
    ["dpPushes", "1"],
  ];

  it("holds when every expected field has its value, whatever else was observed", () => {
    expect(mismatches(expected, { Accepted: "true(Valid)", dpPushes: "1", extra: "x" })).toEqual([]);
  });

  it("names each field that differs or is missing", () => {
    expect(mismatches(expected, { Accepted: "false(ServiceNotFound)" })).toEqual([
      "Accepted: expected true(Valid), observed false(ServiceNotFound)",
      "dpPushes: expected 1, observed nothing",
    ]);
  });

  it("prints the observed values in the expected order", () => {
    expect(observedFields(expected, { dpPushes: "3" })).toEqual([
      ["Accepted", "?"],
      ["dpPushes", "3"],
    ]);
  });
});

describe("reading a route", () => {
  const route = {
    metadata: { name: "shop", deletionTimestamp: "2026-01-01T00:00:00Z", finalizers: [FINALIZER] },
    status: {
      conditions: [cond("Accepted", "False", "ServiceNotFound"), cond("Programmed", "True", "Synced")],
    },
  };

  it("lowercases the status, with the reason on request", () => {
    expect(conditionValue(route, "Accepted", true)).toBe("false(ServiceNotFound)");
    expect(conditionValue(route, "Programmed", false)).toBe("true");
    expect(conditionValue(route, "Ready", true)).toBe("none");
    expect(conditionValue(undefined, "Accepted", false)).toBe("none");
  });

  it("shows a Terminating route, and a gone one", () => {
    expect(deletionFields(route, FINALIZER)).toEqual({
      exists: "true",
      deletionTimestamp: "set",
      finalizer: FINALIZER,
    });
    expect(deletionFields({ metadata: { name: "x" } }, FINALIZER)).toEqual({
      exists: "true",
      deletionTimestamp: "unset",
      finalizer: "none",
    });
    expect(deletionFields(undefined, FINALIZER)).toEqual({ exists: "false" });
  });
});
