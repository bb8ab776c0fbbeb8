import fc from "fast-check";
import jsonPatch from "fast-json-patch";
import { describe, expect, it } from "vitest";
import { FINALIZER } from "../api/types.js";
import { mutateReview } from "./admission.js";
import type { AdmissionRequest } from "./review.js";
import { mutateRoute } from "./mutate.js";

const { applyPatch, deepClone } = jsonPatch;

const v2 = (metadata: Record<string, unknown> = {}, spec?: unknown) => ({
  apiVersion: "net.10xdev.io/v2",
  kind: "EdgeRoute",
  metadata: { name: "r", namespace: "default", ...metadata },
  spec: spec ?? {
    hostnames: ["a.example.com"],
    rules: [
      {
        matches: [{ path: { value: "/a" } }, { path: { type: "Exact", value: "/b" } }],
        backends: [
          { name: "a", port: 80 },
          { name: "b", port: 80, weight: 0 },
        ],
      },
    ],
  },
});

const v1 = (metadata: Record<string, unknown> = {}) => ({
  apiVersion: "net.10xdev.io/v1",
  kind: "EdgeRoute",
  metadata: { name: "r", namespace: "default", ...metadata },
  spec: { pathPrefix: "/a", service: "a", port: 80 },
});

const request = (operation: "CREATE" | "UPDATE", object: unknown): AdmissionRequest => ({
  uid: "u",
  resource: { group: "net.10xdev.io", version: "v2", resource: "edgeroutes" },
  operation,
  object,
});

describe("mutateRoute", () => {
  it("adds the finalizer on CREATE and sets the v2 defaults", () => {
    expect(mutateRoute(v2(), "CREATE")).toEqual(
      v2(
        { finalizers: [FINALIZER] },
        {
          hostnames: ["a.example.com"],
          rules: [
            {
              matches: [
                { path: { type: "PathPrefix", value: "/a" } },
                { path: { type: "Exact", value: "/b" } },
              ],
              backends: [
                { name: "a", port: 80, weight: 1 },
                { name: "b", port: 80, weight: 0 },
              ],
            },
          ],
        },
      ),
    );
  });

  it("sets Gateway API's defaults of the newer fields as the CRD does: Exact header and query matches, a 302 redirect", () => {
    const spec = {
      rules: [
        {
          matches: [
            {
              path: { type: "RegularExpression", value: "/v[0-9]+" },
              headers: [
                { name: "x-a", value: "1" },
                { type: "RegularExpression", name: "x-b", value: "b+" },
              ],
              queryParams: [{ name: "q", value: "1" }],
            },
          ],
          backends: [],
          filters: [
            { type: "RequestRedirect", requestRedirect: { scheme: "https" } },
            { type: "RequestHeaderModifier", requestHeaderModifier: { remove: ["x-c"] } },
          ],
        },
      ],
    };
    const out = mutateRoute(v2({}, spec), "CREATE") as { spec: typeof spec };
    expect(out.spec.rules[0]).toEqual({
      matches: [
        {
          path: { type: "RegularExpression", value: "/v[0-9]+" },
          headers: [
            { name: "x-a", value: "1", type: "Exact" },
            { type: "RegularExpression", name: "x-b", value: "b+" },
          ],
          queryParams: [{ name: "q", value: "1", type: "Exact" }],
        },
      ],
      backends: [],
      filters: [
        { type: "RequestRedirect", requestRedirect: { scheme: "https", statusCode: 302 } },
        { type: "RequestHeaderModifier", requestHeaderModifier: { remove: ["x-c"] } },
      ],
    });
  });

  it("adds the finalizer after the others on UPDATE when it is missing", () => {
    const out = mutateRoute(v1({ finalizers: ["other.io/x"] }), "UPDATE") as {
      metadata: { finalizers: string[] };
      spec: unknown;
    };
    expect(out.metadata.finalizers).toEqual(["other.io/x", FINALIZER]);
    expect(out.spec).toEqual(v1().spec);
  });

  it("leaves a route with the finalizer alone", () => {
    const obj = v1({ finalizers: [FINALIZER, "other.io/x"] });
    expect(mutateRoute(obj, "UPDATE")).toEqual(obj);
  });

  it("never touches a route that is being deleted", () => {
    const obj = v2({ deletionTimestamp: "2026-01-01T00:00:00Z", finalizers: [] });
    expect(mutateRoute(obj, "UPDATE")).toEqual(obj);
    const gone = v2({ deletionTimestamp: "2026-01-01T00:00:00Z" });
    expect(mutateRoute(gone, "CREATE")).toEqual(gone);
  });

  it("does not change its input", () => {
    const obj = v2();
    const copy = deepClone(obj);
    mutateRoute(obj, "CREATE");
    expect(obj).toEqual(copy);
  });

  it("takes malformed objects without throwing, touching only what has the expected shape", () => {
    for (const o of [
      null,
      1,
      "x",
      [],
      {},
      { metadata: [] },
      { metadata: {}, spec: { rules: "x" } },
      v2({}, { rules: [null, { matches: 3 }] }),
    ]) {
      expect(() => mutateRoute(o, "CREATE")).not.toThrow();
    }
    expect(mutateRoute({ metadata: { finalizers: "x" } }, "CREATE")).toEqual({
      metadata: { finalizers: "x" },
    });
  });
});

