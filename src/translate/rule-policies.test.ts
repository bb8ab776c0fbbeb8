import { describe, expect, it } from "vitest";
import type { EdgeRouteV2, RouteRule } from "../api/types.js";
import { acceptedFrom } from "../reconcile/acceptance.js";
import { grpcUnapplied } from "./grpc-unapplied.js";
import { buildSnapshot } from "./snapshot.js";

const endpoints = new Map([
  ["shop/app", { ports: [{ port: 80, addresses: [{ ip: "10.0.0.1", port: 8080 }] }] }],
  ["shop/canary", { ports: [{ port: 80, addresses: [{ ip: "10.0.0.2", port: 8080 }] }] }],
]);

function route(name: string, created: string, rules: RouteRule[]): EdgeRouteV2 {
  return {
    apiVersion: "net.10xdev.io/v2",
    kind: "EdgeRoute",
    metadata: { namespace: "shop", name, creationTimestamp: created },
    spec: { hostnames: ["shop.example.com"], rules },
  };
}

const on = (method: RouteRule["matches"][number]["method"], backend: string): RouteRule => ({
  matches: [{ path: { type: "PathPrefix", value: "/api" }, method }],
  backends: [{ name: backend, port: 80 }],
});

describe("claims with methods, query parameters and regular expressions", () => {
  it("two routes told apart only by method both keep their match; the same method is a conflict", () => {
    const s = buildSnapshot(
      [
        route("get", "2025-01-01T00:00:00Z", [on("GET", "app")]),
        route("post", "2025-01-02T00:00:00Z", [on("POST", "canary")]),
        route("post-again", "2025-01-03T00:00:00Z", [on("POST", "app")]),
      ],
      endpoints,
    );
    expect(s.outcomes.map((o) => [o.key, o.accepted, o.accepted ? "" : o.reason])).toEqual([
      ["shop/get", true, ""],
      ["shop/post", true, ""],
      ["shop/post-again", false, "Conflicted"],
    ]);
  });

  it("an exact header and a regex of the same text are different matches", () => {
    const rule = (type: "Exact" | "RegularExpression"): RouteRule => ({
      matches: [{ path: { value: "/api" }, headers: [{ name: "x-id", value: "1+", type }] }],
      backends: [{ name: "app", port: 80 }],
    });
    const s = buildSnapshot(
      [
        route("a", "2025-01-01T00:00:00Z", [rule("Exact")]),
        route("b", "2025-01-02T00:00:00Z", [rule("RegularExpression")]),
      ],
      endpoints,
    );
    expect(s.outcomes.every((o) => o.accepted)).toBe(true);
  });
});

describe("what gRPC clients do not apply", () => {
  it("is listed by field path and said in Accepted's message", () => {
    const r = route("r", "2025-01-01T00:00:00Z", [
      {
        matches: [
          { path: { value: "/a" }, method: "GET" },
          { path: { value: "/b" }, queryParams: [{ name: "q", value: "1" }] },
        ],
        backends: [{ name: "app", port: 80 }],
        filters: [
          { type: "RequestHeaderModifier", requestHeaderModifier: { set: [{ name: "x-a", value: "1" }] } },
        ],
        timeouts: { backendRequest: "1s" },
        retry: { attempts: 2, conditions: ["Unavailable", "5xx"], codes: [503] },
      },
    ]);
    expect(grpcUnapplied(r).map((u) => u.path)).toEqual([
      "spec.rules[0].matches[0].method",
      "spec.rules[0].matches[1].queryParams",
      "spec.rules[0].filters[0]",
      "spec.rules[0].timeouts.backendRequest",
      "spec.rules[0].retry.codes",
      "spec.rules[0].retry.conditions",
    ]);
    const [outcome] = buildSnapshot([r], endpoints).outcomes;
    expect(acceptedFrom(outcome!)).toMatchObject({
      status: "True",
      reason: "Valid",
      message:
        "the route is valid and its Services exist; gRPC clients do not apply spec.rules[0].matches[0].method (gRPC calls are POST: not sent to gRPC clients), spec.rules[0].matches[1].queryParams (gRPC requests carry no query: not sent to gRPC clients), spec.rules[0].filters[0] (RequestHeaderModifier: ignored by gRPC clients), spec.rules[0].timeouts.backendRequest (the per-try timeout is ignored by gRPC clients), spec.rules[0].retry.codes (HTTP status codes are ignored by gRPC clients) and 1 more",
    });
  });

  it("is absent for a route gRPC clients apply whole: a POST match, a timeout, a retry on gRPC codes", () => {
    const r = route("r", "2025-01-01T00:00:00Z", [
      {
        ...on("POST", "app"),
        timeouts: { request: "1s" },
        retry: { attempts: 1, conditions: ["Unavailable"] },
      },
    ]);
    const [outcome] = buildSnapshot([r], endpoints).outcomes;
    expect(outcome).toEqual({ key: "shop/r", accepted: true, dropped: [] });
    expect(acceptedFrom(outcome!).message).toBe("the route is valid and its Services exist");
  });
});

describe("the builder's guard", () => {
  it("refuses what Envoy would NACK, every problem at once", () => {
    const r = route("bad", "2025-01-01T00:00:00Z", [
      {
        matches: [{ path: { type: "RegularExpression", value: "(?=lookahead)" } }],
        backends: [{ name: "app", port: 80 }],
        filters: [
          { type: "RequestHeaderModifier", requestHeaderModifier: { set: [{ name: "Host", value: "x" }] } },
        ],
      },
    ]);
    const [outcome] = buildSnapshot([r], endpoints).outcomes;
    expect(outcome).toMatchObject({ accepted: false, reason: "Invalid" });
    const message = outcome!.accepted ? "" : outcome!.message;
    expect(message).toContain(
      "spec.rules[0].matches[0].path.value: Invalid value: \"(?=lookahead)\": must start with '/'; must be a regular expression in RE2 syntax",
    );
    expect(message).toContain(
      `spec.rules[0].filters[0].requestHeaderModifier.set[0].name: Forbidden: "Host": Envoy refuses to modify host with a header filter: a URLRewrite's hostname changes it`,
    );
  });
});
