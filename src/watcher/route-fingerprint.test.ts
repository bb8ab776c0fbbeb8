import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { specV2, status } from "../../test/fixtures/route-arbitraries.js";
import { canonicalJson, routeFingerprint } from "./route-fingerprint.js";

/** The same value with every object's keys in reverse order. */
function reversedKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(reversedKeys);
  if (typeof v === "object" && v !== null)
    return Object.fromEntries(
      Object.entries(v as Record<string, unknown>)
        .reverse()
        .map(([k, x]) => [k, reversedKeys(x)]),
    );
  return v;
}

const route = (spec: unknown, meta: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) => ({
  metadata: { namespace: "shop", name: "r", generation: 1, ...meta },
  spec,
  ...extra,
});

describe("routeFingerprint", () => {
  it("is the same for equal specs whatever their key order, and reads JSON back to the value", () => {
    fc.assert(
      fc.property(specV2, (spec) => {
        expect(canonicalJson(reversedKeys(spec))).toBe(canonicalJson(spec));
        expect(JSON.parse(canonicalJson(spec))).toEqual(spec);
        expect(routeFingerprint(route(reversedKeys(spec)))).toBe(routeFingerprint(route(spec)));
      }),
    );
  });

  it("changes with the spec even when generation does not (a v1 object's v2-spec annotation)", () => {
    fc.assert(
      fc.property(specV2, specV2, (a, b) => {
        fc.pre(canonicalJson(a) !== canonicalJson(b));
        expect(routeFingerprint(route(b))).not.toBe(routeFingerprint(route(a)));
      }),
    );
  });

  it("ignores status, generation, resourceVersion and labels: the reconciler's own writes are not work", () => {
    fc.assert(
      fc.property(specV2, status, (spec, st) => {
        const before = routeFingerprint(route(spec));
        const after = route(
          spec,
          { generation: 7, resourceVersion: "99", labels: { a: "b" } },
          { status: st },
        );
        expect(routeFingerprint(after)).toBe(before);
      }),
    );
  });

  it("changes when deletion starts and when a finalizer comes or goes", () => {
    fc.assert(
      fc.property(specV2, (spec) => {
        const prints = [
          route(spec),
          route(spec, { finalizers: ["net.10xdev.io/deprogram"] }),
          route(spec, { finalizers: ["net.10xdev.io/deprogram"], deletionTimestamp: "2026-12-01T07:00:00Z" }),
          route(spec, { finalizers: [], deletionTimestamp: "2026-12-01T07:00:00Z" }),
        ].map(routeFingerprint);
        expect(new Set(prints).size).toBe(4);
      }),
    );
  });
});
