import { describe, expect, it } from "vitest";
import { FINALIZER } from "../api/types.js";
import { cleanWarning, parseReview, reviewReply } from "../server/admission-review.js";
import type { AdmissionRequest } from "./review.js";
import { invalidMessage, mutateReview, validateReview } from "./admission.js";
import { validateRoute } from "../rules/validate.js";
import { silentLogger } from "../observability/logger.js";
import { ConflictIndex } from "./conflicts.js";

const route = (spec: Record<string, unknown>, metadata: Record<string, unknown> = {}) => ({
  apiVersion: "net.10xdev.io/v2",
  kind: "EdgeRoute",
  metadata: { name: "shop", namespace: "default", ...metadata },
  spec: {
    rules: [{ matches: [{ path: { value: "/api" } }], backends: [{ name: "checkout", port: 8080 }] }],
    ...spec,
  },
});
const invalidSpec = {
  rules: [{ matches: [{ path: { value: "/a//b" } }], backends: [{ name: "checkout", port: 70000 }] }],
};

const review = (request: Record<string, unknown>, apiVersion = "admission.k8s.io/v1") => ({
  apiVersion,
  kind: "AdmissionReview",
  request: {
    uid: "705ab4f5-6393-11e8-b7cc-42010a800002",
    kind: { group: "net.10xdev.io", version: "v2", kind: "EdgeRoute" },
    resource: { group: "net.10xdev.io", version: "v2", resource: "edgeroutes" },
    operation: "CREATE",
    name: "shop",
    namespace: "default",
    ...request,
  },
});

function parsed(body: unknown): AdmissionRequest {
  const p = parseReview(body);
  if (!p.ok) throw new Error(`not parsed: ${JSON.stringify(p.reply)}`);
  return p.review.request;
}

describe("parseReview", () => {
  it.each([
    ["not an object", [], "expected an AdmissionReview object, got an array"],
    ["another kind", { kind: "ConversionReview" }, 'expected kind AdmissionReview, got "ConversionReview"'],
    [
      "an unknown version",
      { kind: "AdmissionReview", apiVersion: "admission.k8s.io/v2" },
      'unsupported AdmissionReview apiVersion "admission.k8s.io/v2"; this webhook speaks admission.k8s.io/v1',
    ],
    [
      "no request",
      { kind: "AdmissionReview", apiVersion: "admission.k8s.io/v1" },
      "AdmissionReview.request is missing",
    ],
    ["no uid", review({ uid: undefined }), "AdmissionReview.request.uid is missing"],
    ["an empty uid", review({ uid: "" }), 'AdmissionReview.request.uid is ""'],
    ["a numeric uid", review({ uid: 7 }), "AdmissionReview.request.uid is a number"],
  ])("answers %s with a 400 Status", (_name, body, message) => {
    const p = parseReview(body);
    expect(p.ok).toBe(false);
    if (p.ok) return;
    expect(p.reply).toEqual({
      status: 400,
      body: { kind: "Status", apiVersion: "v1", status: "Failure", code: 400, reason: "BadRequest", message },
    });
  });

  it.each([
    [
      "another resource",
      review({ resource: { group: "", version: "v1", resource: "pods" } }),
      "this webhook admits edgeroutes.net.10xdev.io only, not pods",
    ],
    [
      "an unknown operation",
      review({ operation: "PATCH" }),
      'request.operation is "PATCH"; expected one of CREATE, UPDATE, DELETE, CONNECT',
    ],
  ])("denies %s once a uid is known", (_name, body, message) => {
    const p = parseReview(body);
    expect(p.ok).toBe(false);
    if (p.ok) return;
    expect(p.reply).toEqual({
      status: 200,
      body: {
        apiVersion: "admission.k8s.io/v1",
        kind: "AdmissionReview",
        response: {
          uid: "705ab4f5-6393-11e8-b7cc-42010a800002",
          allowed: false,
          status: { status: "Failure", code: 400, reason: "BadRequest", message },
        },
      },
    });
  });
});

