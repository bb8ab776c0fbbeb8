// The chart's CRD files are generated (npm run gen) from buildCrd(): a change to
// the TypeScript schema that is not regenerated into the chart fails here.

import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { buildCrd } from "../../src/api/crd.js";
import { CRD_FILES_DIR, crdFiles } from "../../scripts/crd-files.js";

describe("the chart's generated CRD files", () => {
  const generated = crdFiles();

  it("are committed exactly as the generator makes them (run `npm run gen` after a schema change)", () => {
    const committed = readdirSync(CRD_FILES_DIR).sort();
    expect(committed).toEqual([...generated.keys()].sort());
    for (const [name, text] of generated) {
      const path = join(CRD_FILES_DIR, name);
      expect(existsSync(path), `${path} is missing: run npm run gen`).toBe(true);
      expect(readFileSync(path, "utf8"), `${path} is stale: run npm run gen`).toBe(text);
    }
  });

  it("parse back to what buildCrd() says, for every version", () => {
    const crd = buildCrd();
    const spec = parse(generated.get("spec.yaml") ?? "") as Record<string, unknown>;
    expect(spec).toEqual({ group: crd.spec.group, scope: crd.spec.scope, names: crd.spec.names });
    for (const v of crd.spec.versions) {
      const body = parse(generated.get(`${v.name}.yaml`) ?? "") as Record<string, unknown>;
      expect(body).toEqual({
        schema: v.schema,
        subresources: v.subresources,
        additionalPrinterColumns: v.additionalPrinterColumns,
      });
    }
  });
});
