import { describe, expect, it } from "vitest";
import { referencedServices } from "./referenced-services.js";

const route = (namespace: string, name: string, backends: string[][]) => ({
  metadata: { namespace, name },
  spec: {
    rules: backends.map((names) => ({
      matches: [{ path: { value: "/" } }],
      backends: names.map((n) => ({ name: n, port: 80 })),
    })),
  },
});

describe("referencedServices", () => {
  it("takes every backend of every rule, once, sorted", () => {
    expect(
      referencedServices(
        route("shop", "r1", [
          ["checkout", "canary"],
          ["checkout", "api"],
        ]),
      ),
    ).toEqual(["api", "canary", "checkout"]);
  });

  it("takes a RequestMirror's Service too: a Service event must re-check the routes that mirror to it", () => {
    const r = route("shop", "r1", [["checkout"]]);
    const rule = {
      ...r.spec.rules[0],
      filters: [
        { type: "RequestMirror", requestMirror: { backend: { name: "shadow", port: 80 } } },
        { type: "RequestMirror", requestMirror: { backend: { name: 5 } } },
      ],
    };
    expect(referencedServices({ ...r, spec: { rules: [rule] } })).toEqual(["checkout", "shadow"]);
  });

  it("reads a v1-shaped spec's service", () => {
    expect(referencedServices({ metadata: { namespace: "a", name: "r" }, spec: { service: "web" } })).toEqual(
      ["web"],
    );
  });

  it("gives nothing for malformed objects rather than throwing", () => {
    for (const bad of [
      {},
      { metadata: { namespace: "a" } },
      { metadata: { namespace: "a" }, spec: null },
      { metadata: { namespace: "a" }, spec: { rules: "x" } },
      { metadata: { namespace: "a" }, spec: { rules: [null, { backends: [1, { name: 2 }, {}] }] } },
    ]) {
      expect(referencedServices(bad)).toEqual([]);
    }
  });
});
