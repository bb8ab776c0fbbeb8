import { describe, expect, it } from "vitest";
import {
  V2_SPEC_ANNOTATION,
  type EdgeRouteSpecV2,
  type EdgeRouteV1,
  type EdgeRouteV2,
} from "../api/types.js";
import { ConversionError, convert, isV1Expressible, toV1, toV2 } from "./convert.js";
import { durationMs, timeoutSecondsOf } from "./duration.js";

const meta = { name: "shop", namespace: "team-a", uid: "u-1", resourceVersion: "7", generation: 3 };

function v1(spec: EdgeRouteV1["spec"], metadata: EdgeRouteV1["metadata"] = meta): EdgeRouteV1 {
  return { apiVersion: "net.10xdev.io/v1", kind: "EdgeRoute", metadata, spec };
}
function v2(spec: EdgeRouteSpecV2, metadata: EdgeRouteV2["metadata"] = meta): EdgeRouteV2 {
  return { apiVersion: "net.10xdev.io/v2", kind: "EdgeRoute", metadata, spec };
}

/** Two rules, weighted backends, headers, an Exact match and two hostnames: most of what v1 cannot say. */
const rich: EdgeRouteSpecV2 = {
  hostnames: ["shop.example.com", "*.shop.example.com"],
  rules: [
    {
      matches: [
        { path: { type: "PathPrefix", value: "/api" }, headers: [{ name: "x-canary", value: "1" }] },
        { path: { type: "Exact", value: "/health" } },
      ],
      backends: [
        { name: "checkout", port: 8080, weight: 90 },
        { name: "checkout-canary", port: 8080, weight: 10 },
      ],
      timeout: "1500ms",
    },
    { matches: [{ path: { value: "/" } }], backends: [{ name: "web", port: 80 }] },
  ],
};

describe("v1 → v2", () => {
  it("maps every v1 field onto one rule with one match and one backend of weight 1", () => {
    const out = toV2(
      v1({
        host: "shop.example.com",
        pathPrefix: "/api",
        service: "checkout",
        port: 8080,
        timeoutSeconds: 15,
      }),
    );
    expect(out).toStrictEqual(
      v2({
        hostnames: ["shop.example.com"],
        rules: [
          {
            matches: [{ path: { type: "PathPrefix", value: "/api" } }],
            backends: [{ name: "checkout", port: 8080, weight: 1 }],
            timeout: "15s",
          },
        ],
      }),
    );
  });

  it("gives no hostnames (any host) when v1 has no host, and no timeout when v1 has none", () => {
    const out = toV2(v1({ pathPrefix: "/", service: "web", port: 80 }));
    expect(out.spec).toStrictEqual({
      rules: [
        {
          matches: [{ path: { type: "PathPrefix", value: "/" } }],
          backends: [{ name: "web", port: 80, weight: 1 }],
        },
      ],
    });
  });

  it("passes status and other metadata through as the same objects", () => {
    const status = { observedGeneration: 3, conditions: [] };
    const metadata = { ...meta, labels: { app: "shop" }, finalizers: ["net.10xdev.io/deprogram"] };
    const input: EdgeRouteV1 = { ...v1({ pathPrefix: "/", service: "web", port: 80 }, metadata), status };
    const out = toV2(input);
    expect(out.status).toBe(status);
    expect(out.metadata).toBe(metadata);
  });
});

