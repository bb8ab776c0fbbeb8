// The admission suite's routes: the builders and the table of invalid routes
// (each refused by the CRD schema or by /validate, naming the field), shared by
// the out-of-cluster suite (admission.test.ts) and the in-cluster one.

import { GROUP } from "../../src/api/types.js";

export const NS = "admission";

export type Spec = Record<string, unknown>;

export const v1 = (name: string, spec: Spec = {}, metadata: Record<string, unknown> = {}) => ({
  apiVersion: `${GROUP}/v1`,
  kind: "EdgeRoute",
  metadata: { name, namespace: NS, ...metadata },
  spec: { host: `${name}.example.com`, pathPrefix: "/api", service: "checkout", port: 8080, ...spec },
});

export const backend = { name: "checkout", port: 8080 };
export const rule = (r: Spec = {}) => ({ matches: [{ path: { value: "/api" } }], backends: [backend], ...r });
export const v2 = (name: string, spec: Spec = {}) => ({
  apiVersion: `${GROUP}/v2`,
  kind: "EdgeRoute",
  metadata: { name, namespace: NS },
  spec: { hostnames: [`${name}.example.com`], rules: [rule()], ...spec },
});

// by: which layer refuses it. The CRD schema runs first (after /mutate), and
// /validate only sees what the schema let through; both answers must name the
// field and the reason.
const redirect = { type: "RequestRedirect", requestRedirect: { scheme: "https" } };
const other = rule({ matches: [{ path: { value: "/other" } }] });
const modifier = (mod: Spec) => ({ type: "RequestHeaderModifier", requestHeaderModifier: mod });

