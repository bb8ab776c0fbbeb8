// Finds (building on first use) the real cluster's binaries with
// scripts/cluster-bin.sh, whose last line of output is their directory; an
// empty output means this machine cannot host the cluster (not root, not Linux).

import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { REPO_ROOT } from "./testbin.js";

export type ClusterBinResult =
  { ok: true; binDir: string; pauseImage: string; helloImage: string } | { ok: false; reason: string };

export const CLUSTER_BINARIES = [
  "kubelet",
  "kube-controller-manager",
  "kube-scheduler",
  "kube-proxy",
  "containerd",
  "containerd-shim-runc-v2",
  "ctr",
  "pause",
  "image-tar",
  "pause.tar",
  "hello.tar",
] as const;

/** Why this machine cannot host the real cluster, or undefined when it can. */
export function clusterUnsupported(): string | undefined {
  if (process.platform !== "linux") return `the real cluster needs Linux (this is ${process.platform})`;
  if (process.getuid?.() !== 0) return "the real cluster needs root (bridges, nftables, mounts, runc)";
  return undefined;
}

/** Runs the build script, streaming its progress to our stderr. */
export function ensureClusterBin(): ClusterBinResult {
  const unsupported = clusterUnsupported();
  if (unsupported) return { ok: false, reason: unsupported };
  const res = spawnSync("bash", [path.join(REPO_ROOT, "scripts/cluster-bin.sh")], {
    stdio: ["ignore", "pipe", "inherit"],
    encoding: "utf8",
  });
  if (res.status !== 0)
    return { ok: false, reason: `scripts/cluster-bin.sh failed with exit code ${res.status}` };
  const lines = res.stdout.trim().split("\n");
  const binDir = lines[lines.length - 1] ?? "";
  if (!binDir) return { ok: false, reason: "scripts/cluster-bin.sh built nothing (see its message above)" };
  for (const bin of CLUSTER_BINARIES) {
    if (!existsSync(path.join(binDir, bin)))
      return { ok: false, reason: `scripts/cluster-bin.sh did not produce ${bin} in ${binDir}` };
  }
  const ref = (name: string): string => readFileSync(path.join(binDir, `${name}.ref`), "utf8").trim();
  return { ok: true, binDir, pauseImage: ref("pause"), helloImage: ref("hello") };
}
