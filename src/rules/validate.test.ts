import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { formatFieldError } from "../api/field-error.js";
import { parseGatewayDuration as parseDuration } from "../api/duration.js";
import { hostnameProblems, pathProblems, validateRoute } from "./validate.js";
import { secretNameProblems } from "./tls-rules.js";

const v1 = (spec: Record<string, unknown>) => ({
  apiVersion: "net.10xdev.io/v1",
  kind: "EdgeRoute",
  metadata: { name: "r", namespace: "default" },
  spec: { host: "shop.example.com", pathPrefix: "/api", service: "checkout", port: 8080, ...spec },
});

const backend = { name: "checkout", port: 8080 };
const rule = (r: Record<string, unknown> = {}) => ({
  matches: [{ path: { type: "PathPrefix", value: "/api" } }],
  backends: [backend],
  ...r,
});
const v2 = (spec: Record<string, unknown>) => ({
  apiVersion: "net.10xdev.io/v2",
  kind: "EdgeRoute",
  metadata: { name: "r", namespace: "default" },
  spec: { hostnames: ["shop.example.com"], rules: [rule()], ...spec },
});

const messages = (obj: unknown, version: "v1" | "v2") => validateRoute(obj, version).map(formatFieldError);

describe("validateRoute: valid routes", () => {
  it.each([
    ["v1 minimal", v1({ host: undefined }), "v1"],
    ["v1 wildcard host and timeout", v1({ host: "*.example.com", timeoutSeconds: 3600 }), "v1"],
    ["v1 root path", v1({ pathPrefix: "/" }), "v1"],
    [
      "v2 minimal",
      v2({ hostnames: undefined, rules: [{ matches: [{ path: { value: "/" } }], backends: [backend] }] }),
      "v2",
    ],
    [
      "v2 full",
      v2({
        hostnames: ["shop.example.com", "*.shop.example.com"],
        rules: [
          rule({
            matches: [
              { path: { type: "Exact", value: "/api" } },
              { path: { type: "PathPrefix", value: "/api" }, headers: [{ name: "x-canary", value: "1" }] },
            ],
            backends: [
              { name: "checkout", port: 8080, weight: 0 },
              { name: "checkout-canary", port: 65535, weight: 1_000_000 },
            ],
            timeout: "1h",
          }),
          rule({
            matches: [{ path: { value: "/api" }, headers: [{ name: "x-canary", value: "2" }] }],
            timeout: "59m59s999ms",
          }),
        ],
      }),
      "v2",
    ],
    ["v2 zero timeout (disabled)", v2({ rules: [rule({ timeout: "0s" })] }), "v2"],
    ["v2 TLS for every hostname", v2({ tls: { secretName: "shop-tls" } }), "v2"],
    [
      "v2 TLS for some hostnames, a wildcard among them, plain HTTP allowed",
      v2({
        hostnames: ["shop.example.com", "*.shop.example.com", "plain.example.com"],
        tls: {
          secretName: "shop.example.com-tls",
          hostnames: ["*.shop.example.com", "shop.example.com"],
          plainHTTP: "Allow",
        },
      }),
      "v2",
    ],
    [
      "v2 TLS for some hostnames, the top-level wildcard left out",
      v2({
        hostnames: ["shop.example.com", "*.com"],
        tls: { secretName: "s", hostnames: ["shop.example.com"] },
      }),
      "v2",
    ],
  ] as const)("%s", (_name, obj, version) => {
    expect(messages(obj, version)).toEqual([]);
  });
});

