// Builds the control plane's binaries (and hack/xds-go) once per run, before any
// test file, and after the run checks that no etcd or kube-apiserver of ours is
// left behind.

import { execFileSync } from "node:child_process";
import type { TestProject } from "vitest/node";
import { ensureTestbin } from "../../tools/testenv/testbin.js";
import { ensureXdsGo, XDS_GO_ERROR_ENV } from "./xds-go.js";
import { ensureKubeScore, KUBE_SCORE_BIN_ENV, KUBE_SCORE_ERROR_ENV } from "./kube-score.js";

declare module "vitest" {
  export interface ProvidedContext {
    testbinDir: string;
    /** Marks this run's temporary directories, so the leftover check sees only ours. */
    runId: string;
  }
}

function strayProcesses(binDir: string, runId: string): string[] {
  try {
    const out = execFileSync("ps", ["-eo", "pid=,args="], { encoding: "utf8" });
    return out
      .split("\n")
      .filter((l) => l.includes(`${binDir}/etcd `) || l.includes(`${binDir}/kube-apiserver `))
      .filter((l) => l.includes(`edge-cp-${runId}-`))
      .filter((l) => !l.includes("supervise.sh"));
  } catch {
    return [];
  }
}

export default function setup(project: TestProject): () => void {
  const res = ensureTestbin();
  if (!res.ok) {
    // vitest.config.ts already leaves these suites out when Go is missing
    // outside CI; reaching here means they were meant to run and cannot.
    throw new Error(
      `the integration tests cannot run: the test control plane is not available: ${res.reason}`,
    );
  }
  const runId = String(process.pid);
  project.provide("testbinDir", res.binDir);
  project.provide("runId", runId);
  process.env.EDGE_TESTBIN_BIN = res.binDir;
  // Built here, not inside a test's timeout. A failure fails only the suites that use it.
  try {
    process.env.EDGE_XDS_GO_BIN = ensureXdsGo();
  } catch (err) {
    process.env[XDS_GO_ERROR_ENV] = err instanceof Error ? err.message : String(err);
    process.stderr.write(`\n!!! hack/xds-go is not available: ${process.env[XDS_GO_ERROR_ENV]} !!!\n\n`);
  }
  // kube-score too (chart-lint.test.ts); a failure fails that suite, with the reason.
  try {
    process.env[KUBE_SCORE_BIN_ENV] = ensureKubeScore();
  } catch (err) {
    process.env[KUBE_SCORE_ERROR_ENV] = err instanceof Error ? err.message : String(err);
    process.stderr.write(`\n!!! kube-score is not available: ${process.env[KUBE_SCORE_ERROR_ENV]} !!!\n\n`);
  }
  return () => {
    // Give supervisors a moment to finish stopping what they ran.
    let stray = strayProcesses(res.binDir, runId);
    for (let i = 0; i < 50 && stray.length > 0; i++) {
      execFileSync("sleep", ["0.2"]);
      stray = strayProcesses(res.binDir, runId);
    }
    if (stray.length > 0) {
      throw new Error(`test control plane processes left running after the suite:\n${stray.join("\n")}`);
    }
  };
}