describe("reviewReply", () => {
  it("answers the version asked, with a base64 JSON Patch", () => {
    const reply = reviewReply("admission.k8s.io/v1beta1", "u1", {
      allowed: true,
      patch: [{ op: "add", path: "/a", value: 1 }],
    });
    expect(reply).toEqual({
      status: 200,
      body: {
        apiVersion: "admission.k8s.io/v1beta1",
        kind: "AdmissionReview",
        response: {
          uid: "u1",
          allowed: true,
          patchType: "JSONPatch",
          patch: Buffer.from('[{"op":"add","path":"/a","value":1}]').toString("base64"),
        },
      },
    });
  });

  it("keeps each warning under 120 printable characters", () => {
    expect(cleanWarning("x".repeat(500))).toHaveLength(119);
    expect(cleanWarning("é\nok")).toBe("??ok");
    const reply = reviewReply("admission.k8s.io/v1", "u", { allowed: true, warnings: ["a".repeat(200)] });
    const body = reply.body as { response: { warnings: string[] } };
    expect(body.response.warnings[0]?.length).toBeLessThan(120);
  });
});

describe("validateReview", () => {
  it("allows a valid route in either version", async () => {
    expect(await validateReview(parsed(review({ object: route({}) })))).toEqual({ allowed: true });
    const v1 = {
      apiVersion: "net.10xdev.io/v1",
      kind: "EdgeRoute",
      metadata: { name: "a" },
      spec: { pathPrefix: "/", service: "a", port: 1 },
    };
    expect(
      await validateReview(
        parsed(review({ object: v1, kind: { group: "net.10xdev.io", version: "v1", kind: "EdgeRoute" } })),
      ),
    ).toEqual({
      allowed: true,
    });
  });

  it("denies an invalid route with every field error, worded like the apiserver", async () => {
    const verdict = await validateReview(parsed(review({ object: route(invalidSpec) })));
    expect(verdict).toEqual({
      allowed: false,
      status: {
        code: 422,
        reason: "Invalid",
        message:
          `EdgeRoute.net.10xdev.io "shop" is invalid: [spec.rules[0].backends[0].port: Invalid value: 70000: must be between 1 and 65535, ` +
          `spec.rules[0].matches[0].path.value: Invalid value: "/a//b": must not contain '//']`,
      },
    });
  });

  it("words a single error without brackets", () => {
    const errors = validateRoute(
      route({ rules: [{ matches: [{ path: { value: "/a" } }], backends: [{ name: "B", port: 1 }] }] }),
      "v2",
    );
    expect(invalidMessage("x", errors)).toMatch(
      /^EdgeRoute\.net\.10xdev\.io "x" is invalid: spec\.rules\[0\]\.backends\[0\]\.name: Invalid value: "B": /,
    );
  });

  it("judges the object by its own apiVersion, else by the request's kind", async () => {
    const v1spec = { pathPrefix: "/", service: "a", port: 1 };
    const noVersion = { metadata: { name: "a" }, spec: v1spec };
    const asV1 = await validateReview(
      parsed(
        review({ object: noVersion, kind: { group: "net.10xdev.io", version: "v1", kind: "EdgeRoute" } }),
      ),
    );
    expect(asV1.allowed).toBe(true);
    const asV2 = await validateReview(parsed(review({ object: noVersion })));
    expect(asV2.allowed).toBe(false);
    const other = await validateReview(
      parsed(review({ object: { ...noVersion, apiVersion: "net.10xdev.io/v9" } })),
    );
    expect(other).toMatchObject({
      allowed: false,
      status: {
        code: 400,
        message:
          'request.object.apiVersion must be net.10xdev.io/v1 or net.10xdev.io/v2, got "net.10xdev.io/v9"',
      },
    });
  });

  it("always allows a metadata-only UPDATE of a terminating route, whatever its spec", async () => {
    const old = route(invalidSpec, { deletionTimestamp: "2026-01-01T00:00:00Z", finalizers: [FINALIZER] });
    const next = route(invalidSpec, {
      deletionTimestamp: "2026-01-01T00:00:00Z",
      finalizers: [],
      labels: { a: "b" },
    });
    expect(
      await validateReview(parsed(review({ operation: "UPDATE", object: next, oldObject: old }))),
    ).toEqual({ allowed: true });
  });

  it("still judges a spec change on a terminating route, and any change on a live one", async () => {
    const old = route(invalidSpec, { deletionTimestamp: "2026-01-01T00:00:00Z" });
    const specChanged = route(
      { ...invalidSpec, hostnames: ["a.example.com"] },
      { deletionTimestamp: "2026-01-01T00:00:00Z" },
    );
    expect(
      (await validateReview(parsed(review({ operation: "UPDATE", object: specChanged, oldObject: old }))))
        .allowed,
    ).toBe(false);
    const live = route(invalidSpec);
    expect(
      (
        await validateReview(
          parsed(
            review({
              operation: "UPDATE",
              object: route(invalidSpec, { labels: { a: "b" } }),
              oldObject: live,
            }),
          ),
        )
      ).allowed,
    ).toBe(false);
  });

  it("allows DELETE, and status writes, without judging", async () => {
    expect(
      await validateReview(
        parsed(review({ operation: "DELETE", object: null, oldObject: route(invalidSpec) })),
      ),
    ).toEqual({ allowed: true });
    expect(
      await validateReview(
        parsed(review({ operation: "UPDATE", subResource: "status", object: route(invalidSpec) })),
      ),
    ).toEqual({ allowed: true });
  });

  it("denies a CREATE without an object", async () => {
    expect(await validateReview(parsed(review({})))).toMatchObject({
      allowed: false,
      status: { code: 400, message: "request.object must be an EdgeRoute object for CREATE" },
    });
    expect(mutateReview(parsed(review({ object: "x" })))).toMatchObject({
      allowed: false,
      status: { code: 400 },
    });
  });
});

