// `kubectl explain edgeroutes.spec --recursive` is only as good as the CRD's
// descriptions: every field of both versions, spec and status, has one, from
// the one source (src/api/schema.ts), and each says the limits and values a
// user may write. test/integration/explain.test.ts reads them back from the
// real apiserver.

import { describe, expect, it } from "vitest";
import { buildCrd } from "../../src/api/crd.js";
import { objectSchema } from "../../src/api/schema.js";
import { VERSIONS } from "../../src/api/types.js";
import { schemaNodes, undescribed } from "../harness/undescribed.js";

describe("the walk that finds fields without a description", () => {
  it("names a nested property and an items node that lack one", () => {
    const schema = {
      type: "object",
      description: "root",
      properties: {
        a: {
          type: "array",
          description: "a list",
          items: { type: "object", properties: { b: { type: "string", description: " " } } },
        },
        c: { type: "integer" },
      },
    };
    expect(undescribed(schema)).toEqual(["a[]", "a[].b", "c"]);
  });
});

describe.each(VERSIONS)("the CRD's %s schema", (version) => {
  const schema = buildCrd().spec.versions.find((v) => v.name === version)?.schema.openAPIV3Schema;

  it("is objectSchema() as schema.ts writes it", () => {
    expect(schema).toEqual(objectSchema(version));
  });

  it("describes every property and items node, spec and status", () => {
    // metadata can carry nothing but its type (the apiserver refuses more): kubectl
    // explain shows ObjectMeta's own description there.
    expect(undescribed(schema)).toEqual(["metadata"]);
    // The walk did reach the leaves the issue named as blank.
    const paths = [...schemaNodes(schema)].map(([p]) => p);
    expect(paths).toEqual(expect.arrayContaining(["status.conditions[].lastTransitionTime"]));
    if (version === "v2")
      expect(paths).toEqual(
        expect.arrayContaining([
          "spec.rules[].matches[].path.type",
          "spec.rules[].matches[].headers[].value",
          "spec.rules[].backends[].port",
          "spec.tls.hostnames[]",
        ]),
      );
  });

  it("names every value an enum allows and the default a field takes", () => {
    for (const [path, node] of schemaNodes(schema)) {
      const text = String(node.description);
      for (const value of (node.enum as string[] | undefined) ?? [])
        expect(text, `${path} does not name ${value}`).toContain(value);
      if (node.default !== undefined) {
        expect(text, `${path} does not say its default`).toMatch(/default/i);
        expect(text, `${path} does not say its default`).toContain(String(node.default));
      }
    }
  });

  it("states each of the spec's limits (lengths, counts, maxima) as the number the apiserver enforces", () => {
    for (const [path, node] of schemaNodes(schema?.properties?.spec, "spec")) {
      const text = String(node.description);
      for (const key of ["maxLength", "maxItems", "maximum"] as const) {
        const limit = node[key];
        if (typeof limit === "number") expect(text, `${path}: ${key} ${limit}`).toContain(String(limit));
      }
    }
  });
});
