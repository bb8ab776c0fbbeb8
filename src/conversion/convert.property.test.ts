// The laws of conversion, over generated objects that are valid against the
// schemas the CRD carries (checked here with ajv, so the generators cannot drift
// into objects the apiserver would never send).

import { Ajv } from "ajv";
import formats from "ajv-formats";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { objectSchema } from "../api/schema.js";
import { V2_SPEC_ANNOTATION, type EdgeRouteSpecV1, type EdgeRouteV1 } from "../api/types.js";
import { projectV1, toV1, toV2 } from "./convert.js";
import { shownRuleIndex } from "./object-shape.js";
import { routeV1, routeV2, specV1 } from "../../test/fixtures/route-arbitraries.js";

const ajv = new Ajv({ allErrors: true, strict: false });
formats.default(ajv);
const validV1 = ajv.compile(objectSchema("v1"));
const validV2 = ajv.compile(objectSchema("v2"));

function expectValid(validate: typeof validV1, obj: unknown): void {
  if (!validate(obj)) expect.fail(`not valid: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(obj)}`);
}

const RUNS = { numRuns: 1000 };

describe("conversion laws", () => {
  it("v2 → v1 → v2 gives back the same object; the v1 form is valid; v2 never carries the annotation", () => {
    let withTls = 0;
    fc.assert(
      fc.property(routeV2, (obj) => {
        expectValid(validV2, obj);
        const one = toV1(obj);
        expectValid(validV1, one);
        const back = toV2(one);
        expect(back).toStrictEqual(obj);
        expect(back.metadata.annotations?.[V2_SPEC_ANNOTATION]).toBeUndefined();
        // v1 cannot say TLS: a route with it always carries the whole spec.
        if (obj.spec.tls !== undefined) {
          withTls++;
          expect(one.metadata.annotations?.[V2_SPEC_ANNOTATION]).toBe(JSON.stringify(obj.spec));
        }
      }),
      RUNS,
    );
    expect(withTls).toBeGreaterThan(RUNS.numRuns / 10);
  });

  it("covers every field a rule and a match can have, so the round trips above keep them", () => {
    const seen = new Set<string>();
    for (const { spec } of fc.sample(routeV2, { numRuns: 2000, seed: 26 })) {
      for (const r of spec.rules) {
        if (r.backends.length === 0) seen.add("redirect rule");
        if (r.timeouts?.request !== undefined) seen.add("timeouts.request");
        if (r.timeouts?.backendRequest !== undefined) seen.add("timeouts.backendRequest");
        if (r.retry !== undefined) seen.add("retry");
        for (const f of r.filters ?? []) seen.add(f.type);
        for (const m of r.matches) {
          if (m.method !== undefined) seen.add("method");
          if (m.path.type === "RegularExpression") seen.add("path regex");
          for (const q of m.queryParams ?? []) seen.add(`query ${q.type ?? "Exact"}`);
          for (const h of m.headers ?? []) if (h.type === "RegularExpression") seen.add("header regex");
        }
      }
    }
    expect([...seen].sort()).toEqual(
      [
        "RequestHeaderModifier",
        "ResponseHeaderModifier",
        "RequestRedirect",
        "URLRewrite",
        "RequestMirror",
        "redirect rule",
        "timeouts.request",
        "timeouts.backendRequest",
        "retry",
        "method",
        "path regex",
        "query Exact",
        "query RegularExpression",
        "header regex",
      ].sort(),
    );
  });

  it("generates TLS only as the CRD's CEL rules admit it: with hostnames, for some of them, each once", () => {
    fc.assert(
      fc.property(routeV2, ({ spec }) => {
        if (spec.tls === undefined) return;
        expect(spec.hostnames?.length).toBeGreaterThan(0);
        for (const h of spec.tls.hostnames ?? []) expect(spec.hostnames).toContain(h);
        expect(new Set(spec.tls.hostnames).size).toBe(spec.tls.hostnames?.length ?? 0);
      }),
      RUNS,
    );
  });

  it("v1 → v2 → v1 gives back the same object; the v2 form is valid and carries no annotation", () => {
    fc.assert(
      fc.property(routeV1, (obj) => {
        expectValid(validV1, obj);
        const two = toV2(obj);
        expectValid(validV2, two);
        expect(two.metadata.annotations?.[V2_SPEC_ANNOTATION]).toBeUndefined();
        expect(toV1(two)).toStrictEqual(obj);
      }),
      RUNS,
    );
  });

  it("a v1 object made from v2 (annotation and all) also survives v1 → v2 → v1 unchanged", () => {
    fc.assert(
      fc.property(routeV2, (obj) => {
        const one = toV1(obj);
        expect(toV1(toV2(one))).toStrictEqual(one);
      }),
      RUNS,
    );
  });

  it("a v1 edit reads back as written, keeps what v1 could not see, and then round-trips exactly", () => {
    fc.assert(
      fc.property(routeV2, specV1, (obj, edited: EdgeRouteSpecV1) => {
        const shown = toV1(obj);
        const written: EdgeRouteV1 = { ...shown, spec: edited };
        const two = toV2(written);
        expectValid(validV2, two);
        expect(two.metadata.annotations?.[V2_SPEC_ANNOTATION]).toBeUndefined();
        // What the v1 client wrote is what it reads.
        expect(toV1(two).spec).toStrictEqual(edited);
        expect(projectV1(two.spec)).toStrictEqual(edited);
        // What v1 cannot see is untouched.
        // v1 shows the first rule with a backend (a redirect's rule has none).
        const k = shownRuleIndex(obj.spec.rules);
        const [before, after] = [obj.spec.rules, two.spec.rules];
        expect(after.filter((_, i) => i !== k)).toStrictEqual(before.filter((_, i) => i !== k));
        const [was, now] = [before[k], after[k]];
        expect(now?.matches.slice(1)).toStrictEqual(was?.matches.slice(1));
        expect(now?.matches[0]?.headers).toStrictEqual(was?.matches[0]?.headers);
        expect(now?.matches[0]?.queryParams).toStrictEqual(was?.matches[0]?.queryParams);
        expect(now?.matches[0]?.method).toStrictEqual(was?.matches[0]?.method);
        expect(now?.backends.slice(1)).toStrictEqual(was?.backends.slice(1));
        expect(now?.backends[0]?.weight).toStrictEqual(was?.backends[0]?.weight);
        expect(now?.filters).toStrictEqual(was?.filters);
        expect(now?.retry).toStrictEqual(was?.retry);
        expect(now?.timeouts?.backendRequest).toStrictEqual(was?.timeouts?.backendRequest);
        expect(two.spec.tls).toStrictEqual(obj.spec.tls);
        if (edited.host !== undefined) {
          expect(two.spec.hostnames?.slice(1)).toStrictEqual(
            (obj.spec.hostnames ?? []).slice(1).filter((h) => h !== edited.host),
          );
        }
        // No edit at all gives back the original.
        if (JSON.stringify(edited) === JSON.stringify(shown.spec)) expect(two).toStrictEqual(obj);
        // The edited object is an ordinary object again: both round trips hold for it.
        expect(toV2(toV1(two))).toStrictEqual(two);
      }),
      RUNS,
    );
  });
});
