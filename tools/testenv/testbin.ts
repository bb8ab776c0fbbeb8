// Finds (building on first use) the control plane's binaries with
// scripts/testbin.sh, whose last line of output is their directory.

import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import path from "node:path";

/** The checkout this code runs from, whether from src/ (tsx, vitest) or dist/src/ (node). */
function findRepoRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pkg = path.join(dir, "package.json");
    if (
      existsSync(pkg) &&
      (JSON.parse(readFileSync(pkg, "utf8")) as { name?: string }).name === "edge-operator"
    )
      return dir;
    const up = path.dirname(dir);
    if (up === dir)
      throw new Error("cannot find the edge-operator checkout above " + fileURLToPath(import.meta.url));
    dir = up;
  }
}

export const REPO_ROOT = findRepoRoot();

export type TestbinResult = { ok: true; binDir: string } | { ok: false; reason: string };

export function hasGo(): boolean {
  return spawnSync("go", ["version"], { stdio: "ignore" }).status === 0;
}

/** Runs the build script, streaming its progress to our stderr. */
export function ensureTestbin(): TestbinResult {
  if (process.env.EDGE_TESTBIN_BIN && existsSync(path.join(process.env.EDGE_TESTBIN_BIN, "kube-apiserver"))) {
    return { ok: true, binDir: process.env.EDGE_TESTBIN_BIN };
  }
  if (!hasGo())
    return { ok: false, reason: "Go is not installed, and the test control plane is built from Go modules" };
  const res = spawnSync("bash", [path.join(REPO_ROOT, "scripts/testbin.sh")], {
    stdio: ["ignore", "pipe", "inherit"],
    encoding: "utf8",
  });
  if (res.status !== 0)
    return { ok: false, reason: `scripts/testbin.sh failed with exit code ${res.status}` };
  const lines = res.stdout.trim().split("\n");
  const binDir = lines[lines.length - 1] ?? "";
  for (const bin of ["kube-apiserver", "kubectl", "etcd", "helm"]) {
    if (!existsSync(path.join(binDir, bin)))
      return { ok: false, reason: `scripts/testbin.sh did not produce ${bin} in ${binDir}` };
  }
  return { ok: true, binDir };
}
