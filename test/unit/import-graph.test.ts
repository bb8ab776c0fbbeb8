// The import graph of src/: no cycles, and every import points down the layers
// declared in src/layers.json (drawn in docs/architecture.md). Imports are read
// with TypeScript's own pre-processor, so static, type-only, re-exports and
// dynamic imports all count. Test files are left out: nothing imports them.
// And src/ is the product: none of its files reaches outside src/ (the tools
// in tools/, the tests, the benchmarks and scripts are not shipped).

import { readFileSync, readdirSync } from "node:fs";
import path from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "../..");
const SRC = path.join(ROOT, "src");

interface Layers {
  readonly tiers: readonly (readonly string[])[];
  /** folder → higher-or-same folder → the only files of it that folder may import. */
  readonly narrow: Readonly<Record<string, Readonly<Record<string, readonly string[]>>>>;
}

const layers = JSON.parse(readFileSync(path.join(SRC, "layers.json"), "utf8")) as Layers;

/** File (relative to src, `/`-separated) → the src files it imports. */
export type Graph = ReadonlyMap<string, readonly string[]>;

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...sourceFiles(p));
    else if (e.name.endsWith(".ts") && !e.name.endsWith(".test.ts")) out.push(p);
  }
  return out;
}

/** Relative specifiers only: packages are not part of the layering. */
function importsOf(file: string): string[] {
  const info = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
  return info.importedFiles
    .map((f) => f.fileName)
    .filter((s) => s.startsWith("."))
    .map((s) =>
      path
        .relative(SRC, path.resolve(path.dirname(file), s))
        .split(path.sep)
        .join("/"),
    )
    .map((s) => s.replace(/\.js$/, ".ts"));
}

function srcGraph(): Graph {
  const graph = new Map<string, string[]>();
  for (const f of sourceFiles(SRC)) graph.set(path.relative(SRC, f).split(path.sep).join("/"), importsOf(f));
  return graph;
}

/** Every cycle's files (strongly connected components of two or more, or a file importing itself). */
export function cycles(graph: Graph): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
    }
    if (low.get(v) === index.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop() as string;
        onStack.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(scc.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

/** Imports against the declared direction, as `from -> to: why`. */
export function violations(graph: Graph, decl: Layers): string[] {
  const tierOf = new Map<string, number>();
  decl.tiers.forEach((folders, tier) => folders.forEach((f) => tierOf.set(f, tier)));
  const out: string[] = [];
  for (const [from, targets] of graph) {
    const a = from.split("/")[0] as string;
    for (const to of targets) {
      // Out of src/ altogether: outsideSrc's to report, not a layer.
      if (to.startsWith("../")) continue;
      const b = to.split("/")[0] as string;
      if (!to.includes("/")) {
        out.push(`${from} -> ${to}: a file at the top of src/ belongs to no layer`);
        continue;
      }
      if (a === b) continue;
      const ta = tierOf.get(a);
      const tb = tierOf.get(b);
      if (ta === undefined || tb === undefined) {
        out.push(`${from} -> ${to}: ${ta === undefined ? a : b} is in no tier of src/layers.json`);
        continue;
      }
      const allowed = decl.narrow[a]?.[b];
      if (allowed !== undefined) {
        if (!allowed.includes(to))
          out.push(`${from} -> ${to}: ${a} may import only ${allowed.join(", ")} of ${b}`);
        continue;
      }
      if (tb >= ta) out.push(`${from} -> ${to}: ${a} (tier ${ta}) may not import ${b} (tier ${tb})`);
    }
  }
  return out;
}

/** Imports that leave src/ (its graph names them `../tools/...`, `../test/...`), as `from -> to`. */
export function outsideSrc(graph: Graph): string[] {
  const out: string[] = [];
  for (const [from, targets] of graph)
    for (const to of targets) if (to.startsWith("../")) out.push(`${from} -> ${to.slice(3)}`);
  return out;
}

describe("the import graph of src/", () => {
  const graph = srcGraph();

  it("reads every source file and its imports", () => {
    expect(graph.size).toBeGreaterThan(80);
    expect(graph.get("cli/cli.ts")).toContain("cli/serve.ts");
    // Dynamic imports count too.
    expect(graph.get("wiring/data-plane.ts")).toContain("dataplane/envoy-configmap.ts");
  });

  it("has no import cycle", () => {
    expect(cycles(graph)).toEqual([]);
  });

  it("has every folder in a tier, and every import pointing down the tiers", () => {
    const folders = new Set([...graph.keys()].map((f) => f.split("/")[0]));
    const declared = new Set(layers.tiers.flat());
    expect([...folders].filter((f) => !declared.has(f as string))).toEqual([]);
    expect(violations(graph, layers)).toEqual([]);
  });

  it("has no import out of src/: the product needs no tool, test, benchmark or script", () => {
    expect(outsideSrc(graph)).toEqual([]);
  });

  it("would catch a cycle and an upward import", () => {
    const bad: Graph = new Map([
      ["routing/a.ts", ["envoy/b.ts"]],
      ["envoy/b.ts", ["routing/a.ts"]],
      ["watcher/w.ts", ["reconcile/reconciler.ts", "reconcile/protocol.ts"]],
      ["reconcile/reconciler.ts", []],
      ["reconcile/protocol.ts", []],
    ]);
    expect(cycles(bad)).toEqual([["envoy/b.ts", "routing/a.ts"]]);
    expect(violations(bad, layers)).toEqual([
      "routing/a.ts -> envoy/b.ts: routing (tier 1) may not import envoy (tier 2)",
      "watcher/w.ts -> reconcile/reconciler.ts: watcher may import only reconcile/protocol.ts of reconcile",
    ]);
  });

  it("would catch an import out of src/", () => {
    const bad: Graph = new Map([
      ["cli/main.ts", ["cli/serve.ts", "../tools/demo/main.ts"]],
      ["server/app.ts", ["../test/fixtures/fake-kube.ts", "../bench/x.ts", "../scripts/gen.ts"]],
    ]);
    expect(outsideSrc(bad)).toEqual([
      "cli/main.ts -> tools/demo/main.ts",
      "server/app.ts -> test/fixtures/fake-kube.ts",
      "server/app.ts -> bench/x.ts",
      "server/app.ts -> scripts/gen.ts",
    ]);
  });
});