describe("validateReview: the v2 spec a v1 object carries", () => {
  const v1 = (annotation: string) => ({
    apiVersion: "net.10xdev.io/v1",
    kind: "EdgeRoute",
    metadata: { name: "shop", namespace: "default", annotations: { "net.10xdev.io/v2-spec": annotation } },
    spec: { pathPrefix: "/api", service: "checkout", port: 8080 },
  });
  const asV1 = { kind: { group: "net.10xdev.io", version: "v1", kind: "EdgeRoute" } };

  it("refuses an annotation that is not JSON, naming the annotation", async () => {
    const verdict = await validateReview(parsed(review({ ...asV1, object: v1("{not json") })));
    expect(verdict.allowed).toBe(false);
    expect(JSON.stringify(verdict)).toContain("net.10xdev.io/v2-spec");
  });

  it("refuses an annotated v2 spec that would not validate, with the field under the annotation", async () => {
    const spec = {
      rules: [
        { matches: [{ path: { value: "/api" } }], backends: [{ name: "checkout", port: 8080 }] },
        { matches: [{ path: { value: "/b" } }], backends: [{ name: "checkout", port: 70000 }] },
      ],
    };
    const verdict = await validateReview(parsed(review({ ...asV1, object: v1(JSON.stringify(spec)) })));
    expect(verdict.allowed).toBe(false);
    expect(JSON.stringify(verdict)).toContain(
      "metadata.annotations[net.10xdev.io/v2-spec].rules[1].backends[0].port",
    );
  });

  it("admits a v1 object whose annotation is a valid v2 spec", async () => {
    const spec = {
      rules: [
        {
          matches: [{ path: { type: "PathPrefix", value: "/api" } }],
          backends: [{ name: "checkout", port: 8080, weight: 1 }],
        },
        {
          matches: [{ path: { type: "Exact", value: "/b" } }],
          backends: [{ name: "other", port: 80, weight: 1 }],
        },
      ],
    };
    const verdict = await validateReview(parsed(review({ ...asV1, object: v1(JSON.stringify(spec)) })));
    expect(verdict).toEqual({ allowed: true });
  });
});

