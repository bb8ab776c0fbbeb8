// A gRPC client's own resources: its API listener against Envoy's protos, the
// virtual host a host name lands on, and its regexes' meaning.

import { RE2JS } from "re2js";
import { beforeAll, describe, expect, it } from "vitest";
import { EnvoyProtos } from "../../test/envoy/envoy-proto.js";
import { decodeResource, encodeResource } from "../dataplane/xds/proto-codec.js";
import { adsResources } from "./envoy.js";
import { apiListener, domainFor, grpcRegex, grpcResources } from "./grpc.js";
import { buildSnapshot } from "./snapshot.js";

let protos: EnvoyProtos;
beforeAll(() => {
  protos = EnvoyProtos.load();
});

describe("a gRPC client's resources", () => {
  it("the API listener is valid against Envoy's protos and decodes back to its JSON", () => {
    const l = apiListener("shop.example.com");
    expect(protos.check(l["@type"], l)).toEqual([]);
    expect(decodeResource(encodeResource(l))).toEqual(protos.roundTrip(l["@type"], l));
  });

  it("picks a host's virtual host as Envoy and gRPC do: exact, then the longest wildcard suffix, then *", () => {
    const d = new Map([
      ["a.example.com", 1],
      ["*.example.com", 1],
      ["*.b.example.com", 1],
      ["*", 1],
    ]);
    expect(domainFor("a.example.com", d)).toBe("a.example.com");
    expect(domainFor("x.b.example.com", d)).toBe("*.b.example.com");
    expect(domainFor("c.example.com", d)).toBe("*.example.com");
    expect(domainFor("example.com", d)).toBe("*");
    expect(domainFor("example.com", new Map([["*.example.com", 1]]))).toBeUndefined();
  });
});

/** What grpc-js-xds 1.14's matcher.js tests a value with: the regex between `^` and `$`, searched. */
function grpcJsMatches(regex: string, value: string): boolean {
  return RE2JS.compile(`^${regex}$`).matcher(value).find();
}

/** Envoy's meaning: RE2 FullMatch of the whole value. */
function envoyMatches(regex: string, value: string): boolean {
  return RE2JS.compile(regex).matcher(value).matches();
}

describe("regexes on gRPC clients", () => {
  it("an alternation grouped means what Envoy's whole match means; as written it would not", () => {
    const cases: readonly [string, string][] = [
      ["/pkg.Svc/Say|/pkg.Svc/Other", "/pkg.Svc/Say"],
      ["/pkg.Svc/Say|/pkg.Svc/Other", "/pkg.Svc/Other"],
      ["/pkg.Svc/Say|/pkg.Svc/Other", "/pkg.Svc/SayMore"],
      ["/pkg.Svc/Say|/pkg.Svc/Other", "/x/pkg.Svc/Other"],
      ["a|b|c", "xbx"],
      ["team-[a-z]+", "team-a"],
      ["(?i)A|b", "a"],
      ["^/a$|/b", "/b"],
    ];
    for (const [regex, value] of cases)
      expect(grpcJsMatches(grpcRegex(regex), value), `${regex} on ${value}`).toBe(envoyMatches(regex, value));
    expect(grpcJsMatches("/pkg.Svc/Say|/pkg.Svc/Other", "/pkg.Svc/SayMore")).toBe(true);
  });

  it("gRPC's routes carry path and header regexes grouped; Envoy's as written", () => {
    const snap = buildSnapshot(
      [
        {
          apiVersion: "net.10xdev.io/v2",
          kind: "EdgeRoute",
          metadata: { namespace: "shop", name: "r", creationTimestamp: "2025-01-01T00:00:00Z" },
          spec: {
            hostnames: ["shop.example.com"],
            rules: [
              {
                matches: [
                  { path: { type: "RegularExpression", value: "/pkg.Svc/Say|/pkg.Svc/Other" } },
                  {
                    path: { value: "/api" },
                    method: "POST",
                    headers: [
                      { name: "x-tenant", type: "RegularExpression", value: "a|b" },
                      { name: "x-exact", value: "a|b" },
                    ],
                  },
                ],
                backends: [{ name: "app", port: 80 }],
              },
            ],
          },
        },
      ],
      new Map([["shop/app", { ports: [{ port: 80, addresses: [{ ip: "10.0.0.1", port: 8080 }] }] }]]),
    );
    const ads = adsResources(snap.resources);
    const envoyMatch = ads.routeConfigurations[0]?.virtual_hosts?.[0]?.routes.map((r) => r.match);
    const grpcMatch = grpcResources(ads, [
      "shop.example.com",
    ]).routeConfigurations[0]?.virtual_hosts?.[0]?.routes.map((r) => r.match);
    const envoyHeaders = [
      { name: "x-exact", string_match: { exact: "a|b" } },
      { name: "x-tenant", string_match: { safe_regex: { regex: "a|b" } } },
      { name: ":method", string_match: { exact: "POST" } },
    ];
    expect(envoyMatch).toEqual([
      { path: "/api", headers: envoyHeaders },
      { prefix: "/api/", headers: envoyHeaders },
      { safe_regex: { regex: "/pkg.Svc/Say|/pkg.Svc/Other" } },
    ]);
    const headers = [
      { name: "x-exact", string_match: { exact: "a|b" } },
      { name: "x-tenant", string_match: { safe_regex: { regex: "(?:a|b)" } } },
    ];
    expect(grpcMatch).toEqual([
      { path: "/api", headers },
      { prefix: "/api/", headers },
      { safe_regex: { regex: "(?:/pkg.Svc/Say|/pkg.Svc/Other)" } },
    ]);
  });
});
