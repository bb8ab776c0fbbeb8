// The chart's README carries a table of every value made from values.schema.json
// and values.yaml (scripts/chart-readme.ts): a value added, removed, described
// anew or given another default without `npm run gen` fails here.

import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { chartReadme, README_FILE, valuesBlock } from "../../scripts/chart-readme.js";
import { readChartValues } from "../../scripts/chart-values.js";

describe("the chart's README", () => {
  const committed = readFileSync(README_FILE, "utf8");

  it("is committed with its generated blocks as the generator makes them (run `npm run gen`)", () => {
    expect(committed, `${README_FILE} is stale: run npm run gen`).toBe(chartReadme(committed));
  });

  it("has a row for every value, with its default and its description", () => {
    for (const v of readChartValues().values) {
      // A top-level group is a section of its own, headed by its key.
      if (v.group && !v.key.includes(".")) {
        expect(committed).toContain(`### \`${v.key}\`\n\n`);
        continue;
      }
      const line = committed.split("\n").find((l) => l.startsWith(`| \`${v.key}\` |`));
      expect(line, v.key).toBeDefined();
      if (!v.group && v.default !== undefined) expect(line).toContain(JSON.stringify(v.default));
    }
    expect(committed).toContain("| `server.replicas` | integer | `2` | Server pods.");
  });

  it("keeps a table cell on one line, whatever the description holds", () => {
    const block = valuesBlock([
      {
        key: "a",
        type: "string",
        default: "x|y",
        description: "one\ntwo | <fullname> *.example.com",
        group: false,
      },
    ]);
    expect(block).toContain('| `a` | string | `"x\\|y"` | one two \\| &lt;fullname&gt; \\*.example.com |');
  });

  it("links the install guide and says how to install", () => {
    expect(committed).toContain("https://github.com/10xdev/edge-operator/blob/main/docs/install.md");
    expect(committed).toMatch(/helm install edge charts\/edge-operator/);
  });
});
