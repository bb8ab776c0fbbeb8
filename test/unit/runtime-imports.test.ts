// The executable (serve, watch and the rest) talks to the apiserver through the
// project's thin client: importing @kubernetes/client-node costs a process about
// 75 MiB. Type imports of its models are fine (erased), so this follows the
// imports that survive compilation, the ones Node really loads.
import { readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");
const FORBIDDEN = "@kubernetes/client-node";

/**
 * The specifiers a module loads as it is loaded, once TypeScript has erased its
 * type-only imports: static imports and re-exports. A dynamic import() runs
 * only when its code does (client-node for a kubeconfig's exec plugin), so it
 * is not followed.
 */
function runtimeImports(source: string): string[] {
  const { outputText } = ts.transpileModule(source, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  });
  const file = ts.createSourceFile("module.js", outputText, ts.ScriptTarget.ES2022);
  const specs: string[] = [];
  for (const st of file.statements) {
    if ((ts.isImportDeclaration(st) || ts.isExportDeclaration(st)) && st.moduleSpecifier)
      if (ts.isStringLiteral(st.moduleSpecifier)) specs.push(st.moduleSpecifier.text);
  }
  return specs;
}

/** The first chain of runtime imports from `entry` that reaches `pkg`, or undefined when none does. */
function chainTo(entry: string, pkg: string): string[] | undefined {
  const seen = new Set<string>();
  const walk = (file: string, chain: string[]): string[] | undefined => {
    if (seen.has(file)) return undefined;
    seen.add(file);
    for (const spec of runtimeImports(readFileSync(file, "utf8"))) {
      if (spec === pkg || spec.startsWith(`${pkg}/`)) return [...chain, pkg];
      if (!spec.startsWith(".")) continue;
      const next = join(dirname(file), spec.replace(/\.js$/, ".ts"));
      const found = walk(next, [...chain, relative(ROOT, next)]);
      if (found) return found;
    }
    return undefined;
  };
  return walk(join(ROOT, entry), [entry]);
}

describe("modules on the thin client", () => {
  // The executable itself: every subcommand's module is loaded at start.
  it.each([
    "src/cli/main.ts",
    "src/certs/managed-serving.ts",
    "src/certs/secret-store.ts",
    "src/certs/ca-injector.ts",
    "src/dataplane/envoy-configmap.ts",
    "src/wiring/serve-parts.ts",
    "src/wiring/data-plane.ts",
    "src/dataplane/xds/xds-dataplane.ts",
  ])("%s loads nothing from @kubernetes/client-node at run time", (entry) => {
    expect(chainTo(entry, FORBIDDEN)).toBeUndefined();
  });

  it("the check keeps value imports, drops type-only ones, and follows relative imports", () => {
    expect(runtimeImports(`import { CoreV1Api } from "${FORBIDDEN}"; new CoreV1Api();`)).toEqual([FORBIDDEN]);
    expect(runtimeImports(`export { CoreV1Api } from "${FORBIDDEN}";`)).toEqual([FORBIDDEN]);
    expect(runtimeImports(`const m = await import("${FORBIDDEN}"); m.x();`)).toEqual([]);
    expect(
      runtimeImports(
        `import type { V1Secret } from "${FORBIDDEN}"; import { type V1ConfigMap } from "${FORBIDDEN}"; export let s: V1Secret | V1ConfigMap;`,
      ),
    ).toEqual([]);
    // The test harness keeps client-node for the tests' own checks: reached through an import.
    expect(chainTo("test/harness/control-plane.ts", FORBIDDEN)).toEqual([
      "test/harness/control-plane.ts",
      "tools/testenv/control-plane.ts",
      FORBIDDEN,
    ]);
  });
});
