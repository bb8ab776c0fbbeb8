// The chart's README (charts/edge-operator/README.md): the prose is written by
// hand; what lies between the generated markers is made here, from Chart.yaml
// and from the values' schema and defaults (chart-values.ts), so the table of
// values cannot fall behind the values. `npm run gen` rewrites those blocks;
// test/unit/chart-readme.test.ts fails when they are stale.

import { readFileSync } from "node:fs";
import { parse } from "yaml";
import { isRecord } from "../src/api/is-record.js";
import { CHART_DIR, readChartValues, type ChartValue } from "./chart-values.js";

export const README_FILE = `${CHART_DIR}/README.md`;
export const CHART_FILE = `${CHART_DIR}/Chart.yaml`;

const begin = (name: string) => `<!-- BEGIN generated: ${name} (npm run gen, scripts/chart-readme.ts) -->`;
const end = (name: string) => `<!-- END generated: ${name} -->`;

/** Text in a Markdown table cell: no line breaks, and nothing Markdown or HTML would take for syntax. */
function cell(text: string): string {
  return text
    .replace(/\s+/g, " ")
    .replace(/\\/g, "\\\\")
    .replace(/\|/g, "\\|")
    .replace(/\*/g, "\\*")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;");
}

function code(value: unknown): string {
  return `\`${JSON.stringify(value).replace(/\|/g, "\\|")}\``;
}

function defaultCell(v: ChartValue): string {
  if (v.group) return "";
  return v.default === undefined ? "(unset)" : code(v.default);
}

function row(v: ChartValue): string {
  return `| \`${v.key}\` | ${cell(v.type)} | ${defaultCell(v)} | ${cell(v.description ?? "")} |`;
}

const TABLE_HEAD = ["| key | type | default | description |", "| --- | --- | --- | --- |"];

/**
 * The values that are not groups first, in one table; then one section per
 * top-level group: its description, and a table of every key below it.
 */
export function valuesBlock(values: readonly ChartValue[]): string {
  const top = values.filter((v) => !v.key.includes("."));
  const sections = [["### Top level", "", ...TABLE_HEAD, ...top.filter((v) => !v.group).map(row)].join("\n")];
  for (const group of top.filter((v) => v.group)) {
    const rows = values.filter((v) => v.key.startsWith(`${group.key}.`));
    sections.push(
      [`### \`${group.key}\``, "", cell(group.description ?? ""), "", ...TABLE_HEAD, ...rows.map(row)].join(
        "\n",
      ),
    );
  }
  return sections.join("\n\n");
}

export function chartBlock(chart: Record<string, unknown>): string {
  const text = (k: string) => (typeof chart[k] === "string" ? (chart[k] as string) : "");
  return `Chart version \`${text("version")}\`, app version \`${text("appVersion")}\`, Kubernetes \`${text("kubeVersion")}\`.`;
}

function replaceBlock(readme: string, name: string, body: string): string {
  const b = readme.indexOf(begin(name));
  const e = readme.indexOf(end(name));
  if (b < 0 || e < b)
    throw new Error(`${README_FILE} has no block "${name}": keep its ${begin(name)} and ${end(name)}`);
  return `${readme.slice(0, b)}${begin(name)}\n\n${body}\n\n${readme.slice(e)}`;
}

/** The README as it should be: `readme` with its generated blocks made afresh. */
export function chartReadme(readme: string): string {
  const chart: unknown = parse(readFileSync(CHART_FILE, "utf8"));
  const withChart = replaceBlock(readme, "chart", chartBlock(isRecord(chart) ? chart : {}));
  return replaceBlock(withChart, "values", valuesBlock(readChartValues().values));
}
