// Every chart value is explained where users look (helm's schema, the chart's
// README, an IDE reading values.schema.json): each key values.schema.json
// declares has a description, and values.yaml sets no key the schema does not
// declare, so a value added to values.yaml alone fails here too.

import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { isRecord } from "../../src/api/is-record.js";
import { chartValues, readChartValues, VALUES_SCHEMA_FILE } from "../../scripts/chart-values.js";

describe("the walk over values.yaml and its schema", () => {
  it("finds a value without a description and a key the schema does not declare", () => {
    const schema = {
      type: "object",
      properties: {
        a: {
          type: "object",
          description: "a group",
          properties: { b: { type: "string" }, c: { type: "integer", description: "c" } },
        },
        m: { type: "object", description: "a free-form map", additionalProperties: { type: "string" } },
      },
    };
    const { values, undeclared } = chartValues(schema, { a: { b: "x", d: 1 }, m: { any: "key" } });
    expect(values.filter((v) => v.description === undefined).map((v) => v.key)).toEqual(["a.b"]);
    expect(undeclared).toEqual(["a.d"]);
    expect(values.find((v) => v.key === "a.c")).toMatchObject({ type: "integer", default: undefined });
  });
});

describe("the chart's values", () => {
  const { values, undeclared } = readChartValues();

  it("each have a description in values.schema.json", () => {
    expect(values.length).toBeGreaterThan(100);
    expect(values.filter((v) => v.description === undefined).map((v) => v.key)).toEqual([]);
  });

  it("are all declared in values.schema.json", () => {
    expect(undeclared).toEqual([]);
  });

  it("name every value an enum allows", () => {
    const unnamed: string[] = [];
    const walk = (node: unknown, at: string) => {
      if (!isRecord(node)) return;
      const enums = Array.isArray(node.enum) ? node.enum : [];
      for (const value of enums)
        if (!String(node.description).includes(String(value))) unnamed.push(`${at}: ${String(value)}`);
      if (isRecord(node.properties))
        for (const [k, child] of Object.entries(node.properties)) walk(child, at ? `${at}.${k}` : k);
    };
    walk(JSON.parse(readFileSync(VALUES_SCHEMA_FILE, "utf8")), "");
    expect(unnamed).toEqual([]);
  });
});
