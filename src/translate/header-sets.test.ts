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
      query: [],
      count: 1,
      method: false,
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

  it("a method, a regex header and query parameters: each its own matcher and part of the key", () => {
    const set = new HeaderSets().of([{ name: "X-Id", value: "[0-9]+", type: "RegularExpression" }], "GET", [
      { name: "v", value: "2" },
      { name: "v", value: "3" },
    ]);
    expect(set.matchers).toEqual([
      { name: "x-id", string_match: { safe_regex: { regex: "[0-9]+" } } },
      { name: ":method", string_match: { exact: "GET" } },
    ]);
    expect(set.query).toEqual([{ name: "v", string_match: { exact: "2" } }]);
    expect(set.count).toBe(2);
    expect(set.method).toBe(true);
    const post = new HeaderSets().of([{ name: "X-Id", value: "[0-9]+", type: "RegularExpression" }], "POST", [
      { name: "v", value: "2" },
    ]);
    expect(post.key).not.toBe(set.key);
    const exact = new HeaderSets().of([{ name: "X-Id", value: "[0-9]+" }], "GET", [
      { name: "v", value: "2" },
    ]);
    expect(exact.key).not.toBe(set.key);
  });

  it("none", () => {
    expect(new HeaderSets().of(undefined)).toBe(NO_HEADERS);
    expect(new HeaderSets().of([])).toBe(NO_HEADERS);
  });
});
