// Builds the real cluster's binaries once per run, before the cluster suites
// (a first build takes minutes, longer than a hook may), and after the run
// checks that no suite of this run left its cluster running.

import { readFileSync } from "node:fs";
import { ensureClusterBin } from "../../tools/testenv/cluster-bin.js";
import { LOCK_FILE } from "../../tools/testenv/cluster-config.js";

function parentOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
  } catch {
    return undefined;
  }
}

/** The pid holding the cluster lock, when it is this process or one of its descendants. */
function heldByThisRun(): number | undefined {
  let holder: number;
  try {
    holder = Number(readFileSync(LOCK_FILE, "utf8").trim().split(" ")[0]);
  } catch {
    return undefined;
  }
  for (let pid: number | undefined = holder, hops = 0; pid && pid > 1 && hops < 64; hops++) {
    if (pid === process.pid) return holder;
    pid = parentOf(pid);
  }
  return undefined;
}

export default function setup(): () => void {
  const res = ensureClusterBin();
  if (!res.ok) {
    // vitest.config.ts leaves the cluster suites out where the machine cannot
    // host a cluster, except in CI: there they must run, so say why they cannot.
    throw new Error(`the real-cluster tests cannot run: ${res.reason}`);
  }
  return () => {
    const holder = heldByThisRun();
    if (holder !== undefined)
      throw new Error(`a suite left its cluster running (pid ${holder} holds ${LOCK_FILE}): call stop()`);
  };
}
