import { describe, expect, it } from "vitest";
import { HeaderSets, NO_HEADERS } from "./header-sets.js";

describe("HeaderSets", () => {
  it("one header: lowercase claim, exact matcher, one object per distinct header", () => {
    const sets = new HeaderSets();
    const set = sets.of([{ name: "X-Canary", value: "1" }]);
    expect(set).toEqual({
      claims: [{ name: "x-canary", value: "1" }],
      key: "\u0000x-canary\u00011",
      matchers: [{ name: "x-canary", string_match: { exact: "1" } }],
    });
    expect(sets.of([{ name: "X-Canary", value: "1" }])).toBe(set);
    expect(sets.of([{ name: "X-Canary", value: "2" }])).not.toBe(set);
  });

  it("several headers: the first of a name counts, sorted by name", () => {
    const set = new HeaderSets().of([
      { name: "x-b", value: "1" },
      { name: "X-A", value: "2" },
      { name: "x-a", value: "3" },
    ]);
    expect(set.claims).toEqual([
      { name: "x-a", value: "2" },
      { name: "x-b", value: "1" },
    ]);
    expect(set.matchers.map((m) => m.name)).toEqual(["x-a", "x-b"]);
  });

  it("none", () => {
    expect(new HeaderSets().of(undefined)).toBe(NO_HEADERS);
    expect(new HeaderSets().of([])).toBe(NO_HEADERS);
  });
});