// One row per rule: the object, and every message it must give.
const invalid: [string, unknown, "v1" | "v2", string[]][] = [
  // hostnames
  [
    "upper-case host",
    v1({ host: "Shop.example.com" }),
    "v1",
    ['spec.host: Invalid value: "Shop.example.com": must be lowercase'],
  ],
  [
    "host with underscore",
    v2({ hostnames: ["shop_1.example.com"] }),
    "v2",
    [
      `spec.hostnames[0]: Invalid value: "shop_1.example.com": must be a DNS-1123 subdomain: labels of lowercase letters, digits and '-', separated by '.', each starting and ending with a letter or digit`,
    ],
  ],
  [
    "wildcard not leading",
    v2({ hostnames: ["shop.*.com"] }),
    "v2",
    [
      'spec.hostnames[0]: Invalid value: "shop.*.com": a wildcard is allowed only as the whole first label (*.example.com)',
    ],
  ],
  [
    "partial wildcard label",
    v1({ host: "*shop.example.com" }),
    "v1",
    [
      'spec.host: Invalid value: "*shop.example.com": a wildcard is allowed only as the whole first label (*.example.com)',
    ],
  ],
  [
    "bare wildcard",
    v1({ host: "*" }),
    "v1",
    ['spec.host: Invalid value: "*": a wildcard must be followed by a domain (*.example.com)'],
  ],
  [
    "host over 253 characters",
    v1({ host: `${"a".repeat(60)}.`.repeat(4) + "a".repeat(20) }),
    "v1",
    [
      `spec.host: Invalid value: "${`${"a".repeat(60)}.`.repeat(4) + "a".repeat(20)}": must be no more than 253 characters`,
    ],
  ],
  [
    "label over 63 characters",
    v1({ host: `${"a".repeat(64)}.com` }),
    "v1",
    [`spec.host: Invalid value: "${"a".repeat(64)}.com": each label must be no more than 63 characters`],
  ],
  [
    "duplicate hostnames",
    v2({ hostnames: ["a.example.com", "a.example.com"] }),
    "v2",
    ['spec.hostnames[1]: Duplicate value: "a.example.com": same as spec.hostnames[0]'],
  ],
  // paths
  [
    "path without leading slash",
    v1({ pathPrefix: "api" }),
    "v1",
    [`spec.pathPrefix: Invalid value: "api": must start with '/'`],
  ],
  ["empty path", v1({ pathPrefix: "" }), "v1", [`spec.pathPrefix: Invalid value: "": must start with '/'`]],
  [
    "double slash",
    v1({ pathPrefix: "/a//b" }),
    "v1",
    [`spec.pathPrefix: Invalid value: "/a//b": must not contain '//'`],
  ],
  [
    "dot segment",
    v1({ pathPrefix: "/a/./b" }),
    "v1",
    [`spec.pathPrefix: Invalid value: "/a/./b": must not contain '/./'`],
  ],
  [
    "dot-dot segment",
    v1({ pathPrefix: "/a/../b" }),
    "v1",
    [`spec.pathPrefix: Invalid value: "/a/../b": must not contain '/../'`],
  ],
  [
    "trailing /..",
    v1({ pathPrefix: "/a/.." }),
    "v1",
    [`spec.pathPrefix: Invalid value: "/a/..": must not end with '/..'`],
  ],
  [
    "trailing /.",
    v1({ pathPrefix: "/a/." }),
    "v1",
    [`spec.pathPrefix: Invalid value: "/a/.": must not end with '/.'`],
  ],
  [
    "encoded slash",
    v2({ rules: [rule({ matches: [{ path: { value: "/a%2Fb" } }] })] }),
    "v2",
    [
      `spec.rules[0].matches[0].path.value: Invalid value: "/a%2Fb": must not contain an encoded slash ('%2F')`,
    ],
  ],
  [
    "lower-case encoded slash",
    v1({ pathPrefix: "/a%2fb" }),
    "v1",
    [`spec.pathPrefix: Invalid value: "/a%2fb": must not contain an encoded slash ('%2F')`],
  ],
  [
    "fragment",
    v1({ pathPrefix: "/a#b" }),
    "v1",
    [`spec.pathPrefix: Invalid value: "/a#b": must not contain '#'`],
  ],
  [
    "query",
    v1({ pathPrefix: "/a?b=1" }),
    "v1",
    [`spec.pathPrefix: Invalid value: "/a?b=1": must not contain '?'`],
  ],
  [
    "several path problems in one field",
    v1({ pathPrefix: "/a//b?c#d" }),
    "v1",
    [
      `spec.pathPrefix: Invalid value: "/a//b?c#d": must not contain '//'; must not contain '#'; must not contain '?'`,
    ],
  ],
  [
    "space in path",
    v1({ pathPrefix: "/a b" }),
    "v1",
    [`spec.pathPrefix: Invalid value: "/a b": must not contain whitespace or control characters`],
  ],
  [
    "path type",
    v2({ rules: [rule({ matches: [{ path: { type: "Regex", value: "/a" } }] })] }),
    "v2",
    [
      'spec.rules[0].matches[0].path.type: Unsupported value: "Regex": supported values: "PathPrefix", "Exact", "RegularExpression"',
    ],
  ],
  // ports
  ["port 0", v1({ port: 0 }), "v1", ["spec.port: Invalid value: 0: must be between 1 and 65535"]],
  [
    "port 70000",
    v2({ rules: [rule({ backends: [backend, { name: "b", port: 70000 }] })] }),
    "v2",
    ["spec.rules[0].backends[1].port: Invalid value: 70000: must be between 1 and 65535"],
  ],
  [
    "port as a string",
    v1({ port: "http" }),
    "v1",
    ['spec.port: Invalid value: "http": must be of type integer'],
  ],
  // backend names
  [
    "service name with upper case",
    v1({ service: "Checkout" }),
    "v1",
    [
      `spec.service: Invalid value: "Checkout": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character`,
    ],
  ],
  [
    "backend name starting with a digit",
    v2({ rules: [rule({ backends: [{ name: "1checkout", port: 80 }] })] }),
    "v2",
    [
      `spec.rules[0].backends[0].name: Invalid value: "1checkout": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character`,
    ],
  ],
  [
    "backend in another namespace (a dotted name)",
    v2({ rules: [rule({ backends: [{ name: "checkout.shop", port: 80 }] })] }),
    "v2",
    [
      `spec.rules[0].backends[0].name: Invalid value: "checkout.shop": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character`,
    ],
  ],
  [
    "service name too long",
    v1({ service: `a${"b".repeat(63)}` }),
    "v1",
    ["spec.service: Too long: may not be more than 63 bytes"],
  ],
  // weights
  [
    "weight above the maximum",
    v2({ rules: [rule({ backends: [{ ...backend, weight: 1_000_001 }] })] }),
    "v2",
    ["spec.rules[0].backends[0].weight: Invalid value: 1000001: must be between 0 and 1000000"],
  ],
  [
    "negative weight",
    v2({
      rules: [
        rule({
          backends: [
            { ...backend, weight: -1 },
            { ...backend, name: "b" },
          ],
        }),
      ],
    }),
    "v2",
    ["spec.rules[0].backends[0].weight: Invalid value: -1: must be between 0 and 1000000"],
  ],
  [
    "every weight zero",
    v2({
      rules: [
        rule(),
        rule({
          matches: [{ path: { value: "/b" } }],
          backends: [
            { ...backend, weight: 0 },
            { name: "b", port: 80, weight: 0 },
          ],
        }),
      ],
    }),
    "v2",
    ["spec.rules[1].backends: Invalid value: [0,0]: at least one backend must have a weight above 0"],
  ],
  // matches
  [
    "the same match twice in one rule (default type)",
    v2({
      rules: [
        rule({ matches: [{ path: { value: "/api" } }, { path: { type: "PathPrefix", value: "/api" } }] }),
      ],
    }),
    "v2",
    [
      "spec.rules[0].matches[1]: Duplicate value: PathPrefix /api is already matched by spec.rules[0].matches[0]",
    ],
  ],
  [
    "the same match in two rules, headers in another order and case",
    v2({
      rules: [
        rule({
          matches: [
            {
              path: { value: "/a" },
              headers: [
                { name: "X-A", value: "1" },
                { name: "x-b", value: "2" },
              ],
            },
          ],
        }),
        rule({
          matches: [
            {
              path: { value: "/a" },
              headers: [
                { name: "x-b", value: "2" },
                { name: "x-a", value: "1" },
              ],
            },
          ],
        }),
      ],
    }),
    "v2",
    [
      "spec.rules[1].matches[0]: Duplicate value: PathPrefix /a with headers x-a=1, x-b=2 is already matched by spec.rules[0].matches[0]",
    ],
  ],
  [
    "one header named twice",
    v2({
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
    "v2",
    [
      'spec.rules[0].matches[0].headers[1].name: Duplicate value: "X-A": header names are case-insensitive; same name as spec.rules[0].matches[0].headers[0]',
    ],
  ],
  [
    "header name that is not a token",
    v2({ rules: [rule({ matches: [{ path: { value: "/a" }, headers: [{ name: "x a", value: "1" }] }] })] }),
    "v2",
    [
      'spec.rules[0].matches[0].headers[0].name: Invalid value: "x a": must be an HTTP header name (letters, digits and !#$%&\'*+-.^_`|~)',
    ],
  ],
  // timeouts
  [
    "timeout over 1h",
    v2({ rules: [rule({ timeout: "61m" })] }),
    "v2",
    ['spec.rules[0].timeout: Invalid value: "61m": must be at most 1h'],
  ],
  [
    "timeout that is not a duration",
    v2({ rules: [rule({ timeout: "15 seconds" })] }),
    "v2",
    [
      'spec.rules[0].timeout: Invalid value: "15 seconds": must be a duration such as 15s, 1m30s or 500ms (units h, m, s, ms)',
    ],
  ],
  [
    "timeout with a fraction",
    v2({ rules: [rule({ timeout: "1.5s" })] }),
    "v2",
    [
      'spec.rules[0].timeout: Invalid value: "1.5s": must be a duration such as 15s, 1m30s or 500ms (units h, m, s, ms)',
    ],
  ],
  [
    "v1 timeout above 3600",
    v1({ timeoutSeconds: 3601 }),
    "v1",
    ["spec.timeoutSeconds: Invalid value: 3601: must be between 1 and 3600"],
  ],
  // tls
  [
    "TLS Secret name with upper case and an underscore",
    v2({ tls: { secretName: "Shop_TLS" } }),
    "v2",
    [
      `spec.tls.secretName: Invalid value: "Shop_TLS": a DNS-1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'shop-tls')`,
    ],
  ],
  [
    "TLS Secret name over 253 characters",
    v2({ tls: { secretName: `${"a".repeat(60)}.`.repeat(4) + "a".repeat(20) } }),
    "v2",
    [
      `spec.tls.secretName: Invalid value: "${`${"a".repeat(60)}.`.repeat(4) + "a".repeat(20)}": must be no more than 253 characters`,
    ],
  ],
  [
    "empty TLS Secret name",
    v2({ tls: { secretName: "" } }),
    "v2",
    ['spec.tls.secretName: Invalid value: "": must not be empty'],
  ],
  [
    "TLS without a Secret name",
    v2({ tls: { hostnames: ["shop.example.com"] } }),
    "v2",
    ["spec.tls.secretName: Required value: must be set"],
  ],
  [
    "TLS on a route for any host",
    v2({ hostnames: undefined, tls: { secretName: "shop-tls" } }),
    "v2",
    ["spec.tls: Forbidden: needs spec.hostnames: a route for any host (no hostnames) cannot have TLS"],
  ],
  [
    "TLS on a route with an empty hostnames list",
    v2({ hostnames: [], tls: { secretName: "shop-tls", hostnames: ["shop.example.com"] } }),
    "v2",
    ["spec.tls: Forbidden: needs spec.hostnames: a route for any host (no hostnames) cannot have TLS"],
  ],
  [
    "a TLS host the route does not name",
    v2({ tls: { secretName: "shop-tls", hostnames: ["shop.example.com", "admin.example.com"] } }),
    "v2",
    ['spec.tls.hostnames[1]: Invalid value: "admin.example.com": must be one of spec.hostnames'],
  ],
  [
    "an exact TLS host that only a wildcard of the route covers",
    v2({ hostnames: ["*.example.com"], tls: { secretName: "shop-tls", hostnames: ["shop.example.com"] } }),
    "v2",
    [
      'spec.tls.hostnames[0]: Invalid value: "shop.example.com": must be one of spec.hostnames: spec.hostnames[0] "*.example.com" covers it, but a TLS host is named as spec.hostnames names it',
    ],
  ],
  [
    "a wildcard TLS host over the exact names of the route",
    v2({
      hostnames: ["shop.example.com", "cart.example.com"],
      tls: { secretName: "shop-tls", hostnames: ["*.example.com"] },
    }),
    "v2",
    [
      'spec.tls.hostnames[0]: Invalid value: "*.example.com": must be one of spec.hostnames: a wildcard TLS host serves the same wildcard in spec.hostnames, not exact names it covers (spec.hostnames[0] "shop.example.com")',
    ],
  ],
  [
    "a TLS host twice",
    v2({ tls: { secretName: "shop-tls", hostnames: ["shop.example.com", "shop.example.com"] } }),
    "v2",
    ['spec.tls.hostnames[1]: Duplicate value: "shop.example.com": same as spec.tls.hostnames[0]'],
  ],
  [
    "a TLS host that is not a hostname",
    v2({ tls: { secretName: "shop-tls", hostnames: ["Shop.example.com"] } }),
    "v2",
    ['spec.tls.hostnames[0]: Invalid value: "Shop.example.com": must be lowercase'],
  ],
  [
    "an empty TLS hostnames list",
    v2({ tls: { secretName: "shop-tls", hostnames: [] } }),
    "v2",
    ["spec.tls.hostnames: Required value: must have at least 1 item"],
  ],
  [
    "a top-level wildcard named as a TLS host",
    v2({ hostnames: ["*.com"], tls: { secretName: "shop-tls", hostnames: ["*.com"] } }),
    "v2",
    [
      `spec.tls.hostnames[0]: Invalid value: "*.com": a wildcard served over TLS needs two labels after '*.' (*.example.com): TLS clients never match a wildcard certificate directly under a top-level domain`,
    ],
  ],
  [
    "a top-level wildcard served by TLS for every hostname",
    v2({ hostnames: ["shop.example.com", "*.com"], tls: { secretName: "shop-tls" } }),
    "v2",
    [
      `spec.hostnames[1]: Invalid value: "*.com": a wildcard served over TLS needs two labels after '*.' (*.example.com): TLS clients never match a wildcard certificate directly under a top-level domain; spec.tls.hostnames can leave it out`,
    ],
  ],
  [
    "an unknown plain HTTP policy",
    v2({ tls: { secretName: "shop-tls", plainHTTP: "Deny" } }),
    "v2",
    ['spec.tls.plainHTTP: Unsupported value: "Deny": supported values: "Redirect", "Allow"'],
  ],
  [
    "tls that is not an object",
    v2({ tls: "shop-tls" }),
    "v2",
    ['spec.tls: Invalid value: "shop-tls": must be of type object'],
  ],
  [
    "too many TLS hosts",
    v2({
      hostnames: Array.from({ length: 16 }, (_, i) => `h${i}.example.com`),
      tls: { secretName: "s", hostnames: Array.from({ length: 17 }, (_, i) => `h${i}.example.com`) },
    }),
    "v2",
    [
      "spec.tls.hostnames: Too many: 17: must have at most 16 items",
      'spec.tls.hostnames[16]: Invalid value: "h16.example.com": must be one of spec.hostnames',
    ],
  ],
  // shape
  ["no spec", { metadata: {} }, "v2", ["spec: Required value: must be set"]],
  ["spec not an object", { spec: [] }, "v1", ["spec: Invalid value: []: must be of type object"]],
  [
    "v1 missing every required field",
    { spec: {} },
    "v1",
    [
      "spec.pathPrefix: Required value: must be set",
      "spec.port: Required value: must be set",
      "spec.service: Required value: must be set",
    ],
  ],
  ["no rules", v2({ rules: [] }), "v2", ["spec.rules: Required value: must have at least 1 item"]],
  [
    "too many hostnames",
    v2({ hostnames: Array.from({ length: 17 }, (_, i) => `h${i}.example.com`) }),
    "v2",
    ["spec.hostnames: Too many: 17: must have at most 16 items"],
  ],
  [
    "a v2 spec under v1",
    v2({}),
    "v1",
    [
      "spec.pathPrefix: Required value: must be set",
      "spec.port: Required value: must be set",
      "spec.service: Required value: must be set",
    ],
  ],
];

describe("validateRoute: each rule", () => {
  it.each(invalid)("%s", (_name, obj, version, expected) => {
    expect(messages(obj, version)).toEqual(expected);
  });
});

describe("validateRoute: all problems at once", () => {
  it("lists every problem of a route, in document order, each once", () => {
    const obj = v2({
      hostnames: ["Bad.example.com", "ok.example.com"],
      rules: [
        rule({ backends: [{ name: "checkout", port: 70000, weight: 0 }], timeout: "2h" }),
        rule({ matches: [{ path: { value: "/api" } }, { path: { type: "Exact", value: "a//b" } }] }),
      ],
    });
    expect(messages(obj, "v2")).toEqual([
      'spec.hostnames[0]: Invalid value: "Bad.example.com": must be lowercase',
      "spec.rules[0].backends: Invalid value: [0]: at least one backend must have a weight above 0",
      "spec.rules[0].backends[0].port: Invalid value: 70000: must be between 1 and 65535",
      'spec.rules[0].timeout: Invalid value: "2h": must be at most 1h',
      "spec.rules[1].matches[0]: Duplicate value: PathPrefix /api is already matched by spec.rules[0].matches[0]",
      `spec.rules[1].matches[1].path.value: Invalid value: "a//b": must start with '/'; must not contain '//'`,
    ]);
  });

  it("lists every TLS problem with the route's others", () => {
    const obj = v2({
      hostnames: ["shop.example.com", "shop.example.com"],
      rules: [rule({ timeout: "2h" })],
      tls: { secretName: "Shop", hostnames: ["shop.example.com", "cart.example.com", "shop.example.com"] },
    });
    expect(messages(obj, "v2")).toEqual([
      'spec.hostnames[1]: Duplicate value: "shop.example.com": same as spec.hostnames[0]',
      'spec.rules[0].timeout: Invalid value: "2h": must be at most 1h',
      `spec.tls.hostnames[1]: Invalid value: "cart.example.com": must be one of spec.hostnames`,
      'spec.tls.hostnames[2]: Duplicate value: "shop.example.com": same as spec.tls.hostnames[0]',
      `spec.tls.secretName: Invalid value: "Shop": a DNS-1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'shop-tls')`,
    ]);
  });

  it("orders rules[10] after rules[2]", () => {
    const rules = Array.from({ length: 11 }, (_, i) =>
      rule({ matches: [{ path: { value: `/r${i}` } }], timeout: i === 2 || i === 10 ? "x" : undefined }),
    );
    expect(validateRoute(v2({ rules }), "v2").map((e) => e.path)).toEqual([
      "spec.rules[2].timeout",
      "spec.rules[10].timeout",
    ]);
  });
});

describe("the string rules", () => {
  it("parses Gateway API durations", () => {
    expect(parseDuration("1h")).toBe(3_600_000);
    expect(parseDuration("1m30s")).toBe(90_000);
    expect(parseDuration("500ms")).toBe(500);
    expect(parseDuration("1h0m0s1ms")).toBe(3_600_001);
    expect(parseDuration("1d")).toBeUndefined();
    expect(parseDuration("-1s")).toBeUndefined();
    expect(parseDuration("123456s")).toBeUndefined();
  });

  it("never throws, and gives a reason for anything it refuses", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 300 }), (s) => {
        const host = hostnameProblems(s);
        const path = pathProblems(s);
        expect(host.every((p) => p.length > 0)).toBe(true);
        expect(path.every((p) => p.length > 0)).toBe(true);
      }),
    );
  });

  it("accepts every path built from clean segments", () => {
    const segment = fc.stringMatching(/^[a-zA-Z0-9._~-]{1,10}$/).filter((s) => s !== "." && s !== "..");
    fc.assert(
      fc.property(fc.array(segment, { maxLength: 8 }), fc.boolean(), (segs, slash) => {
        expect(pathProblems(`/${segs.join("/")}${slash && segs.length > 0 ? "/" : ""}`)).toEqual([]);
      }),
    );
  });

  it("accepts every DNS-1123 subdomain, with and without a wildcard", () => {
    const label = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?$/);
    fc.assert(
      fc.property(fc.array(label, { minLength: 1, maxLength: 6 }), fc.boolean(), (labels, wild) => {
        const host = `${wild ? "*." : ""}${labels.join(".")}`;
        expect(hostnameProblems(host)).toEqual([]);
        expect(hostnameProblems(host.toUpperCase()).length > 0 || host === host.toUpperCase()).toBe(true);
      }),
    );
  });

  it("takes a Secret name exactly when it is a DNS-1123 subdomain of at most 253 characters", () => {
    const label = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?$/);
    fc.assert(
      fc.property(fc.array(label, { minLength: 1, maxLength: 6 }), (labels) => {
        expect(secretNameProblems(labels.join("."))).toEqual([]);
      }),
    );
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 300 }), (s) => {
        const ok =
          /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(s) && s.length <= 253;
        expect(secretNameProblems(s).length === 0).toBe(ok);
      }),
    );
  });

  it("never throws on any value in any field", () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.constantFrom("v1" as const, "v2" as const), (spec, version) => {
        const errors = validateRoute({ spec }, version);
        const keys = errors.map((e) => `${e.path}|${e.type}|${e.detail}`);
        expect(new Set(keys).size).toBe(keys.length);
      }),
    );
  });
});
