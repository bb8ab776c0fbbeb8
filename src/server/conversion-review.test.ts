import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { V2_SPEC_ANNOTATION, type EdgeRoute } from "../api/types.js";
import { toV1 } from "../conversion/convert.js";
import {
  conversionHandler,
  handleConversionReview,
  type ConversionReviewResponse,
} from "./conversion-review.js";
import { routeV1, routeV2 } from "../../test/fixtures/route-arbitraries.js";
import { serverDeps } from "../../test/fixtures/server-deps.js";

function review(objects: unknown[], desiredAPIVersion = "net.10xdev.io/v2", uid = "0f3c-uid"): unknown {
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "ConversionReview",
    request: { uid, desiredAPIVersion, objects },
  };
}

function answer(body: unknown): ConversionReviewResponse["response"] {
  const reply = handleConversionReview(body);
  expect(reply.status).toBe(200);
  const r = reply.body as ConversionReviewResponse;
  expect(r.apiVersion).toBe("apiextensions.k8s.io/v1");
  expect(r.kind).toBe("ConversionReview");
  return r.response;
}

const mixed = fc.sample(fc.oneof(routeV1, routeV2), { numRuns: 200, seed: 7 });

describe("ConversionReview", () => {
  it.each(["net.10xdev.io/v1", "net.10xdev.io/v2"])(
    "to %s: same uid, same count and order, every object at the desired version, metadata untouched but annotations",
    (desired) => {
      const res = answer(review(mixed, desired));
      expect(res.uid).toBe("0f3c-uid");
      expect(res.result).toStrictEqual({ status: "Success" });
      expect(res.convertedObjects).toHaveLength(mixed.length);
      res.convertedObjects.forEach((out, i) => {
        const o = out as EdgeRoute;
        const input = mixed[i] as EdgeRoute;
        expect(o.apiVersion).toBe(desired);
        expect(o.kind).toBe("EdgeRoute");
        const { annotations: _a, ...metaOut } = o.metadata;
        const { annotations: _b, ...metaIn } = input.metadata;
        expect(metaOut).toStrictEqual(metaIn);
        expect(o.status).toBe(input.status);
        if (input.apiVersion === desired) expect(o).toBe(input);
        if (desired.endsWith("/v2")) expect(o.metadata.annotations?.[V2_SPEC_ANNOTATION]).toBeUndefined();
      });
    },
  );

  it("an empty review is answered with an empty list", () => {
    expect(answer(review([])).convertedObjects).toStrictEqual([]);
  });

  it("an object that cannot be converted fails the review, naming the object and every field", () => {
    const good = mixed[0];
    const broken = {
      apiVersion: "net.10xdev.io/v1",
      kind: "EdgeRoute",
      metadata: { name: "shop", namespace: "team-a", annotations: { [V2_SPEC_ANNOTATION]: "{not json" } },
      spec: { pathPrefix: "/", service: "web", port: 80 },
    };
    const noSpec = {
      apiVersion: "net.10xdev.io/v2",
      kind: "EdgeRoute",
      metadata: { name: "bare", namespace: "team-b" },
    };
    const res = answer(review([good, broken, noSpec, 42], "net.10xdev.io/v2"));
    expect(res.uid).toBe("0f3c-uid");
    expect(res.result.status).toBe("Failed");
    const message = "message" in res.result ? res.result.message : "";
    expect(message).toMatch(/^cannot convert 2 of 4 objects to "net\.10xdev\.io\/v2"/);
    expect(message).toContain(
      "EdgeRoute team-a/shop (request.objects[1]): metadata.annotations[net.10xdev.io/v2-spec]: Invalid value",
    );
    // The v2 object is already at v2: unchanged, so not an error.
    expect(message).not.toContain("team-b/bare");
    expect(message).toContain("EdgeRoute (request.objects[3]): Invalid value: 42: must be an object");
  });

  it("a v2 object without a spec cannot be shown as v1", () => {
    const res = answer(
      review(
        [
          {
            apiVersion: "net.10xdev.io/v2",
            kind: "EdgeRoute",
            metadata: { name: "bare", namespace: "team-b" },
          },
        ],
        "net.10xdev.io/v1",
      ),
    );
    expect("message" in res.result && res.result.message).toContain(
      "EdgeRoute team-b/bare (request.objects[0]): spec: Required value",
    );
  });

  it("an unknown desired version fails, naming the field and the objects", () => {
    const res = answer(review(mixed.slice(0, 2), "net.10xdev.io/v3"));
    expect(res.result.status).toBe("Failed");
    const message = "message" in res.result ? res.result.message : "";
    expect(message).toContain('request.desiredAPIVersion: Unsupported value: "net.10xdev.io/v3"');
    expect(message).toContain(`${mixed[0]?.metadata.namespace}/${mixed[0]?.metadata.name}`);
  });

  it("an object of another kind or group fails", () => {
    const other = { apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "x", namespace: "y" } };
    expect(answer(review([other])).result.status).toBe("Failed");
    const wrongGroup = {
      ...toV1(mixed.find((o) => o.apiVersion === "net.10xdev.io/v2") as never),
      apiVersion: "other.io/v1",
    };
    const res = answer(review([wrongGroup]));
    expect("message" in res.result && res.result.message).toContain(
      'apiVersion: Unsupported value: "other.io/v1"',
    );
  });

  it.each([
    ["not an object", [1, 2]],
    ["another kind", { apiVersion: "apiextensions.k8s.io/v1", kind: "AdmissionReview", request: {} }],
    [
      "v1beta1",
      {
        apiVersion: "apiextensions.k8s.io/v1beta1",
        kind: "ConversionReview",
        request: { uid: "a", desiredAPIVersion: "x", objects: [] },
      },
    ],
    ["no request", { apiVersion: "apiextensions.k8s.io/v1", kind: "ConversionReview" }],
    [
      "no uid",
      {
        apiVersion: "apiextensions.k8s.io/v1",
        kind: "ConversionReview",
        request: { desiredAPIVersion: "x", objects: [] },
      },
    ],
    [
      "objects not a list",
      {
        apiVersion: "apiextensions.k8s.io/v1",
        kind: "ConversionReview",
        request: { uid: "a", desiredAPIVersion: "x", objects: {} },
      },
    ],
  ])("a body that is not a ConversionReview (%s) gets 400 with a JSON reason", (_what, body) => {
    const reply = handleConversionReview(body);
    expect(reply.status).toBe(400);
    expect(reply.body).toMatchObject({ kind: "Status", status: "Failure", code: 400, reason: "BadRequest" });
    expect((reply.body as { message: string }).message).toMatch(/^not a ConversionReview: /);
  });

  it("is served at /convert with the configured limit", () => {
    const route = conversionHandler(64 * 1024 * 1024, serverDeps().metrics);
    expect(route.path).toBe("/convert");
    expect(route.limit).toBe(64 * 1024 * 1024);
  });
});
