// Admission of the rule fields beyond matches and backends, and of the richer
// matches: each refusal with its exact message (all of a route's errors at
// once), and the valid routes that use every field.

import { describe, expect, it } from "vitest";
import { formatFieldError } from "../api/field-error.js";
import { validateRoute } from "./validate.js";

const backend = { name: "checkout", port: 8080 };
const rule = (r: Record<string, unknown> = {}) => ({
  matches: [{ path: { type: "PathPrefix", value: "/api" } }],
  backends: [backend],
  ...r,
});
const other = rule({ matches: [{ path: { value: "/other" } }] });
const v2 = (...rules: unknown[]) => ({
  apiVersion: "net.10xdev.io/v2",
  kind: "EdgeRoute",
  metadata: { name: "r", namespace: "default" },
  spec: { hostnames: ["shop.example.com"], rules },
});
const redirect = { type: "RequestRedirect", requestRedirect: { scheme: "https", statusCode: 301 } };
const headers = (mod: Record<string, unknown>, type = "RequestHeaderModifier") => ({
  type,
  [type === "RequestHeaderModifier" ? "requestHeaderModifier" : "responseHeaderModifier"]: mod,
});
const messages = (obj: unknown) => validateRoute(obj, "v2").map(formatFieldError);

describe("admission of filters, timeouts, retry and richer matches: valid", () => {
  it.each([
    [
      "every filter but a redirect, in one rule",
      v2(
        rule({
          filters: [
            headers({
              set: [{ name: "X-Env", value: "prod" }],
              add: [{ name: "x-a", value: "1" }],
              remove: ["x-b"],
            }),
            headers({ set: [{ name: "cache-control", value: "no-store" }] }, "ResponseHeaderModifier"),
            {
              type: "URLRewrite",
              urlRewrite: {
                hostname: "internal.example.com",
                path: { type: "ReplacePrefixMatch", replacePrefixMatch: "/v2" },
              },
            },
            { type: "RequestMirror", requestMirror: { backend: { name: "shadow", port: 80 }, percent: 10 } },
            { type: "RequestMirror", requestMirror: { backend: { name: "audit", port: 80 } } },
          ],
        }),
      ),
    ],
    ["a redirect rule beside a rule with backends", v2(rule({ backends: [], filters: [redirect] }), other)],
    [
      "regular expressions, query parameters and a method",
      v2(
        rule({
          matches: [
            {
              path: { type: "RegularExpression", value: "/api/v[0-9]+/.*" },
              headers: [{ type: "RegularExpression", name: "x-version", value: "v[12]" }],
              queryParams: [
                { name: "debug", value: "1" },
                { type: "RegularExpression", name: "page", value: "[0-9]+" },
              ],
              method: "GET",
            },
          ],
        }),
      ),
    ],
    [
      "timeouts and retry within their bounds (1m is 60s)",
      v2(
        rule({
          timeout: "1m",
          timeouts: { request: "60s", backendRequest: "10s" },
          retry: {
            attempts: 10,
            codes: [500, 503, 599],
            conditions: ["5xx", "Unavailable"],
            backoff: "100ms",
          },
        }),
      ),
    ],
    [
      "a per-try timeout under a request timeout of 0s (none)",
      v2(rule({ timeouts: { request: "0s", backendRequest: "1h" } })),
    ],
    [
      "two matches told apart only by method, or by a header's match type (not duplicates)",
      v2(
        rule({
          matches: [
            { path: { value: "/api" }, method: "GET" },
            { path: { value: "/api" }, method: "POST" },
            { path: { value: "/api" }, headers: [{ name: "x", value: "a+" }] },
            { path: { value: "/api" }, headers: [{ type: "RegularExpression", name: "x", value: "a+" }] },
          ],
        }),
      ),
    ],
    [
      "RE2's own syntax, which JavaScript's RegExp refuses (judged by RE2, not by JavaScript)",
      v2(rule({ matches: [{ path: { type: "RegularExpression", value: "/(?P<v>[0-9]+)/[0-9]" } }] })),
    ],
  ])("%s", (_name, obj) => {
    expect(messages(obj)).toEqual([]);
  });
});

