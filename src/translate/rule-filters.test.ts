// A header modifier's values are literal (Gateway API); Envoy reads
// headers_to_add values as format strings, so what it is sent must read back
// as the same literal text.

import { describe, expect, it } from "vitest";
import type { HeaderValueOption, RouteHeaderEdits } from "../envoy/envoy-resources.js";
import type { EdgeRouteV2, RouteRule } from "../api/types.js";
import { literalHeaderValue } from "./rule-filters.js";
import { buildSnapshot } from "./snapshot.js";

const endpoints = new Map([
  ["shop/app", { ports: [{ port: 80, addresses: [{ ip: "10.0.0.1", port: 8080 }] }] }],
]);

function route(rules: RouteRule[]): EdgeRouteV2 {
  return {
    apiVersion: "net.10xdev.io/v2",
    kind: "EdgeRoute",
    metadata: { namespace: "shop", name: "r", creationTimestamp: "2025-01-01T00:00:00Z" },
    spec: { hostnames: ["shop.example.com"], rules },
  };
}

/**
 * A header value as Envoy's formatter reads it when it holds no command
 * operator: `%%` is one `%`, and a lone `%` (an operator's start) is no
 * literal at all (Envoy refuses the route configuration, or substitutes).
 */
function envoyLiteral(value: string): string | undefined {
  let out = "";
  for (let i = 0; i < value.length; i++) {
    if (value[i] !== "%") out += value[i];
    else if (value[i + 1] !== "%") return undefined;
    else {
      out += "%";
      i++;
    }
  }
  return out;
}

const VALUES = [
  "100%",
  "%NOT_A_VARIABLE%",
  "%%",
  "50% off, 100%% sure",
  "%DOWNSTREAM_REMOTE_ADDRESS%",
  "plain",
];

describe("header modifier values", () => {
  it("reach Envoy as format strings that read back as the literal values", () => {
    // Each value under x-vN, set and added under names of their own (a name is modified once).
    const headers = (kind: string) => VALUES.map((value, i) => ({ name: `x-v${i}-${kind}`, value }));
    const edits = { set: headers("set"), add: headers("add") };
    const s = buildSnapshot(
      [
        route([
          {
            matches: [{ path: { value: "/api" } }],
            backends: [{ name: "app", port: 80 }],
            filters: [
              { type: "RequestHeaderModifier", requestHeaderModifier: edits },
              { type: "ResponseHeaderModifier", responseHeaderModifier: edits },
            ],
          },
          {
            // A redirect's response carries the response headers too.
            matches: [{ path: { value: "/old" } }],
            backends: [],
            filters: [
              {
                type: "RequestRedirect",
                requestRedirect: { path: { type: "ReplaceFullPath", replaceFullPath: "/new" } },
              },
              { type: "ResponseHeaderModifier", responseHeaderModifier: { set: headers("set") } },
            ],
          },
        ]),
      ],
      endpoints,
    );
    expect(s.outcomes[0], JSON.stringify(s.outcomes[0])).toMatchObject({ accepted: true });
    const entries = (s.resources.routeConfigurations[0]?.virtual_hosts?.[0]?.routes ??
      []) as readonly RouteHeaderEdits[];
    const lists = entries.flatMap((e) => [e.request_headers_to_add ?? [], e.response_headers_to_add ?? []]);
    const options: readonly HeaderValueOption[] = lists.flat();
    // Request and response, set and add, on /api; the redirect's set.
    expect(options).toHaveLength(VALUES.length * 5);
    for (const o of options)
      expect(envoyLiteral(o.header.value), o.header.value).toBe(
        VALUES[Number(o.header.key.split("-")[1]?.slice(1))],
      );
    expect(options.slice(0, 2).map((o) => o.header.value)).toEqual(["100%%", "%%NOT_A_VARIABLE%%"]);
  });

  it("without a percent are the same string", () => {
    const v = "no-store, max-age=0";
    expect(literalHeaderValue(v)).toBe(v);
    expect(literalHeaderValue("%")).toBe("%%");
  });
});

describe("a ReplaceFullPath", () => {
  it("is literal in Envoy's regex_rewrite: RE2 reads a backslash in a substitution as a capture group's start", () => {
    const s = buildSnapshot(
      [
        route([
          {
            matches: [{ path: { type: "PathPrefix", value: "/a" } }],
            filters: [
              {
                type: "URLRewrite",
                urlRewrite: { path: { type: "ReplaceFullPath", replaceFullPath: "/x\\1y" } },
              },
            ],
            backends: [{ name: "app", port: 80 }],
          },
        ]),
      ],
      endpoints,
    );
    const entry = s.resources.routeConfigurations[0]?.virtual_hosts?.[0]?.routes?.[0];
    const action = entry !== undefined && "route" in entry ? entry.route : undefined;
    expect(action?.regex_rewrite?.substitution).toBe("/x\\\\1y");
  });
});
