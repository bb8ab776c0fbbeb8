import { describe, expect, it } from "vitest";
import { claimsOf, matchKey } from "./match-keys.js";

describe("route keys", () => {
  it("treats a prefix with and without its trailing slash as one match, as the snapshot does", () => {
    expect(matchKey({ path: { type: "PathPrefix", value: "/api/" } })).toBe(
      matchKey({ path: { value: "/api" } }),
    );
    expect(matchKey({ path: { type: "Exact", value: "/api/" } })).not.toBe(
      matchKey({ path: { type: "Exact", value: "/api" } }),
    );
  });

  it("reads v1 and v2 shapes into the same claims", () => {
    const v1 = claimsOf({ host: "a.example.com", pathPrefix: "/x/", service: "s", port: 80 });
    const v2 = claimsOf({
      hostnames: ["a.example.com"],
      rules: [{ matches: [{ path: { value: "/x" } }], backends: [] }],
    });
    expect(v1).toEqual(v2);
  });
});
