// The scanner's laws over any JSON text, cut anywhere: it finds the nesting
// depth JSON.parse finds (strings, escapes and brackets inside them
// included), and below the bytes from which keys are remembered its estimate
// does not depend on where the text was cut.

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { JsonDepthError, JsonShapeScanner, KEYS_REMEMBERED_FROM } from "./json-shape.js";

/** Nesting depth of a parsed value: 0 for a scalar, 1 for `[]` or `{}`. */
function depthOf(value: unknown): number {
  if (Array.isArray(value)) return 1 + Math.max(0, ...value.map(depthOf));
  if (typeof value === "object" && value !== null)
    return 1 + Math.max(0, ...Object.values(value).map(depthOf));
  return 0;
}

/** Strings with the characters that matter to the scan: quotes, backslashes, brackets, separators. */
const tricky = fc.string({
  unit: fc.constantFrom('"', "\\", "[", "]", "{", "}", ",", ":", "a", "é", "\n"),
  maxLength: 12,
});
const json = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    tricky,
    fc.integer(),
    fc.constant(null),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(tricky, tie("value"), { maxKeys: 4 }),
  ),
})).value;

/** The text fed in pieces cut at `cuts` (fractions of its length), or a byte at a time. */
function scan(bytes: Buffer, maxDepth: number, cuts: number[] | "every byte"): JsonShapeScanner {
  const at =
    cuts === "every byte"
      ? Array.from({ length: bytes.length }, (_, i) => i)
      : [...new Set(cuts.map((f) => Math.floor(f * bytes.length)))].sort((a, b) => a - b);
  const s = new JsonShapeScanner(maxDepth);
  let from = 0;
  for (const to of [...at, bytes.length]) {
    s.push(bytes.subarray(from, to));
    from = to;
  }
  return s;
}

const cuts = fc.oneof(
  fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 6 }),
  fc.constant("every byte" as const),
);

describe("the JSON shape scan", () => {
  it("refuses exactly the texts that nest deeper than the limit, however they are cut", () => {
    fc.assert(
      fc.property(json, cuts, (value, at) => {
        const bytes = Buffer.from(JSON.stringify(value));
        const depth = depthOf(value);
        expect(() => scan(bytes, depth, at)).not.toThrow();
        if (depth > 0) expect(() => scan(bytes, depth - 1, at)).toThrow(JsonDepthError);
      }),
      { numRuns: 500 },
    );
  });

  it("gives the same estimate however a text shorter than KEYS_REMEMBERED_FROM is cut", () => {
    fc.assert(
      fc.property(json, cuts, (value, at) => {
        const bytes = Buffer.from(JSON.stringify(value));
        expect(bytes.length).toBeLessThan(KEYS_REMEMBERED_FROM);
        expect(scan(bytes, 64, at).heapEstimate()).toBe(scan(bytes, 64, []).heapEstimate());
      }),
      { numRuns: 500 },
    );
  });
});
