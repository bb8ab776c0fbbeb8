// Builds the real cluster's binaries once per run, before the cluster suites:
// a first build takes minutes, longer than a hook may.

import { ensureClusterBin } from "../../src/testenv/cluster-bin.js";

export default function setup(): void {
  const res = ensureClusterBin();
  if (!res.ok) {
    // vitest.config.ts leaves the cluster suites out where the machine cannot
    // host a cluster, except in CI: there they must run, so say why they cannot.
    throw new Error(`the real-cluster tests cannot run: ${res.reason}`);
  }
}