describe("the /mutate answer", () => {
  it("is a JSON Patch that turns the object into the mutated one", () => {
    const verdict = mutateReview(request("CREATE", v2()));
    expect(verdict.allowed).toBe(true);
    if (!verdict.allowed || !verdict.patch) throw new Error("expected a patch");
    expect(verdict.patch).toContainEqual({ op: "add", path: "/metadata/finalizers", value: [FINALIZER] });
    const patched = applyPatch(
      deepClone(v2()),
      deepClone(verdict.patch) as jsonPatch.Operation[],
    ).newDocument;
    expect(patched).toEqual(mutateRoute(v2(), "CREATE"));
  });

  it("is no patch when nothing changes", () => {
    expect(mutateReview(request("UPDATE", v1({ finalizers: [FINALIZER] })))).toEqual({ allowed: true });
    expect(mutateReview(request("UPDATE", v2({ deletionTimestamp: "2026-01-01T00:00:00Z" })))).toEqual({
      allowed: true,
    });
  });

  // Any JSON in any field, on routes alive or terminating: applying the patch
  // gives mutateRoute's output, and a second call on that output patches nothing.
  it("is idempotent on its own output, over generated objects", () => {
    const meta = fc.record(
      {
        name: fc.string(),
        finalizers: fc.array(fc.constantFrom(FINALIZER, "a.io/x", "b.io/y")),
        deletionTimestamp: fc.constant("2026-01-01T00:00:00Z"),
        labels: fc.dictionary(fc.string(), fc.string()),
      },
      { requiredKeys: [] },
    );
    const backend = fc.record(
      { name: fc.string(), port: fc.integer(), weight: fc.integer() },
      { requiredKeys: ["name"] },
    );
    const match = fc.record({
      path: fc.oneof(
        fc.record(
          { type: fc.constantFrom("Exact", "PathPrefix"), value: fc.string() },
          { requiredKeys: ["value"] },
        ),
        fc.jsonValue(),
      ),
    });
    const spec = fc.oneof(
      fc.record({
        rules: fc.array(
          fc.oneof(fc.record({ matches: fc.array(match), backends: fc.array(backend) }), fc.jsonValue()),
        ),
      }),
      fc.jsonValue(),
    );
    const obj = fc.record({
      apiVersion: fc.constantFrom("net.10xdev.io/v1", "net.10xdev.io/v2", "x/v1"),
      metadata: meta,
      spec,
    });
    fc.assert(
      fc.property(obj, fc.constantFrom("CREATE" as const, "UPDATE" as const), (generated, op) => {
        // What the apiserver sends is JSON: no -0, no undefined.
        const o = JSON.parse(JSON.stringify(generated)) as unknown;
        const verdict = mutateReview(request(op, deepClone(o)));
        if (!verdict.allowed) throw new Error("mutate denied");
        const once = verdict.patch
          ? applyPatch(deepClone(o), deepClone(verdict.patch) as jsonPatch.Operation[]).newDocument
          : o;
        expect(once).toEqual(mutateRoute(o, op));
        expect(mutateReview(request("UPDATE", deepClone(once)))).toEqual({ allowed: true });
      }),
      { numRuns: 500 },
    );
  });
});

describe("mutateRoute: a release on purpose", () => {
  const withFinalizers = (finalizers: string[] | undefined) => ({
    apiVersion: "net.10xdev.io/v1",
    kind: "EdgeRoute",
    metadata: { name: "r", namespace: "default", ...(finalizers ? { finalizers } : {}) },
    spec: { pathPrefix: "/", service: "s", port: 80 },
  });

  it("does not put back a finalizer that the break-glass took off and marked released", () => {
    const released = withFinalizers([]);
    const marked = {
      ...released,
      metadata: { ...released.metadata, annotations: { "net.10xdev.io/finalizer-released": "why" } },
    };
    const out = mutateRoute(marked, "UPDATE", withFinalizers([FINALIZER])) as {
      metadata: { finalizers: string[] };
    };
    expect(out.metadata.finalizers).toEqual([]);
  });

  it("puts back a finalizer that an unmarked UPDATE (a kubectl replace) dropped", () => {
    const out = mutateRoute(withFinalizers([]), "UPDATE", withFinalizers([FINALIZER])) as {
      metadata: { finalizers: string[] };
    };
    expect(out.metadata.finalizers).toEqual([FINALIZER]);
  });

  it("still adds it on an UPDATE of an object that never had it", () => {
    const out = mutateRoute(withFinalizers(undefined), "UPDATE", withFinalizers(undefined)) as {
      metadata: { finalizers: string[] };
    };
    expect(out.metadata.finalizers).toEqual([FINALIZER]);
  });
});
