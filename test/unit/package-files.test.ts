// The published package holds what runs in a cluster and nothing else: the
// compiled product (dist/src, its tests left out), package.json and the README.
// No tool (tools/: the test environment, the demo), test, benchmark or script.
//
// npm decides from package.json's `files`, so this asks npm itself
// (`npm pack --dry-run --json`, no network) about a copy of the checkout in a
// temporary directory: every source file as an empty file, and beside it the
// dist/ tree that `npm run build` writes (the names TypeScript gives each input
// of tsconfig.json). So the answer depends on neither a build having run nor a
// stale dist/ holding files whose sources have moved.

import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import ts from "typescript";
import { afterAll, describe, expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "../..");
const SKIPPED = new Set([".git", "node_modules", "dist", "coverage"]);

const rel = (p: string): string => path.relative(ROOT, p).split(path.sep).join("/");

/** The checkout's files (relative, `/`-separated), without what git and the build leave. */
function checkoutFiles(dir = ROOT): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (dir === ROOT && SKIPPED.has(e.name)) continue;
    if (e.name === "node_modules") continue;
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...checkoutFiles(p));
    else if (e.isFile()) out.push(rel(p));
  }
  return out;
}

/** What `npm run build` (tsc -p tsconfig.json) writes: each input's .js and .js.map, and the JSON it copies. */
function buildOutputs(files: readonly string[]): string[] {
  const file = path.join(ROOT, "tsconfig.json");
  const config = ts.readConfigFile(file, (f) => ts.sys.readFile(f));
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, ROOT, undefined, file);
  const outputs = parsed.fileNames.flatMap((f) => ts.getOutputFileNames(parsed, f, false)).map(rel);
  // Imported JSON (src/dataplane/xds/envoy-descriptor.json) is copied beside the code; all of src/'s, to be safe.
  const json = files.filter((f) => f.startsWith("src/") && f.endsWith(".json")).map((f) => `dist/${f}`);
  return [...outputs, ...json];
}

function packedFiles(dir: string): string[] {
  const r = spawnSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts", "--loglevel=error"], {
    cwd: dir,
    encoding: "utf8",
  });
  if (r.status !== 0) throw new Error(`npm pack --dry-run failed (${r.status}): ${r.stderr}`);
  const [pack] = JSON.parse(r.stdout) as { files: { path: string }[] }[];
  return (pack?.files ?? []).map((f) => f.path).sort();
}

describe("the published package", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "edge-pack-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const sources = checkoutFiles();
  const built = buildOutputs(sources);
  for (const f of [...sources, ...built]) {
    mkdirSync(path.join(dir, path.dirname(f)), { recursive: true });
    writeFileSync(path.join(dir, f), "");
  }
  // The real ones: what decides (files, bin) and what npm reads for ignores.
  for (const f of ["package.json", ".gitignore"]) copyFileSync(path.join(ROOT, f), path.join(dir, f));
  const packed = packedFiles(dir);

  it("holds the executable and the whole compiled product", () => {
    expect(packed).toContain("dist/src/cli/main.js");
    expect(packed).toContain("dist/src/dataplane/xds/envoy-descriptor.json");
    expect(packed).toContain("package.json");
    expect(packed).toContain("README.md");
    const product = built.filter((f) => f.startsWith("dist/src/") && !/\.test\.js(\.map)?$/.test(f));
    expect(product.length).toBeGreaterThan(80);
    expect(product.filter((f) => !packed.includes(f))).toEqual([]);
  });

  it("holds no tool, test, benchmark, script or source file", () => {
    const extra = new Set(["package.json", "README.md", "LICENSE"]);
    expect(packed.filter((f) => !f.startsWith("dist/src/") && !extra.has(f))).toEqual([]);
    expect(packed.filter((f) => /\.test\.js(\.map)?$/.test(f))).toEqual([]);
    expect(packed.filter((f) => /(^|\/)(testenv|demo|demo-workloads)(\/|\.|$)/.test(f))).toEqual([]);
    // The copy has them all, so their absence above means something.
    for (const d of [
      "dist/tools/testenv/",
      "dist/tools/demo/",
      "dist/test/",
      "dist/bench/",
      "tools/",
      "test/",
    ])
      expect(built.concat(sources).some((f) => f.startsWith(d))).toBe(true);
  });
});
