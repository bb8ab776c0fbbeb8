// Golden files: test/golden/conversion/NAME.in.yaml (one object) → NAME.out.yaml
// (that object converted to the other version, or the errors). A reviewer reads
// the diff of the .out files to see what changed for users. UPDATE_GOLDEN=1
// rewrites them.

import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parse, stringify } from "yaml";
import { describe, expect, it } from "vitest";
import { formatFieldError } from "../api/field-error.js";
import { API_VERSION_V1, API_VERSION_V2, type EdgeRoute } from "../api/types.js";
import { convert } from "./convert.js";

const dir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../test/golden/conversion");
const update = process.env.UPDATE_GOLDEN === "1";
const cases = readdirSync(dir)
  .filter((f) => f.endsWith(".in.yaml"))
  .map((f) => f.slice(0, -".in.yaml".length))
  .sort();

describe("conversion golden files", () => {
  it("has cases", () => {
    expect(cases.length).toBeGreaterThan(5);
  });

  it.each(cases)("%s", (name) => {
    const input = parse(readFileSync(path.join(dir, `${name}.in.yaml`), "utf8")) as EdgeRoute;
    const desired = input.apiVersion === API_VERSION_V1 ? API_VERSION_V2 : API_VERSION_V1;
    const r = convert(input, desired);
    const out = stringify(r.ok ? r.object : { errors: r.errors.map(formatFieldError) }, { lineWidth: 0 });
    const file = path.join(dir, `${name}.out.yaml`);
    if (update) writeFileSync(file, out);
    expect(out).toBe(readFileSync(file, "utf8"));
  });
});