describe("v2 → v1", () => {
  it("needs no annotation when v1 says it all", () => {
    const spec = toV2(
      v1({ host: "a.example.com", pathPrefix: "/x", service: "s", port: 1, timeoutSeconds: 3600 }),
    ).spec;
    expect(isV1Expressible(spec)).toBe(true);
    const out = toV1(v2(spec));
    expect(out.metadata).toBe(meta);
    expect(out.spec).toStrictEqual({
      host: "a.example.com",
      pathPrefix: "/x",
      service: "s",
      port: 1,
      timeoutSeconds: 3600,
    });
  });

  it("shows the first hostname, rule, match and backend, and carries the whole spec in the annotation", () => {
    const out = toV1(v2(rich, { ...meta, annotations: { owner: "team-a" } }));
    expect(out.spec).toStrictEqual({
      host: "shop.example.com",
      pathPrefix: "/api",
      service: "checkout",
      port: 8080,
      timeoutSeconds: 2,
    });
    expect(out.metadata.annotations?.owner).toBe("team-a");
    expect(JSON.parse(out.metadata.annotations?.[V2_SPEC_ANNOTATION] ?? "")).toStrictEqual(rich);
    expect(toV2(out)).toStrictEqual(v2(rich, { ...meta, annotations: { owner: "team-a" } }));
  });

  it.each([
    [
      "an empty hostnames list",
      { hostnames: [], rules: toV2(v1({ pathPrefix: "/", service: "a", port: 1 })).spec.rules },
    ],
    [
      "a backend without a weight",
      {
        rules: [
          {
            matches: [{ path: { type: "PathPrefix" as const, value: "/" } }],
            backends: [{ name: "a", port: 1 }],
          },
        ],
      },
    ],
    [
      "a path without a type",
      { rules: [{ matches: [{ path: { value: "/" } }], backends: [{ name: "a", port: 1, weight: 1 }] }] },
    ],
    [
      "a timeout of 1m",
      {
        rules: [
          {
            matches: [{ path: { type: "PathPrefix" as const, value: "/" } }],
            backends: [{ name: "a", port: 1, weight: 1 }],
            timeout: "1m",
          },
        ],
      },
    ],
  ])("keeps the annotation for %s, which v1 → v2 would not give back", (_what, spec: EdgeRouteSpecV2) => {
    const out = toV1(v2(spec));
    expect(out.metadata.annotations?.[V2_SPEC_ANNOTATION]).toBeDefined();
    expect(toV2(out).spec).toStrictEqual(spec);
    expect(toV2(out).metadata).toStrictEqual(meta);
  });

  it("drops a stale annotation from a v2 object that v1 can say in full", () => {
    const spec = toV2(v1({ pathPrefix: "/", service: "a", port: 1 })).spec;
    const out = toV1(
      v2(spec, { ...meta, annotations: { [V2_SPEC_ANNOTATION]: JSON.stringify(rich), keep: "me" } }),
    );
    expect(out.metadata.annotations).toStrictEqual({ keep: "me" });
  });
});

describe("v1 edits of an annotated object", () => {
  const shown = toV1(v2(rich));
  const edit = (
    spec: Partial<EdgeRouteV1["spec"]>,
    drop: (keyof EdgeRouteV1["spec"])[] = [],
  ): EdgeRouteSpecV2 => {
    const next: Record<string, unknown> = { ...shown.spec, ...spec };
    for (const k of drop) delete next[k];
    return toV2({ ...shown, spec: next as unknown as EdgeRouteV1["spec"] }).spec;
  };

  it("changes only the first backend's port and keeps the rest", () => {
    const out = edit({ port: 9090 });
    expect(out.rules[0]?.backends).toStrictEqual([
      { name: "checkout", port: 9090, weight: 90 },
      { name: "checkout-canary", port: 8080, weight: 10 },
    ]);
    expect({
      ...out,
      rules: [{ ...out.rules[0], backends: rich.rules[0]?.backends }, out.rules[1]],
    }).toStrictEqual(rich);
  });

  it("renames the first backend and keeps its weight", () => {
    expect(edit({ service: "pay" }).rules[0]?.backends[0]).toStrictEqual({
      name: "pay",
      port: 8080,
      weight: 90,
    });
  });

  it("replaces the first hostname, keeping the others without duplicates", () => {
    expect(edit({ host: "new.example.com" }).hostnames).toStrictEqual([
      "new.example.com",
      "*.shop.example.com",
    ]);
    expect(edit({ host: "*.shop.example.com" }).hostnames).toStrictEqual(["*.shop.example.com"]);
  });

  it("removing host means any host: hostnames are cleared", () => {
    const out = edit({}, ["host"]);
    expect(out.hostnames).toBeUndefined();
    expect(out.rules).toStrictEqual(rich.rules);
    expect(toV1(v2(out)).spec.host).toBeUndefined();
  });

  it("an edited path becomes a PathPrefix; the match's headers and the other matches stay", () => {
    const out = edit({ pathPrefix: "/v2" });
    expect(out.rules[0]?.matches).toStrictEqual([
      { path: { type: "PathPrefix", value: "/v2" }, headers: [{ name: "x-canary", value: "1" }] },
      { path: { type: "Exact", value: "/health" } },
    ]);
  });

  it("sets or removes the first rule's timeout; an unchanged timeout keeps its sub-second form", () => {
    expect(edit({ timeoutSeconds: 30 }).rules[0]?.timeout).toBe("30s");
    expect(edit({}, ["timeoutSeconds"]).rules[0]?.timeout).toBeUndefined();
    expect(edit({}).rules[0]?.timeout).toBe("1500ms");
  });

  it("an unedited object converts back to exactly the annotated spec", () => {
    expect(edit({})).toStrictEqual(rich);
  });
});

