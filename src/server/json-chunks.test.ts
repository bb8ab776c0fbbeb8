import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { jsonChunks } from "./json-chunks.js";

describe("jsonChunks", () => {
  it("joins to exactly JSON.stringify's text, for any value it accepts and any chunk size", () => {
    const values = fc.anything({
      withBoxedValues: true,
      withDate: true,
      withMap: true,
      withSet: true,
      withNullPrototype: true,
      withSparseArray: true,
      withTypedArray: true,
      withObjectString: true,
      withUnicodeString: true,
    });
    fc.assert(
      fc.property(values, fc.integer({ min: 1, max: 200 }), (v, size) => {
        expect([...jsonChunks(v, size)].join("")).toBe(JSON.stringify(v) ?? "null");
      }),
      { numRuns: 2000 },
    );
  });

  it("keeps undefined, functions and toJSON as JSON.stringify does", () => {
    const v = {
      a: undefined,
      f: () => 1,
      list: [undefined, () => 1, new Date(0), { toJSON: () => "mine" }],
      nested: { deeper: { deepest: { gone: undefined, kept: [1, "two"] } } },
    };
    expect([...jsonChunks(v, 1)].join("")).toBe(JSON.stringify(v));
  });

  it("cuts a large list into chunks near the asked size, one item never split", () => {
    const item = { metadata: { name: "r" }, spec: { text: "x".repeat(100) } };
    const review = { response: { convertedObjects: Array.from({ length: 1000 }, () => item) } };
    const chunks = [...jsonChunks(review, 4096)];
    const text = JSON.stringify(review);
    expect(chunks.join("")).toBe(text);
    expect(chunks.length).toBeGreaterThan(text.length / (4096 + 200));
    for (const c of chunks) expect(c.length).toBeLessThan(4096 + JSON.stringify(item).length + 2);
  });
});
