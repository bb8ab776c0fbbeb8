import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  compareResourceVersion,
  formatReadRevision,
  judgeRevision,
  newestOf,
  notOlder,
  parseReadRevision,
  readRevision,
  type ReadRevision,
} from "./read-revision.js";

const rv = fc.bigInt({ min: 1n, max: 10n ** 30n }).map(String);
const revision: fc.Arbitrary<ReadRevision> = fc.record({ routes: rv, services: rv, endpointslices: rv });

describe("compareResourceVersion", () => {
  it("orders as the integers do, at any length (KEP-5504)", () => {
    fc.assert(
      fc.property(rv, rv, (a, b) => {
        const want = BigInt(a) < BigInt(b) ? -1 : BigInt(a) > BigInt(b) ? 1 : 0;
        expect(compareResourceVersion(a, b)).toBe(want);
      }),
    );
    expect(compareResourceVersion("9", "10")).toBe(-1);
  });
});

describe("read revisions", () => {
  it("round-trip through the annotation's text", () => {
    fc.assert(
      fc.property(revision, (r) => {
        expect(parseReadRevision(formatReadRevision(r))).toEqual(r);
      }),
    );
    expect(formatReadRevision({ routes: "12", services: "9", endpointslices: "11" })).toBe(
      "routes=12,services=9,endpointslices=11",
    );
  });

  it("refuse text that is not one, rather than guess", () => {
    for (const bad of [
      "",
      "routes=1,services=2",
      "routes=1,services=2,endpointslices=03",
      "routes=1,services=2,endpointslices=0",
      "routes=1,services=x,endpointslices=3",
      "routes=1,services=2,endpointslices=3,extra=4",
      "routes=1;services=2;endpointslices=3",
    ])
      expect(parseReadRevision(bad), bad).toBeUndefined();
    expect(readRevision({ routes: "5", services: undefined, endpointslices: "6" })).toBeUndefined();
  });

  it("newestOf is never older than either, and is one of the two in each part", () => {
    fc.assert(
      fc.property(revision, revision, (a, b) => {
        const n = newestOf(a, b);
        expect(notOlder(n, a) && notOlder(n, b)).toBe(true);
        for (const p of ["routes", "services", "endpointslices"] as const)
          expect([a[p], b[p]]).toContain(n[p]);
      }),
    );
  });

  it("notOlder is a partial order: reflexive, antisymmetric, transitive", () => {
    fc.assert(
      fc.property(revision, revision, revision, (a, b, c) => {
        expect(notOlder(a, a)).toBe(true);
        if (notOlder(a, b) && notOlder(b, a)) expect(a).toEqual(b);
        if (notOlder(a, b) && notOlder(b, c)) expect(notOlder(a, c)).toBe(true);
      }),
    );
  });
});

describe("judgeRevision", () => {
  const at = (routes: string, services = "1", endpointslices = "1"): ReadRevision => ({
    routes,
    services,
    endpointslices,
  });

  it("refuses a different snapshot read before what the data plane holds, in any part", () => {
    expect(judgeRevision(at("9"), at("10"), false)).toMatchObject({ ok: false });
    expect(judgeRevision(at("20", "1", "1"), at("10", "2", "1"), false)).toMatchObject({ ok: false });
    expect(judgeRevision(at("10"), at("10"), false)).toEqual({ ok: true, record: at("10") });
    expect(judgeRevision(at("11", "3"), at("10", "2"), false)).toEqual({ ok: true, record: at("11", "3") });
  });

  it("takes the same version from any read, and records the newest of both", () => {
    expect(judgeRevision(at("9", "5"), at("10", "2"), true)).toEqual({ ok: true, record: at("10", "5") });
  });

  it("takes a snapshot without a revision, and a first one, as before", () => {
    expect(judgeRevision(undefined, at("10"), false)).toEqual({ ok: true, record: at("10") });
    expect(judgeRevision(at("3"), undefined, false)).toEqual({ ok: true, record: at("3") });
  });

  it("never lets what is recorded go back, over any sequence of pushes", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(revision, fc.boolean()), { maxLength: 30 }), (pushes) => {
        let held: ReadRevision | undefined;
        for (const [read, same] of pushes) {
          const v = judgeRevision(read, held, same);
          if (!v.ok) {
            expect(held !== undefined && !notOlder(read, held)).toBe(true);
            continue;
          }
          if (held !== undefined) expect(v.record !== undefined && notOlder(v.record, held)).toBe(true);
          held = v.record;
        }
      }),
    );
  });
});
