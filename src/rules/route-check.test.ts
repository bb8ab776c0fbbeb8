import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { formatFieldError } from "../api/field-error.js";
import type { EdgeRoute, EdgeRouteV2 } from "../api/types.js";
import { convert } from "../conversion/convert.js";
import { roughRouteV2 as routeArb, routeV2 } from "../../test/fixtures/route-arbitraries.js";
import { invalid } from "../../test/integration/admission-routes.js";
import { checkRoute, routeProblems } from "./route-check.js";
import { validateRoute } from "./validate.js";
import { buildSnapshot } from "../translate/snapshot.js";

const services = new Map([
  ["admission/checkout", { ports: [{ port: 8080, addresses: [] }] }],
  ["admission/b", { ports: [{ port: 8080, addresses: [] }] }],
  ["ns/svc", { ports: [{ port: 80, addresses: [] }] }],
]);

/** A case of the admission table as the snapshot's cache holds it: v2, stored without the webhook. */
function stored(obj: unknown): EdgeRouteV2 | undefined {
  const route = obj as EdgeRoute;
  if (route.apiVersion.endsWith("/v2")) return route as EdgeRouteV2;
  const res = convert(route, "net.10xdev.io/v2");
  return res.ok ? (res.object as EdgeRouteV2) : undefined;
}

describe("the snapshot's guard", () => {
  // The admission suites' table holds a case for every rule admission has
  // (test/integration/admission.test.ts applies each through kubectl); the
  // guard must refuse each one, so a rule added to admission without a guard
  // case cannot exist: the guard runs admission's rules.
  it.each(invalid)(
    "refuses $name as admission does, stored past admission ($by)",
    ({ obj, expect: words }) => {
      const route = stored(obj);
      // A v1 object the conversion refuses never reaches the cache as a route.
      if (route === undefined) return;
      // The guard as a build applies it: the rule set (checkRoute), then what
      // only the translation can weigh (a route's size as a proxy receives it).
      const [outcome] = buildSnapshot([route], services).outcomes;
      expect(outcome).toMatchObject({ accepted: false, reason: "Invalid" });
      const message = outcome?.accepted === false ? outcome.message : "";
      const rules = validateRoute(route, "v2");
      expect(checkRoute(route, services).ok).toBe(rules.length === 0);
      if (route !== obj) return;
      // Admission's own words, and the field paths the apiserver names.
      if (rules.length > 0) expect(message).toBe(rules.map(formatFieldError).join("; "));
      for (const w of words.filter((w) => /^spec[\w.[\]]*$/.test(w) || w.startsWith("spec: ")))
        expect(message).toContain(w);
    },
  );

  it("converts and guards enough of the table to mean something", () => {
    const guarded = invalid.filter((c) => stored(c.obj) !== undefined);
    expect(guarded.filter((c) => c.by === "webhook").length).toBeGreaterThan(20);
  });

  it("refuses exactly what admission refuses, on every generated route", () => {
    let refused = 0;
    fc.assert(
      fc.property(fc.oneof(routeArb, routeV2), (route) => {
        const admission = validateRoute(route, "v2");
        const guard = routeProblems(route).filter((e) => e.path.startsWith("spec"));
        expect(guard).toEqual(admission);
        if (admission.length > 0) refused++;
      }),
      { numRuns: 3000 },
    );
    expect(refused).toBeGreaterThan(300);
    expect(refused).toBeLessThan(2700);
  });

  it("a header value with CR LF, stored past admission, is Invalid with its path", () => {
    const route = {
      apiVersion: "net.10xdev.io/v2",
      kind: "EdgeRoute",
      metadata: { namespace: "ns", name: "r" },
      spec: {
        hostnames: ["a.example.com"],
        rules: [
          {
            matches: [{ path: { type: "PathPrefix", value: "/" } }],
            filters: [
              {
                type: "ResponseHeaderModifier",
                responseHeaderModifier: { set: [{ name: "x-a", value: "a\r\nb" }] },
              },
            ],
            backends: [{ name: "svc", port: 80 }],
          },
        ],
      },
    } as unknown as EdgeRouteV2;
    const check = checkRoute(route, services);
    expect(check).toMatchObject({ ok: false, reason: "Invalid" });
    expect(check.ok ? "" : check.message).toContain(
      "spec.rules[0].filters[0].responseHeaderModifier.set[0].value: Invalid value",
    );
  });

  it("never throws, and a refusal names field paths", () => {
    fc.assert(
      fc.property(routeArb, (route) => {
        const check = checkRoute(route, services);
        if (!check.ok && check.reason === "Invalid") expect(check.message).toMatch(/^(metadata|spec)\b/);
      }),
      { numRuns: 2000 },
    );
  });
});