export const invalid: { name: string; obj: unknown; by: "webhook" | "schema"; expect: string[] }[] = [
  // v1, through v1
  { name: "v1-port", obj: v1("v1-port", { port: 70000 }), by: "schema", expect: ["spec.port", "65535"] },
  {
    name: "v1-double-slash",
    obj: v1("v1-double-slash", { pathPrefix: "/a//b" }),
    by: "webhook",
    expect: ["spec.pathPrefix", "must not contain '//'"],
  },
  {
    name: "v1-dot-dot",
    obj: v1("v1-dot-dot", { pathPrefix: "/a/../b" }),
    by: "webhook",
    expect: ["spec.pathPrefix", "must not contain '/../'"],
  },
  {
    name: "v1-encoded-slash",
    obj: v1("v1-encoded-slash", { pathPrefix: "/a%2Fb" }),
    by: "webhook",
    expect: ["spec.pathPrefix", "encoded slash"],
  },
  {
    name: "v1-query",
    obj: v1("v1-query", { pathPrefix: "/a?b=1" }),
    by: "webhook",
    expect: ["spec.pathPrefix", "must not contain '?'"],
  },
  {
    name: "v1-upper-host",
    obj: v1("v1-upper-host", { host: "Shop.example.com" }),
    by: "schema",
    expect: ["spec.host", "should match"],
  },
  {
    name: "v1-long-label",
    obj: v1("v1-long-label", { host: `${"a".repeat(64)}.example.com` }),
    by: "webhook",
    expect: ["spec.host", "each label must be no more than 63 characters"],
  },
  {
    name: "v1-service",
    obj: v1("v1-service", { service: "Checkout" }),
    by: "schema",
    expect: ["spec.service", "should match"],
  },
  {
    name: "v1-timeout",
    obj: v1("v1-timeout", { timeoutSeconds: 7200 }),
    by: "schema",
    expect: ["spec.timeoutSeconds", "3600"],
  },
  // v2, through v2
  {
    // Fifteen 4,000-character header values on two matches: 122 KB as a proxy receives it.
    name: "v2-too-large",
    obj: v2("v2-too-large", {
      rules: [
        rule({
          matches: [{ path: { value: "/a" } }, { path: { value: "/b" } }],
          filters: [
            modifier({
              set: Array.from({ length: 15 }, (_, h) => ({ name: `x-h${h}`, value: "v".repeat(4000) })),
            }),
          ],
        }),
      ],
    }),
    by: "webhook",
    expect: [
      "spec: Too long: the route is",
      "bytes as a proxy receives it, more than the 65536 one route may be",
    ],
  },
  {
    name: "v2-port",
    obj: v2("v2-port", { rules: [rule({ backends: [backend, { name: "b", port: 70000 }] })] }),
    by: "schema",
    expect: ["spec.rules[0].backends[1].port", "65535"],
  },
  {
    name: "v2-zero-weights",
    obj: v2("v2-zero-weights", { rules: [rule({ backends: [{ ...backend, weight: 0 }] })] }),
    by: "schema",
    expect: ["spec.rules[0].backends", "at least one backend must have a weight above 0"],
  },
  {
    name: "v2-timeout-2h",
    obj: v2("v2-timeout-2h", { rules: [rule({ timeout: "2h" })] }),
    by: "webhook",
    expect: ["spec.rules[0].timeout", "must be at most 1h"],
  },
  {
    name: "v2-timeout-format",
    obj: v2("v2-timeout-format", { rules: [rule({ timeout: "15 seconds" })] }),
    by: "schema",
    expect: ["spec.rules[0].timeout", "should match"],
  },
  {
    name: "v2-duplicate-match",
    obj: v2("v2-duplicate-match", {
      rules: [rule(), rule({ matches: [{ path: { type: "PathPrefix", value: "/api" } }] })],
    }),
    by: "webhook",
    expect: ["spec.rules[1].matches[0]", "Duplicate value", "is already matched by spec.rules[0].matches[0]"],
  },
  {
    name: "v2-path-type",
    obj: v2("v2-path-type", { rules: [rule({ matches: [{ path: { type: "Regex", value: "/a" } }] })] }),
    by: "schema",
    expect: ["spec.rules[0].matches[0].path.type", "Unsupported value"],
  },
  {
    name: "v2-dot-segment",
    obj: v2("v2-dot-segment", { rules: [rule({ matches: [{ path: { value: "/a/./b" } }] })] }),
    by: "webhook",
    expect: ["spec.rules[0].matches[0].path.value", "must not contain '/./'"],
  },
  {
    name: "v2-fragment",
    obj: v2("v2-fragment", { rules: [rule({ matches: [{ path: { value: "/api#top" } }] })] }),
    by: "webhook",
    expect: ["spec.rules[0].matches[0].path.value", "must not contain '#'"],
  },
  {
    name: "v2-duplicate-host",
    obj: v2("v2-duplicate-host", { hostnames: ["a.example.com", "a.example.com"] }),
    by: "webhook",
    expect: ["spec.hostnames[1]", "Duplicate value"],
  },
  {
    name: "v2-header-twice",
    obj: v2("v2-header-twice", {
      rules: [
        rule({
          matches: [
            {
              path: { value: "/a" },
              headers: [
                { name: "x-a", value: "1" },
                { name: "X-A", value: "2" },
              ],
            },
          ],
        }),
      ],
    }),
    by: "webhook",
    expect: ["spec.rules[0].matches[0].headers[1].name", "Duplicate value"],
  },
  {
    name: "v2-backend-namespace",
    obj: v2("v2-backend-namespace", { rules: [rule({ backends: [{ name: "checkout.other", port: 80 }] })] }),
    by: "schema",
    expect: ["spec.rules[0].backends[0].name", "should match"],
  },
  {
    name: "v2-no-rules",
    obj: v2("v2-no-rules", { rules: [] }),
    by: "schema",
    expect: ["spec.rules", "at least 1"],
  },
  // TLS: the CRD's own rules (pattern, CEL, list-type set) refuse most of what
  // can never work; /validate refuses the rest.
  {
    name: "v2-tls-secret-name",
    obj: v2("v2-tls-secret-name", { tls: { secretName: "Shop_TLS" } }),
    by: "schema",
    expect: ["spec.tls.secretName", "should match"],
  },
  {
    name: "v2-tls-catch-all",
    obj: { ...v2("v2-tls-catch-all"), spec: { rules: [rule()], tls: { secretName: "shop-tls" } } },
    by: "schema",
    expect: [
      "spec.tls: Forbidden: needs spec.hostnames: a route for any host (no hostnames) cannot have TLS",
    ],
  },
  {
    name: "v2-tls-host-not-listed",
    obj: v2("v2-tls-host-not-listed", { tls: { secretName: "shop-tls", hostnames: ["admin.example.com"] } }),
    by: "schema",
    expect: ["spec.tls.hostnames: Invalid value", "each must be one of spec.hostnames"],
  },
  {
    name: "v2-tls-duplicate-host",
    obj: v2("v2-tls-duplicate-host", {
      tls: {
        secretName: "shop-tls",
        hostnames: ["v2-tls-duplicate-host.example.com", "v2-tls-duplicate-host.example.com"],
      },
    }),
    by: "schema",
    expect: ["spec.tls.hostnames[1]", "Duplicate value"],
  },
  {
    name: "v2-tls-plain-http",
    obj: v2("v2-tls-plain-http", { tls: { secretName: "shop-tls", plainHTTP: "Deny" } }),
    by: "schema",
    expect: ["spec.tls.plainHTTP", "Unsupported value"],
  },
  {
    name: "v2-tls-top-level-wildcard",
    obj: v2("v2-tls-top-level-wildcard", { hostnames: ["*.com"], tls: { secretName: "shop-tls" } }),
    by: "webhook",
    expect: [
      "spec.hostnames[0]",
      "TLS clients never match a wildcard certificate directly under a top-level domain",
    ],
  },
  {
    name: "v1-tls-host-removed",
    obj: {
      ...v1(
        "v1-tls-host-removed",
        {},
        {
          annotations: {
            [`${GROUP}/v2-spec`]: JSON.stringify({
              hostnames: ["v1-tls-host-removed.example.com"],
              tls: { secretName: "shop-tls" },
              rules: [
                { matches: [{ path: { value: "/api" } }], backends: [{ name: "checkout", port: 8080 }] },
              ],
            }),
          },
        },
      ),
      spec: { pathPrefix: "/api", service: "checkout", port: 8080 },
    },
    by: "webhook",
    expect: [`metadata.annotations[${GROUP}/v2-spec].tls: Forbidden`, "cannot have TLS"],
  },
  {
    name: "v2-many-problems",
    obj: v2("v2-many-problems", {
      hostnames: ["a.example.com", "a.example.com"],
      rules: [rule({ matches: [{ path: { value: "/a//b" } }], timeout: "90m" })],
    }),
    by: "webhook",
    expect: [
      "spec.hostnames[1]: Duplicate value",
      'spec.rules[0].matches[0].path.value: Invalid value: "/a//b"',
      'spec.rules[0].timeout: Invalid value: "90m": must be at most 1h',
    ],
  },
  // Filters, timeouts, retry and richer matches: the CRD's own rules (CEL,
  // enums, bounds) refuse what the schema can say, so a dry run refuses it
  // without the webhook; /validate refuses the rest (RE2, Envoy's header rules).
  ...filterCases(),
];