const invalid: [string, unknown, string[]][] = [
  [
    "a path regex RE2 does not parse",
    v2(rule({ matches: [{ path: { type: "RegularExpression", value: "/a(" } }] })),
    [
      'spec.rules[0].matches[0].path.value: Invalid value: "/a(": must be a regular expression in RE2 syntax: missing closing ): `/a(`',
    ],
  ],
  [
    "a path regex over Envoy's program size (as C++ RE2 measures it, not JavaScript's RegExp, which takes it)",
    v2(rule({ matches: [{ path: { type: "RegularExpression", value: "/a{1000}" } }] })),
    [
      'spec.rules[0].matches[0].path.value: Invalid value: "/a{1000}": its RE2 program size is at least 1000, more than Envoy\'s limit of 100: simplify it (fewer or smaller counted repetitions: x{n,m} copies x m times)',
    ],
  ],
  [
    "a header regex with lookahead (JavaScript has it, RE2 does not)",
    v2(
      rule({
        matches: [
          { path: { value: "/" }, headers: [{ type: "RegularExpression", name: "x", value: "(?=a)" }] },
        ],
      }),
    ),
    [
      'spec.rules[0].matches[0].headers[0].value: Invalid value: "(?=a)": must be a regular expression in RE2 syntax: invalid or unsupported Perl syntax: `(?=`',
    ],
  ],
  [
    "a query regex with a backreference, and a query parameter named twice",
    v2(
      rule({
        matches: [
          {
            path: { value: "/" },
            queryParams: [
              { type: "RegularExpression", name: "q", value: "(a)\\1" },
              { name: "q", value: "1" },
            ],
          },
        ],
      }),
    ),
    [
      'spec.rules[0].matches[0].queryParams[0].value: Invalid value: "(a)\\\\1": must be a regular expression in RE2 syntax: invalid escape sequence: `\\1`',
      'spec.rules[0].matches[0].queryParams[1].name: Duplicate value: "q": same name as spec.rules[0].matches[0].queryParams[0]',
    ],
  ],
  [
    "two redirects in a rule",
    v2(rule({ backends: [], filters: [redirect, redirect] }), other),
    [
      'spec.rules[0].filters[1].type: Duplicate value: "RequestRedirect": may appear once in a rule, and spec.rules[0].filters[0] is one already',
    ],
  ],
  [
    "two URL rewrites and two request header modifiers",
    v2(
      rule({
        filters: [
          { type: "URLRewrite", urlRewrite: { hostname: "a.example.com" } },
          headers({ remove: ["x-a"] }),
          { type: "URLRewrite", urlRewrite: { hostname: "b.example.com" } },
          headers({ remove: ["x-b"] }),
        ],
      }),
    ),
    [
      'spec.rules[0].filters[2].type: Duplicate value: "URLRewrite": may appear once in a rule, and spec.rules[0].filters[0] is one already',
      'spec.rules[0].filters[3].type: Duplicate value: "RequestHeaderModifier": may appear once in a rule, and spec.rules[0].filters[1] is one already',
    ],
  ],
  [
    "a redirect with backends",
    v2(rule({ filters: [redirect] }), other),
    [
      "spec.rules[0].backends: Forbidden: must be empty in a rule with a RequestRedirect filter: the redirect answers every request itself",
    ],
  ],
  [
    "a rule with neither backends nor a redirect",
    v2(rule({ backends: [] }), other),
    [
      "spec.rules[0].backends: Required value: a rule needs at least one backend, unless a RequestRedirect filter answers its requests",
    ],
  ],
  [
    "a route that only redirects",
    v2(rule({ backends: [], filters: [redirect] })),
    [
      "spec.rules: Required value: at least one rule needs a backend: a route that only redirects cannot be shown in v1, which names one Service",
    ],
  ],
  [
    "a rewrite and a redirect",
    v2(
      rule({
        backends: [],
        filters: [redirect, { type: "URLRewrite", urlRewrite: { hostname: "a.example.com" } }],
      }),
      other,
    ),
    [
      "spec.rules[0].filters[1]: Forbidden: a RequestRedirect and a URLRewrite cannot be in the same rule: a redirected request is not forwarded, so nothing is rewritten",
    ],
  ],
  [
    "a header both set and removed (without regard to case), and one set twice",
    v2(
      rule({
        filters: [
          headers({
            set: [
              { name: "X-A", value: "1" },
              { name: "x-b", value: "1" },
              { name: "X-B", value: "2" },
            ],
            remove: ["x-a"],
          }),
        ],
      }),
    ),
    [
      'spec.rules[0].filters[0].requestHeaderModifier.remove[0]: Duplicate value: "x-a": header names are case-insensitive; spec.rules[0].filters[0].requestHeaderModifier.set[0].name names it already (a header is set, added or removed once)',
      'spec.rules[0].filters[0].requestHeaderModifier.set[2].name: Duplicate value: "X-B": header names are case-insensitive; spec.rules[0].filters[0].requestHeaderModifier.set[1].name names it already (a header is set, added or removed once)',
    ],
  ],
  [
    "pseudo-headers and host, which Envoy refuses to modify (one message each)",
    v2(
      rule({
        filters: [
          headers({
            set: [{ name: ":authority", value: "1" }],
            add: [{ name: "Host", value: "x" }],
            remove: [":path"],
          }),
        ],
      }),
    ),
    [
      'spec.rules[0].filters[0].requestHeaderModifier.add[0].name: Forbidden: "Host": Envoy refuses to modify host with a header filter: a URLRewrite\'s hostname changes it',
      "spec.rules[0].filters[0].requestHeaderModifier.remove[0]: Forbidden: \":path\": Envoy refuses to modify pseudo-headers (':'-prefixed names): a URLRewrite changes the path and host",
      "spec.rules[0].filters[0].requestHeaderModifier.set[0].name: Forbidden: \":authority\": Envoy refuses to modify pseudo-headers (':'-prefixed names): a URLRewrite changes the path and host",
    ],
  ],
  [
    "a response header value with CR LF",
    v2(rule({ filters: [headers({ add: [{ name: "x-a", value: "a\r\nb" }] }, "ResponseHeaderModifier")] })),
    [
      'spec.rules[0].filters[0].responseHeaderModifier.add[0].value: Invalid value: "a\\r\\nb": must not contain CR, LF or NUL (Envoy refuses them)',
    ],
  ],
  [
    "a redirect status code that is not a redirect",
    v2(
      rule({ backends: [], filters: [{ type: "RequestRedirect", requestRedirect: { statusCode: 304 } }] }),
      other,
    ),
    [
      "spec.rules[0].filters[0].requestRedirect.statusCode: Unsupported value: 304: supported values: 301, 302, 303, 307, 308",
    ],
  ],
  [
    "a filter whose type names another field",
    v2(rule({ filters: [{ type: "URLRewrite", requestHeaderModifier: {} }] })),
    [
      'spec.rules[0].filters[0]: Invalid value: "URLRewrite": must set the one field its type names (requestHeaderModifier, responseHeaderModifier, requestRedirect, urlRewrite or requestMirror), and no other',
    ],
  ],
  [
    "ReplacePrefixMatch in a rule with an Exact match",
    v2(
      rule({
        matches: [{ path: { value: "/a" } }, { path: { type: "Exact", value: "/b" } }],
        filters: [
          {
            type: "URLRewrite",
            urlRewrite: { path: { type: "ReplacePrefixMatch", replacePrefixMatch: "/v2" } },
          },
        ],
      }),
    ),
    [
      'spec.rules[0].filters[0].urlRewrite.path.type: Invalid value: "ReplacePrefixMatch": ReplacePrefixMatch needs every match of the rule to be a PathPrefix: it replaces the prefix the request matched (matches[1] is Exact)',
    ],
  ],
  [
    "a path modifier whose type names the other field, with a path that cannot be",
    v2(
      rule({
        filters: [
          {
            type: "URLRewrite",
            urlRewrite: { path: { type: "ReplaceFullPath", replacePrefixMatch: "/b//c" } },
          },
        ],
      }),
    ),
    [
      'spec.rules[0].filters[0].urlRewrite.path: Invalid value: "ReplaceFullPath": must set the one field its type names: replaceFullPath for ReplaceFullPath, replacePrefixMatch for ReplacePrefixMatch',
      "spec.rules[0].filters[0].urlRewrite.path.replacePrefixMatch: Invalid value: \"/b//c\": must not contain '//'",
    ],
  ],
  [
    "a mirror of more than every request",
    v2(
      rule({
        filters: [
          { type: "RequestMirror", requestMirror: { backend: { name: "shadow", port: 80 }, percent: 101 } },
        ],
      }),
    ),
    ["spec.rules[0].filters[0].requestMirror.percent: Invalid value: 101: must be between 0 and 100"],
  ],
  [
    "a per-try timeout longer than the request timeout",
    v2(rule({ timeouts: { request: "1s", backendRequest: "2s" } })),
    ['spec.rules[0].timeouts.backendRequest: Invalid value: "2s": must not be longer than timeouts.request'],
  ],
  [
    "a per-try timeout longer than the rule's timeout",
    v2(rule({ timeout: "1s", timeouts: { backendRequest: "1500ms" } })),
    [
      'spec.rules[0].timeouts.backendRequest: Invalid value: "1500ms": must not be longer than the rule\'s timeout',
    ],
  ],
  [
    "timeout and timeouts.request that disagree",
    v2(rule({ timeout: "1s", timeouts: { request: "2s" } })),
    [
      'spec.rules[0].timeouts.request: Invalid value: "2s": must be the same as the rule\'s timeout when both are set: they are the same timeout',
    ],
  ],
  [
    "timeouts that are no durations, or over an hour",
    v2(rule({ timeouts: { request: "2h", backendRequest: "1s1s" } })),
    [
      'spec.rules[0].timeouts.backendRequest: Invalid value: "1s1s": must be a duration such as 15s, 1m30s or 500ms (units h, m, s, ms)',
      'spec.rules[0].timeouts.request: Invalid value: "2h": must be at most 1h',
    ],
  ],
  [
    "retry out of bounds: attempts, codes outside 500-599 or twice, a condition twice or unknown, a zero backoff",
    v2(
      rule({
        retry: { attempts: 11, codes: [404, 503, 503], conditions: ["5xx", "5xx", "Nope"], backoff: "0s" },
      }),
    ),
    [
      "spec.rules[0].retry.attempts: Invalid value: 11: must be between 0 and 10",
      'spec.rules[0].retry.backoff: Invalid value: "0s": must be more than 0s: Envoy needs a base interval between attempts',
      "spec.rules[0].retry.codes[0]: Invalid value: 404: must be between 500 and 599",
      "spec.rules[0].retry.codes[2]: Duplicate value: 503: same as spec.rules[0].retry.codes[1]",
      'spec.rules[0].retry.conditions[1]: Duplicate value: "5xx": same as spec.rules[0].retry.conditions[0]',
      'spec.rules[0].retry.conditions[2]: Unsupported value: "Nope": supported values: "5xx", "GatewayError", "Reset", "ConnectFailure", "Cancelled", "DeadlineExceeded", "Internal", "ResourceExhausted", "Unavailable"',
    ],
  ],
  [
    "a method that is not one",
    v2(rule({ matches: [{ path: { value: "/" }, method: "FETCH" }] })),
    [
      'spec.rules[0].matches[0].method: Unsupported value: "FETCH": supported values: "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"',
    ],
  ],
];

describe("admission of filters, timeouts, retry and richer matches: refused, every error at once", () => {
  it.each(invalid)("%s", (_name, obj, expected) => {
    expect(messages(obj)).toEqual(expected);
  });
});
