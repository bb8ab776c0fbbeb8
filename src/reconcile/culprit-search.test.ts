import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { EdgeRouteV2 } from "../api/types.js";
import { findCulprit, namedInWords, type Suspect, type TrialAnswer } from "./culprit-search.js";

function suspect(i: number, value = `/path-${i}`): Suspect {
  const now: EdgeRouteV2 = {
    apiVersion: "net.10xdev.io/v2",
    kind: "EdgeRoute",
    metadata: { namespace: `ns-${i % 3}`, name: `r${i}` },
    spec: { rules: [{ matches: [{ path: { type: "RegularExpression", value } }], backends: [] }] },
  };
  return { key: `ns-${i % 3}/r${i}`, now };
}

/** A client that refuses any trial holding one of `bad` (or every trial, with a bad base). */
function client(bad: ReadonlySet<string>, opts: { baseBad?: boolean; unknownEvery?: number } = {}) {
  let n = 0;
  return async (included: ReadonlySet<string>): Promise<TrialAnswer> => {
    n++;
    if (opts.unknownEvery !== undefined && n % opts.unknownEvery === 0) return "unknown";
    if (opts.baseBad) return "refused";
    for (const k of included) if (bad.has(k)) return "refused";
    return "taken";
  };
}

describe("the culprit search", () => {
  it("finds the one route that makes the client refuse, in at most log2(n) + 2 trials", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc
          .integer({ min: 1, max: 200 })
          .chain((n) => fc.tuple(fc.constant(n), fc.integer({ min: 0, max: n - 1 }))),
        async ([n, c]) => {
          const suspects = Array.from({ length: n }, (_, i) => suspect(i));
          const bad = new Set([suspects[c]?.key as string]);
          const res = await findCulprit(suspects, client(bad), "words naming nothing");
          expect(res.culprit?.key).toBe(suspects[c]?.key);
          expect(res.trials).toBeLessThanOrEqual(Math.ceil(Math.log2(n)) + 2);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("with several causes blames one of them, never an innocent route", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc
          .integer({ min: 2, max: 60 })
          .chain((n) =>
            fc.tuple(
              fc.constant(n),
              fc.uniqueArray(fc.integer({ min: 0, max: n - 1 }), { minLength: 1, maxLength: 5 }),
            ),
          ),
        async ([n, causes]) => {
          const suspects = Array.from({ length: n }, (_, i) => suspect(i));
          const bad = new Set(causes.map((c) => suspects[c]?.key as string));
          const res = await findCulprit(suspects, client(bad), "");
          expect(res.culprit).toBeDefined();
          expect(bad.has(res.culprit?.key as string)).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("blames nobody when a trial cannot tell, or when the state before the changes is refused too", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 60 }),
        fc.integer({ min: 0, max: 59 }),
        fc.integer({ min: 1, max: 4 }),
        async (n, c, every) => {
          const suspects = Array.from({ length: n }, (_, i) => suspect(i));
          const bad = new Set([suspects[c % n]?.key as string]);
          const res = await findCulprit(suspects, client(bad, { unknownEvery: every }), "");
          if (res.culprit !== undefined) expect(bad.has(res.culprit.key)).toBe(true);
          const base = await findCulprit(suspects, client(bad, { baseBad: true }), "");
          expect(base).toMatchObject({ baseRefused: true });
          expect(base.culprit).toBeUndefined();
        },
      ),
      { numRuns: 200 },
    );
  });

  it("tries first the route the client's words name, by a string of its spec no other suspect has", async () => {
    const suspects = Array.from({ length: 64 }, (_, i) => suspect(i));
    const bad = new Set([suspects[41]?.key as string]);
    const words = "route configuration edge: regex '/path-41' is invalid";
    expect(namedInWords(suspects, words)?.key).toBe(suspects[41]?.key);
    const res = await findCulprit(suspects, client(bad), words);
    expect(res).toMatchObject({ culprit: { key: suspects[41]?.key }, trials: 1 });
    // Words that name two suspects name none.
    expect(
      namedInWords([suspect(1, "/same-value"), suspect(2, "/same-value")], "/same-value"),
    ).toBeUndefined();
  });
});