function filterCases(): { name: string; obj: unknown; by: "webhook" | "schema"; expect: string[] }[] {
  const c = (name: string, by: "webhook" | "schema", rules: unknown[], expect: string[]) => ({
    name,
    obj: v2(name, { rules }),
    by,
    expect,
  });
  return [
    c(
      "v2-filter-two-redirects",
      "schema",
      [rule({ backends: [], filters: [redirect, redirect] }), other],
      [
        "spec.rules[0].filters: Invalid value: RequestHeaderModifier, ResponseHeaderModifier, RequestRedirect and URLRewrite may each appear once in a rule",
      ],
    ),
    c(
      "v2-filter-redirect-backends",
      "schema",
      [rule({ filters: [redirect] }), other],
      [
        "spec.rules[0].backends: Forbidden: must be empty in a rule with a RequestRedirect filter: the redirect answers every request itself",
      ],
    ),
    c(
      "v2-filter-rewrite-redirect",
      "schema",
      [
        rule({
          backends: [],
          filters: [redirect, { type: "URLRewrite", urlRewrite: { hostname: "a.example.com" } }],
        }),
        other,
      ],
      [
        "spec.rules[0].filters: Forbidden: a RequestRedirect and a URLRewrite cannot be in the same rule: a redirected request is not forwarded, so nothing is rewritten",
      ],
    ),
    c(
      "v2-filter-no-backends",
      "schema",
      [rule({ backends: [] }), other],
      [
        "spec.rules[0].backends: Required value: a rule needs at least one backend, unless a RequestRedirect filter answers its requests",
      ],
    ),
    c(
      "v2-filter-only-redirect",
      "schema",
      [rule({ backends: [], filters: [redirect] })],
      [
        "spec.rules: Required value: at least one rule needs a backend: a route that only redirects cannot be shown in v1, which names one Service",
      ],
    ),
    c(
      "v2-filter-pseudo-header",
      "schema",
      [rule({ filters: [modifier({ set: [{ name: ":authority", value: "a" }] })] })],
      [
        "spec.rules[0].filters[0].requestHeaderModifier.set[0].name: Invalid value: \":authority\": spec.rules[0].filters[0].requestHeaderModifier.set[0].name in body should match '^[A-Za-z0-9!#$%&'*+\\-.^_`|~]+$'",
        "spec.rules[0].filters[0].requestHeaderModifier.set[0].name: Forbidden: Envoy refuses to modify pseudo-headers (':'-prefixed names): a URLRewrite changes the path and host",
      ],
    ),
    c(
      "v2-filter-host-header",
      "schema",
      [rule({ filters: [modifier({ remove: ["Host"] })] })],
      [
        "spec.rules[0].filters[0].requestHeaderModifier.remove[0]: Forbidden: Envoy refuses to modify host with a header filter: a URLRewrite's hostname changes it",
      ],
    ),
    c(
      "v2-filter-status-code",
      "schema",
      [
        rule({ backends: [], filters: [{ type: "RequestRedirect", requestRedirect: { statusCode: 304 } }] }),
        other,
      ],
      [
        'spec.rules[0].filters[0].requestRedirect.statusCode: Unsupported value: 304: supported values: "301", "302", "303", "307", "308"',
      ],
    ),
    c(
      "v2-filter-type-field",
      "schema",
      [rule({ filters: [{ type: "URLRewrite", requestHeaderModifier: {} }] })],
      [
        "spec.rules[0].filters[0]: Invalid value: must set the one field its type names (requestHeaderModifier, responseHeaderModifier, requestRedirect, urlRewrite or requestMirror), and no other",
      ],
    ),
    c(
      "v2-filter-prefix-exact",
      "schema",
      [
        rule({
          matches: [{ path: { type: "Exact", value: "/a" } }],
          filters: [
            {
              type: "URLRewrite",
              urlRewrite: { path: { type: "ReplacePrefixMatch", replacePrefixMatch: "/b" } },
            },
          ],
        }),
      ],
      [
        "spec.rules[0].filters: Invalid value: ReplacePrefixMatch needs every match of the rule to be a PathPrefix: it replaces the prefix the request matched",
      ],
    ),
    c(
      "v2-timeouts-backend-over-request",
      "schema",
      [rule({ timeouts: { request: "1s", backendRequest: "2s" } })],
      ["spec.rules[0].timeouts.backendRequest: Invalid value: must not be longer than timeouts.request"],
    ),
    c(
      "v2-timeouts-backend-over-timeout",
      "schema",
      [rule({ timeout: "1s", timeouts: { backendRequest: "1500ms" } })],
      ["spec.rules[0].timeouts.backendRequest: Invalid value: must not be longer than the rule's timeout"],
    ),
    c(
      "v2-timeouts-disagree",
      "schema",
      [rule({ timeout: "1s", timeouts: { request: "2s" } })],
      [
        "spec.rules[0].timeouts.request: Invalid value: must be the same as the rule's timeout when both are set: they are the same timeout",
      ],
    ),
    c(
      "v2-retry-attempts",
      "schema",
      [rule({ retry: { attempts: 11 } })],
      [
        "spec.rules[0].retry.attempts: Invalid value: 11: spec.rules[0].retry.attempts in body should be less than or equal to 10",
      ],
    ),
    c(
      "v2-retry-code",
      "schema",
      [rule({ retry: { codes: [404] } })],
      [
        "spec.rules[0].retry.codes[0]: Invalid value: 404: spec.rules[0].retry.codes[0] in body should be greater than or equal to 500",
      ],
    ),
    c(
      "v2-retry-code-twice",
      "schema",
      [rule({ retry: { codes: [503, 503] } })],
      ["spec.rules[0].retry.codes[1]: Duplicate value: 503"],
    ),
    c(
      "v2-regex-path-syntax",
      "webhook",
      [rule({ matches: [{ path: { type: "RegularExpression", value: "/a(" } }] })],
      [
        'error when creating "STDIN": admission webhook "validate.edgeroutes.net.10xdev.io" denied the request: EdgeRoute.net.10xdev.io "v2-regex-path-syntax" is invalid: spec.rules[0].matches[0].path.value: Invalid value: "/a(": must be a regular expression in RE2 syntax: missing closing ): `/a(`',
      ],
    ),
    c(
      // re2js measures this 5; C++ RE2, as Envoy runs it, 1199.
      "v2-regex-unicode-class",
      "webhook",
      [rule({ matches: [{ path: { type: "RegularExpression", value: "/\\p{L}+" } }] })],
      [
        'spec.rules[0].matches[0].path.value: Invalid value: "/\\\\p{L}+": Unicode classes such as \\p{L} are refused: C++ RE2 compiles them to UTF-8 byte ranges',
      ],
    ),
    c(
      // re2js: 4; C++ RE2: 1430.
      "v2-regex-query-unicode",
      "webhook",
      [
        rule({
          matches: [
            {
              path: { value: "/api" },
              queryParams: [{ name: "q", type: "RegularExpression", value: "\\pL\\pN" }],
            },
          ],
        }),
      ],
      [
        "spec.rules[0].matches[0].queryParams[0].value: Invalid value:",
        "Unicode classes such as \\p{L} are refused",
      ],
    ),
    c(
      "v2-regex-path-size",
      "webhook",
      [rule({ matches: [{ path: { type: "RegularExpression", value: "/a{1000}" } }] })],
      [
        'error when creating "STDIN": admission webhook "validate.edgeroutes.net.10xdev.io" denied the request: EdgeRoute.net.10xdev.io "v2-regex-path-size" is invalid: spec.rules[0].matches[0].path.value: Invalid value: "/a{1000}": its RE2 program size is at least 1000, more than Envoy\'s limit of 100: simplify it (fewer or smaller counted repetitions: x{n,m} copies x m times)',
      ],
    ),
    c(
      "v2-regex-header-lookahead",
      "webhook",
      [
        rule({
          matches: [
            { path: { value: "/" }, headers: [{ type: "RegularExpression", name: "x", value: "(?=a)" }] },
          ],
        }),
      ],
      [
        'error when creating "STDIN": admission webhook "validate.edgeroutes.net.10xdev.io" denied the request: EdgeRoute.net.10xdev.io "v2-regex-header-lookahead" is invalid: spec.rules[0].matches[0].headers[0].value: Invalid value: "(?=a)": must be a regular expression in RE2 syntax: invalid or unsupported Perl syntax: `(?=`',
      ],
    ),
    c(
      "v2-regex-query-backref",
      "webhook",
      [
        rule({
          matches: [
            {
              path: { value: "/" },
              queryParams: [{ type: "RegularExpression", name: "q", value: "(a)\\1" }],
            },
          ],
        }),
      ],
      [
        'error when creating "STDIN": admission webhook "validate.edgeroutes.net.10xdev.io" denied the request: EdgeRoute.net.10xdev.io "v2-regex-query-backref" is invalid: spec.rules[0].matches[0].queryParams[0].value: Invalid value: "(a)\\\\1": must be a regular expression in RE2 syntax: invalid escape sequence: `\\1`',
      ],
    ),
    c(
      "v2-header-set-and-removed",
      "webhook",
      [rule({ filters: [modifier({ set: [{ name: "X-A", value: "1" }], remove: ["x-a"] })] })],
      [
        'error when creating "STDIN": admission webhook "validate.edgeroutes.net.10xdev.io" denied the request: EdgeRoute.net.10xdev.io "v2-header-set-and-removed" is invalid: spec.rules[0].filters[0].requestHeaderModifier.remove[0]: Duplicate value: "x-a": header names are case-insensitive; spec.rules[0].filters[0].requestHeaderModifier.set[0].name names it already (a header is set, added or removed once)',
      ],
    ),
    c(
      "v2-header-set-twice",
      "webhook",
      [
        rule({
          filters: [
            modifier({
              set: [
                { name: "x-b", value: "1" },
                { name: "X-B", value: "2" },
              ],
            }),
          ],
        }),
      ],
      [
        'error when creating "STDIN": admission webhook "validate.edgeroutes.net.10xdev.io" denied the request: EdgeRoute.net.10xdev.io "v2-header-set-twice" is invalid: spec.rules[0].filters[0].requestHeaderModifier.set[1].name: Duplicate value: "X-B": header names are case-insensitive; spec.rules[0].filters[0].requestHeaderModifier.set[0].name names it already (a header is set, added or removed once)',
      ],
    ),
    c(
      "v2-header-value-crlf",
      "webhook",
      [rule({ filters: [modifier({ add: [{ name: "x-a", value: "a\r\nb" }] })] })],
      [
        'error when creating "STDIN": admission webhook "validate.edgeroutes.net.10xdev.io" denied the request: EdgeRoute.net.10xdev.io "v2-header-value-crlf" is invalid: spec.rules[0].filters[0].requestHeaderModifier.add[0].value: Invalid value: "a\\r\\nb": must not contain CR, LF or NUL (Envoy refuses them)',
      ],
    ),
    c(
      "v2-retry-backoff-zero",
      "webhook",
      [rule({ retry: { backoff: "0s" } })],
      [
        'error when creating "STDIN": admission webhook "validate.edgeroutes.net.10xdev.io" denied the request: EdgeRoute.net.10xdev.io "v2-retry-backoff-zero" is invalid: spec.rules[0].retry.backoff: Invalid value: "0s": must be more than 0s: Envoy needs a base interval between attempts',
      ],
    ),
    c(
      "v2-timeouts-over-an-hour",
      "webhook",
      [rule({ timeouts: { request: "2h" } })],
      [
        'error when creating "STDIN": admission webhook "validate.edgeroutes.net.10xdev.io" denied the request: EdgeRoute.net.10xdev.io "v2-timeouts-over-an-hour" is invalid: spec.rules[0].timeouts.request: Invalid value: "2h": must be at most 1h',
      ],
    ),
  ];
}
