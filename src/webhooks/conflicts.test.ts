import { silentLogger } from "../observability/logger.js";
import { describe, expect, it } from "vitest";
import { ConflictIndex, conflictWarnings, summarize, type RouteSummary } from "./conflicts.js";

const v2 = (
  name: string,
  ts: string | undefined,
  hostnames: string[],
  paths: string[],
  extra: Partial<RouteSummary> = {},
): RouteSummary => ({
  namespace: "default",
  name,
  ...(ts ? { creationTimestamp: ts } : {}),
  terminating: false,
  spec: {
    hostnames,
    rules: [{ matches: paths.map((value) => ({ path: { value } })), backends: [{ name: "a", port: 80 }] }],
  },
  ...extra,
});

describe("conflictWarnings", () => {
  const older = v2("older", "2026-01-01T00:00:00Z", ["shop.example.com"], ["/api"]);

  it("orders a route with a malformed or missing creationTimestamp after every dated one, as the snapshot does", () => {
    for (const ts of ["yesterday", undefined]) {
      const undated = v2("undated", ts, ["shop.example.com"], ["/api"]);
      expect(conflictWarnings(undated, [older])).toEqual([
        "conflicts with older EdgeRoute default/older on shop.example.com PathPrefix /api; that route wins",
      ]);
      expect(conflictWarnings(older, [undated])).toEqual([]);
    }
  });

  it("claims a header named twice by its first condition, as the snapshot does", () => {
    const headers = (hs: { name: string; value: string }[]): RouteSummary["spec"] => ({
      rules: [{ matches: [{ path: { value: "/api" }, headers: hs }], backends: [{ name: "a", port: 80 }] }],
    });
    const owner = v2("owner", "2026-01-01T00:00:00Z", [], [], {
      spec: headers([{ name: "x-a", value: "1" }]),
    });
    const twice = v2("twice", "2026-01-02T00:00:00Z", [], [], {
      spec: headers([
        { name: "X-A", value: "1" },
        { name: "x-a", value: "2" },
      ]),
    });
    expect(conflictWarnings(twice, [owner])).toEqual([
      "conflicts with older EdgeRoute default/owner on any host PathPrefix /api with headers x-a=1; that route wins",
    ]);
  });

  it("warns when an older route owns the same host and match", () => {
    const mine = v2("new", undefined, ["shop.example.com", "b.example.com"], ["/other", "/api"]);
    expect(conflictWarnings(mine, [older])).toEqual([
      "conflicts with older EdgeRoute default/older on shop.example.com PathPrefix /api; that route wins",
    ]);
  });

  it("sees a v1-shaped route as the same claim", () => {
    const v1: RouteSummary = {
      namespace: "b",
      name: "legacy",
      creationTimestamp: "2025-01-01T00:00:00Z",
      terminating: false,
      spec: { host: "shop.example.com", pathPrefix: "/api", service: "a", port: 80 },
    };
    expect(conflictWarnings(v2("new", undefined, ["shop.example.com"], ["/api"]), [v1])).toEqual([
      "conflicts with older EdgeRoute b/legacy on shop.example.com PathPrefix /api; that route wins",
    ]);
  });

  it("is silent for a newer route, itself, a terminating one, another host or another match", () => {
    const mine = v2("mine", "2026-02-01T00:00:00Z", ["shop.example.com"], ["/api"]);
    expect(
      conflictWarnings(mine, [
        v2("newer", "2026-03-01T00:00:00Z", ["shop.example.com"], ["/api"]),
        v2("mine", "2026-01-01T00:00:00Z", ["shop.example.com"], ["/api"]),
        v2("gone", "2026-01-01T00:00:00Z", ["shop.example.com"], ["/api"], { terminating: true }),
        v2("host", "2026-01-01T00:00:00Z", ["other.example.com"], ["/api"]),
        v2("path", "2026-01-01T00:00:00Z", ["shop.example.com"], ["/api/v2"]),
      ]),
    ).toEqual([]);
  });

  it("breaks a creation-time tie by namespace/name, and names only the first owner of a claim", () => {
    const ts = "2026-01-01T00:00:00Z";
    const mine = v2("m", ts, [], ["/"]);
    expect(
      conflictWarnings(mine, [
        v2("z", ts, [], ["/"]),
        v2("a", ts, [], ["/"]),
        v2("b", "2025-01-01T00:00:00Z", [], ["/"]),
      ]),
    ).toEqual(["conflicts with older EdgeRoute default/b on any host PathPrefix /; that route wins"]);
  });
});

describe("ConflictIndex", () => {
  const index = () => new ConflictIndex(undefined, { log: silentLogger() });
  const obj = (name: string, created: string, paths: string[], deleting = false) => ({
    metadata: {
      name,
      namespace: "default",
      creationTimestamp: created,
      ...(deleting ? { deletionTimestamp: created } : {}),
    },
    spec: {
      hostnames: ["shop.example.com"],
      rules: [{ matches: paths.map((value) => ({ path: { value } })), backends: [] }],
    },
  });
  const me = summarize(obj("new", "2026-01-02T00:00:00Z", ["/cart/"]))!;

  it("warns from what the watch told it, and forgets a route that was deleted or moved", () => {
    const i = index();
    i.apply("ADDED", obj("old", "2026-01-01T00:00:00Z", ["/cart"]));
    i.apply("ADDED", obj("other", "2026-01-01T00:00:00Z", ["/other"]));
    expect(i.warnings(me)).toEqual([
      "conflicts with older EdgeRoute default/old on shop.example.com PathPrefix /cart; that route wins",
    ]);
    i.apply("MODIFIED", obj("old", "2026-01-01T00:00:00Z", ["/elsewhere"]));
    expect(i.warnings(me)).toEqual([]);
    i.apply("MODIFIED", obj("old", "2026-01-01T00:00:00Z", ["/cart"]));
    i.apply("DELETED", obj("old", "2026-01-01T00:00:00Z", ["/cart"]));
    expect(i.warnings(me)).toEqual([]);
  });

  it("ignores a terminating owner and a younger one", () => {
    const i = index();
    i.apply("ADDED", obj("leaving", "2026-01-01T00:00:00Z", ["/cart"], true));
    i.apply("ADDED", obj("younger", "2026-01-03T00:00:00Z", ["/cart"]));
    expect(i.warnings(me)).toEqual([]);
  });
});