describe("bad input", () => {
  const annotated = (text: unknown): EdgeRouteV1 =>
    v1(
      { pathPrefix: "/", service: "a", port: 1 },
      { ...meta, annotations: { [V2_SPEC_ANNOTATION]: text as string } },
    );

  it("an annotation that is not JSON fails with the annotation named, not a crash", () => {
    const r = convert(annotated("{rules: oops"), "net.10xdev.io/v2");
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.errors[0]?.path).toBe("metadata.annotations[net.10xdev.io/v2-spec]");
    expect(r.errors[0]?.detail).toMatch(/must be the v2 spec as JSON/);
  });

  it("an annotation that is not a valid v2 spec lists every field at fault", () => {
    const bad = { rules: [{ matches: [], backends: [{ name: "a", port: 70000 }] }] };
    const r = convert(annotated(JSON.stringify(bad)), "net.10xdev.io/v2");
    expect(r.ok).toBe(false);
    if (r.ok) return;
    const paths = r.errors.map((e) => e.path);
    expect(paths).toContain("metadata.annotations[net.10xdev.io/v2-spec].rules[0].matches");
    expect(paths).toContain("metadata.annotations[net.10xdev.io/v2-spec].rules[0].backends[0].port");
    expect(() => toV2(annotated(JSON.stringify(bad)))).toThrow(ConversionError);
  });

  it("an annotation that is not a string is refused", () => {
    const r = convert(annotated(42), "net.10xdev.io/v2");
    expect(r.ok).toBe(false);
  });

  it("names each missing or mistyped field of the spec", () => {
    const r = convert(
      {
        ...v1({ pathPrefix: "/", service: "a", port: 1 }),
        spec: { pathPrefix: 3, port: "80" },
      } as unknown as EdgeRouteV1,
      "net.10xdev.io/v2",
    );
    expect(r.ok ? [] : r.errors.map((e) => `${e.path} ${e.type}`)).toStrictEqual([
      "spec.pathPrefix Invalid value",
      "spec.service Required value",
      "spec.port Invalid value",
    ]);
    const r2 = convert(
      v2({ rules: [{ matches: [{ path: {} }], backends: [] }] } as unknown as EdgeRouteSpecV2),
      "net.10xdev.io/v1",
    );
    expect(r2.ok ? [] : r2.errors.map((e) => e.path)).toStrictEqual([
      "spec.rules[0].matches[0].path.value",
      "spec.rules[0].backends",
    ]);
  });

  it("refuses an unknown version and returns an object already at the desired version untouched", () => {
    const obj = v1({ pathPrefix: "/", service: "a", port: 1 });
    expect(convert(obj, "net.10xdev.io/v3").ok).toBe(false);
    const same = convert(obj, "net.10xdev.io/v1");
    expect(same.ok && same.object).toBe(obj);
  });
});

describe("durations", () => {
  it.each([
    ["15s", 15_000, 15],
    ["1m30s", 90_000, 90],
    ["1h", 3_600_000, 3600],
    ["2h", 7_200_000, 3600],
    ["500ms", 500, 1],
    ["1s1ms", 1001, 2],
    ["0s", 0, undefined],
    ["soon", undefined, undefined],
  ])("%s is %s ms, %s whole seconds for v1", (text, ms, seconds) => {
    expect(durationMs(text)).toBe(ms);
    expect(timeoutSecondsOf(text)).toBe(seconds);
  });
});
