// The chart's values as a user reads them: every key of values.yaml and of
// values.schema.json, with its type, its default and its description. The
// chart's README table is made from these (chart-readme.ts), and a unit test
// fails on a value without a description or a key of values.yaml that the
// schema does not know.

import { readFileSync } from "node:fs";
import { parse } from "yaml";
import { isRecord } from "../src/api/is-record.js";

export const CHART_DIR = "charts/edge-operator";
export const VALUES_FILE = `${CHART_DIR}/values.yaml`;
export const VALUES_SCHEMA_FILE = `${CHART_DIR}/values.schema.json`;

export interface ChartValue {
  /** Dot-separated, as `--set` takes it. */
  readonly key: string;
  readonly type: string;
  /** What values.yaml sets; undefined when it leaves the key out. */
  readonly default: unknown;
  /** Undefined when the schema gives none. */
  readonly description: string | undefined;
  /** Whether the key has keys of its own in the schema (a group, not a value one sets whole). */
  readonly group: boolean;
}

export interface ChartValues {
  readonly values: readonly ChartValue[];
  /** Keys of values.yaml that values.schema.json does not declare. */
  readonly undeclared: readonly string[];
}

function typeOf(schema: Record<string, unknown>): string {
  const t = schema.type;
  const types = Array.isArray(t) ? t.map(String) : typeof t === "string" ? [t] : [];
  const named = types.map((x) => {
    if (x !== "array") return x;
    const items = isRecord(schema.items) ? schema.items : undefined;
    const of = items === undefined ? "" : typeOf(items);
    return of === "" ? "list" : `list of ${of}`;
  });
  return named.join(" or ");
}

function description(schema: Record<string, unknown>): string | undefined {
  const d = schema.description;
  return typeof d === "string" && d.trim() !== "" ? d : undefined;
}

/**
 * Walks values.yaml and its schema together: every key the schema declares
 * (set in values.yaml or not), and every key values.yaml sets under a schema
 * node that lists its keys.
 */
export function chartValues(schema: unknown, values: unknown): ChartValues {
  const out: ChartValue[] = [];
  const undeclared: string[] = [];
  const walk = (node: Record<string, unknown>, value: unknown, at: string) => {
    const properties = isRecord(node.properties) ? node.properties : undefined;
    for (const [name, child] of Object.entries(properties ?? {})) {
      if (!isRecord(child)) continue;
      const key = at === "" ? name : `${at}.${name}`;
      const set = isRecord(value) ? value[name] : undefined;
      const group = isRecord(child.properties);
      out.push({ key, type: typeOf(child), default: set, description: description(child), group });
      walk(child, set, key);
    }
    // A free-form map (podAnnotations, resources.requests) takes any key; one with a key list does not.
    if (properties !== undefined && isRecord(value))
      for (const name of Object.keys(value))
        if (!(name in properties)) undeclared.push(at === "" ? name : `${at}.${name}`);
  };
  if (isRecord(schema)) walk(schema, values, "");
  return { values: out, undeclared };
}

/** The chart's own values.yaml and values.schema.json, read from the repository. */
export function readChartValues(): ChartValues {
  const schema: unknown = JSON.parse(readFileSync(VALUES_SCHEMA_FILE, "utf8"));
  const values: unknown = parse(readFileSync(VALUES_FILE, "utf8"));
  return chartValues(schema, values);
}
