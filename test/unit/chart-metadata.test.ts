// What Artifact Hub and `helm show chart` tell a user before they install:
// Chart.yaml's icon, sources, maintainers and Artifact Hub annotations, held
// to what they describe (the CRD, the images values.yaml runs, the license,
// the docs that exist), so the listing cannot drift from the chart.

import { existsSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { isRecord } from "../../src/api/is-record.js";
import { EDGE_ROUTE_DESCRIPTION } from "../../src/api/schema.js";
import { API_VERSION_V2, CRD_NAME, KIND, versionOf } from "../../src/api/types.js";
import { validateRoute } from "../../src/rules/validate.js";
import { CHART_FILE } from "../../scripts/chart-readme.js";
import { VALUES_FILE } from "../../scripts/chart-values.js";

interface Chart {
  home: string;
  icon: string;
  appVersion: string;
  sources: string[];
  maintainers: { name: string; url?: string; email?: string }[];
  annotations: Record<string, string>;
}

const chart = parse(readFileSync(CHART_FILE, "utf8")) as Chart;
const values = parse(readFileSync(VALUES_FILE, "utf8")) as {
  image: { repository: string; tag: string };
  crd: { storageVersion: string };
  envoy: { image: { repository: string; tag: string } };
};
const pkg = JSON.parse(readFileSync("package.json", "utf8")) as { license: string };
const annotation = (name: string): unknown => parse(chart.annotations[`artifacthub.io/${name}`] ?? "null");

/** A URL into this repository's main branch, as the path of the file it names here. */
function repositoryFile(url: string): string | undefined {
  const m =
    /^https:\/\/(?:github\.com\/10xdev\/edge-operator\/blob|raw\.githubusercontent\.com\/10xdev\/edge-operator)\/main\/(.+)$/.exec(
      url,
    );
  return m?.[1];
}

describe("Chart.yaml", () => {
  it("has an icon from this repository, its sources and its maintainers", () => {
    const icon = repositoryFile(chart.icon);
    expect(icon, chart.icon).toBeDefined();
    expect(existsSync(icon ?? ""), `${icon} is missing`).toBe(true);
    expect(readFileSync(icon ?? "", "utf8")).toMatch(/^<svg /);
    expect(chart.sources).toContain(chart.home);
    expect(chart.maintainers.length).toBeGreaterThan(0);
    for (const m of chart.maintainers) expect(m.name).not.toBe("");
  });

  it("gives Artifact Hub the package's license, a category it knows, and links to docs that exist", () => {
    expect(chart.annotations["artifacthub.io/license"]).toBe(pkg.license);
    expect(chart.annotations["artifacthub.io/category"]).toBe("networking");
    const links = annotation("links");
    expect(Array.isArray(links) && links.length > 0).toBe(true);
    for (const link of links as { name: string; url: string }[]) {
      expect(link.name).not.toBe("");
      const file = repositoryFile(link.url);
      expect(file, link.url).toBeDefined();
      expect(existsSync(file ?? ""), `${link.url}: ${file} is missing`).toBe(true);
    }
    expect((links as { url: string }[]).map((l) => l.url)).toContain(
      "https://github.com/10xdev/edge-operator/blob/main/docs/install.md",
    );
  });

  it("lists the EdgeRoute CRD in its stored version, described as the CRD describes itself", () => {
    expect(annotation("crds")).toEqual([
      {
        kind: KIND,
        version: values.crd.storageVersion,
        name: CRD_NAME,
        displayName: KIND,
        description: EDGE_ROUTE_DESCRIPTION,
      },
    ]);
  });

  it("shows example routes the webhook admits", () => {
    const examples = annotation("crdsExamples");
    expect(Array.isArray(examples) && examples.length > 0).toBe(true);
    for (const ex of examples as unknown[]) {
      expect(isRecord(ex) && ex.apiVersion).toBe(API_VERSION_V2);
      const version = isRecord(ex) ? versionOf(ex.apiVersion) : undefined;
      expect(version).toBeDefined();
      expect(validateRoute(ex, version ?? "v2")).toEqual([]);
    }
  });

  it("lists the images the default values run", () => {
    const tag = values.image.tag || chart.appVersion;
    expect(annotation("images")).toEqual([
      { name: "edge-operator", image: `${values.image.repository}:${tag}` },
      { name: "envoy", image: `${values.envoy.image.repository}:${values.envoy.image.tag}` },
    ]);
  });
});