describe("validateReview: TLS", () => {
  const hostnames = ["shop.example.com"];
  const tlsRoute = (tls: Record<string, unknown>) => route({ hostnames, tls });
  const missing =
    "Secret default/shop-tls not found: the route reports ResolvedRefs=False/SecretNotFound until it exists";
  const asked: [string, string][] = [];
  const lookup =
    (answer: boolean | undefined) =>
    (namespace: string, name: string): boolean | undefined => {
      asked.push([namespace, name]);
      return answer;
    };

  it("warns, and admits, a route whose Secret does not exist yet, naming it", async () => {
    asked.length = 0;
    const verdict = await validateReview(
      parsed(review({ object: tlsRoute({ secretName: "shop-tls" }) })),
      undefined,
      {
        tlsSecretExists: lookup(false),
      },
    );
    expect(verdict).toEqual({ allowed: true, warnings: [missing] });
    expect(asked).toEqual([["default", "shop-tls"]]);
    // The whole warning survives the reply's length limit.
    expect(cleanWarning(missing)).toBe(missing);
  });

  it("says nothing when the Secret exists, or while that is not known yet, or without a lookup", async () => {
    const object = tlsRoute({ secretName: "shop-tls" });
    for (const answer of [true, undefined]) {
      expect(
        await validateReview(parsed(review({ object })), undefined, { tlsSecretExists: lookup(answer) }),
      ).toEqual({ allowed: true });
    }
    expect(await validateReview(parsed(review({ object })))).toEqual({ allowed: true });
  });

  it("asks nothing about a route without TLS", async () => {
    asked.length = 0;
    expect(
      await validateReview(parsed(review({ object: route({ hostnames }) })), undefined, {
        tlsSecretExists: lookup(false),
      }),
    ).toEqual({ allowed: true });
    expect(asked).toEqual([]);
  });

  it("refuses a route whose TLS can never work with every error, and no warning", async () => {
    const verdict = await validateReview(
      parsed(review({ object: route({ tls: { secretName: "Shop_TLS", hostnames: ["shop.example.com"] } }) })),
      undefined,
      { tlsSecretExists: lookup(false) },
    );
    expect(verdict).toEqual({
      allowed: false,
      status: {
        code: 422,
        reason: "Invalid",
        message:
          `EdgeRoute.net.10xdev.io "shop" is invalid: [spec.tls: Forbidden: needs spec.hostnames: a route for any host (no hostnames) cannot have TLS, ` +
          `spec.tls.secretName: Invalid value: "Shop_TLS": a DNS-1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'shop-tls')]`,
      },
    });
  });

  const asV1 = { kind: { group: "net.10xdev.io", version: "v1", kind: "EdgeRoute" } };
  const v1WithTls = (host: string | undefined) => ({
    apiVersion: "net.10xdev.io/v1",
    kind: "EdgeRoute",
    metadata: {
      name: "shop",
      namespace: "default",
      annotations: {
        "net.10xdev.io/v2-spec": JSON.stringify({
          hostnames,
          rules: [
            {
              matches: [{ path: { type: "PathPrefix", value: "/api" } }],
              backends: [{ name: "checkout", port: 8080, weight: 1 }],
            },
          ],
          tls: { secretName: "shop-tls" },
        }),
      },
    },
    spec: { ...(host !== undefined ? { host } : {}), pathPrefix: "/api", service: "checkout", port: 8080 },
  });

  it("warns about the Secret of a v1 object's annotated TLS too", async () => {
    expect(
      await validateReview(parsed(review({ ...asV1, object: v1WithTls("shop.example.com") })), undefined, {
        tlsSecretExists: lookup(false),
      }),
    ).toEqual({ allowed: true, warnings: [missing] });
  });

  it("refuses a v1 edit that moves the host away from the one tls.hostnames names", async () => {
    const object = v1WithTls("cart.example.com");
    const annotations = object.metadata.annotations;
    const spec = JSON.parse(annotations["net.10xdev.io/v2-spec"]) as Record<string, unknown>;
    annotations["net.10xdev.io/v2-spec"] = JSON.stringify({
      ...spec,
      tls: { secretName: "shop-tls", hostnames },
    });
    const verdict = await validateReview(parsed(review({ ...asV1, object })));
    expect(verdict).toMatchObject({
      allowed: false,
      status: {
        message:
          'EdgeRoute.net.10xdev.io "shop" is invalid: metadata.annotations[net.10xdev.io/v2-spec].tls.hostnames[0]: Invalid value: "shop.example.com": must be one of spec.hostnames',
      },
    });
  });

  it("refuses a v1 edit that takes the host off a TLS route, naming the annotated field", async () => {
    const verdict = await validateReview(parsed(review({ ...asV1, object: v1WithTls(undefined) })));
    expect(verdict).toMatchObject({
      allowed: false,
      status: {
        message:
          'EdgeRoute.net.10xdev.io "shop" is invalid: metadata.annotations[net.10xdev.io/v2-spec].tls: Forbidden: needs spec.hostnames: a route for any host (no hostnames) cannot have TLS',
      },
    });
  });
});

