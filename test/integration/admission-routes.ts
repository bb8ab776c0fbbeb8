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
];