describe("what a proxy receives stays within a gRPC client's 4 MiB", () => {
  // Fifteen 4,000-character header values: about 61 KB a match as a proxy receives it.
  const heavy = (paths: string[], hostnames = ["big.example.com"]) => ({
    hostnames,
    rules: [
      {
        matches: paths.map((value) => ({ path: { type: "Exact", value } })),
        filters: [
          {
            type: "RequestHeaderModifier",
            requestHeaderModifier: {
              set: Array.from({ length: 15 }, (_, h) => ({ name: `x-h${h}`, value: "v".repeat(4000) })),
            },
          },
        ],
        backends: [{ name: "checkout", port: 8080 }],
      },
    ],
  });

  it("refuses a route over its own limit, with its size", async () => {
    const verdict = await validateReview(parsed(review({ object: route(heavy(["/a", "/b"])) })));
    expect(verdict).toMatchObject({ allowed: false, status: { code: 422, reason: "Invalid" } });
    expect(verdict.allowed ? "" : verdict.status.message).toMatch(
      /is invalid: spec: Too long: the route is \d+ bytes as a proxy receives it, more than the 65536 one route may be/,
    );
    // One match of the same weight fits.
    expect(await validateReview(parsed(review({ object: route(heavy(["/a"])) })))).toEqual({ allowed: true });
  });

  it("refuses a route that would fill its host past the host's budget, naming no other route", async () => {
    const index = new ConflictIndex(undefined, { log: silentLogger() });
    for (let i = 0; i < 20; i++)
      index.apply("ADDED", {
        ...route(heavy([`/p${i}`])),
        metadata: { name: `tenant-a-${i}`, namespace: "tenant-a", creationTimestamp: "2026-01-01T00:00:00Z" },
      });
    const newer = route(heavy(["/mine"]));
    const verdict = await validateReview(parsed(review({ object: newer })), index);
    expect(verdict.allowed ? "" : verdict.status.message).toMatch(
      /spec\.hostnames: Forbidden: host big\.example\.com is full: with this route its routes would be \d+ bytes/,
    );
    expect(verdict.allowed ? "" : verdict.status.message).not.toContain("tenant-a");
    // Another host has room.
    expect(
      await validateReview(parsed(review({ object: route(heavy(["/mine"], ["small.example.com"])) })), index),
    ).toEqual({ allowed: true });
  });
});
