// `edge-operator demo` on the real cluster, run as a user runs it (the built
// CLI, as a process, with --keep): it starts the cluster, builds and loads the
// image, installs the chart in cluster, prints the lab's five lines with the
// lab's values from the operator in pods, leaves a cluster kubectl can use,
// and on Ctrl-C tears it all down: no cluster process is left and the next
// start is free to take the machine.

import { execFileSync, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { clusterUnsupported } from "../../src/testenv/cluster.js";
import { LOCK_FILE } from "../../src/testenv/cluster-config.js";
import { CLI } from "../harness/operator.js";
import { run, waitFor } from "../harness/process.js";

const unsupported = clusterUnsupported();
if (unsupported && !process.env.CI)
  process.stderr.write(`\n!!! SKIPPING THE CLUSTER DEMO TEST: ${unsupported} !!!\n\n`);

const LAB_LINES = [
  /^apply \(service missing\): {7}Accepted=false\(ServiceNotFound\) Programmed=false dpPushes=0$/,
  /^service created \(self-heal\): {3}Accepted=true\(Valid\) Programmed=true\(Synced\) dpPushes=1$/,
  /^reconcile x2 \(idempotent\): {5}Accepted=true Programmed=true dpPushes=1$/,
  /^delete issued \(Terminating\): {3}exists=true deletionTimestamp=set finalizer=net\.10xdev\.io\/deprogram\b/,
  /^reconcile \(finalizer cleanup\): exists=false dpPushes=2 dpRoutes=0$/,
];

/** The cluster's processes: every one runs from the cluster's directories. */
function clusterProcesses(): string[] {
  return execFileSync("ps", ["-eo", "pid=,args="], { encoding: "utf8" })
    .split("\n")
    .filter(
      (l) => /\/(kubelet|containerd|kube-apiserver|kube-proxy|etcd) /.test(l) && l.includes("edge-cluster"),
    );
}

describe.skipIf(unsupported !== undefined && !process.env.CI)(
  "edge-operator demo on the real cluster",
  () => {
    it("plays the lab's lines against the operator in pods, keeps the cluster for kubectl, and Ctrl-C puts it all away", async () => {
      // Take turns with other cluster suites on this machine: one cluster at a time.
      await waitFor(
        "no other cluster on this machine",
        async () => (existsSync(LOCK_FILE) ? undefined : true),
        900_000,
        2000,
      );
      const child = spawn(process.execPath, [CLI, "demo", "--keep"], { stdio: ["ignore", "pipe", "pipe"] });
      let out = "";
      let err = "";
      child.stdout.on("data", (c: Buffer) => (out += c.toString("utf8")));
      child.stderr.on("data", (c: Buffer) => (err += c.toString("utf8")));
      let spawnError: Error | undefined;
      child.on("error", (e) => (spawnError = e));
      const exited = new Promise<number>((resolve) =>
        child.on("exit", (code, sig) => resolve(code ?? (sig ? 128 : 1))),
      );
      try {
        const kubeconfig = await waitFor(
          "the demo to print its KUBECONFIG",
          async () => {
            // Ended by a signal too (exitCode stays null then), or never started: fail now, not after the bound.
            if (spawnError) throw new Error(`demo did not start: ${spawnError.message}`);
            if (child.exitCode !== null || child.signalCode !== null)
              throw new Error(`demo exited early (${child.exitCode ?? child.signalCode}):\n${out}\n${err}`);
            return /^export KUBECONFIG=(\S+)$/m.exec(out)?.[1];
          },
          1_500_000,
          500,
        );
        const lines = out.split("\n").filter((l) => l.trim() !== "");
        LAB_LINES.forEach((re, i) => expect(lines[i], out).toMatch(re));
        expect(out).toMatch(/canary as v2: \{"hostnames":\["shop\.example\.com"\],"rules"/);
        expect(out).toMatch(/invalid route refused: +The EdgeRoute "broken" is invalid: .*70000/);
        expect(err).toMatch(/helm install edge charts\/edge-operator -n edge-system \(in cluster/);
        expect(err).not.toMatch(/NO REAL CLUSTER/);

        // The user's kubectl, with the printed KUBECONFIG: the operator runs in pods.
        const kubectl = /^(\S+\/kubectl) get edgeroutes/m.exec(out)?.[1] ?? "";
        const env = { ...process.env, KUBECONFIG: kubeconfig };
        const pods = await run(kubectl, ["get", "pods", "-n", "edge-system", "-o", "name"], { env });
        expect(pods.code, pods.stderr).toBe(0);
        expect(pods.stdout).toMatch(/pod\/edge-edge-operator-server-/);
        expect(pods.stdout).toMatch(/pod\/edge-edge-operator-watcher-/);
        const routes = await run(kubectl, ["get", "edgeroutes", "-A", "-o", "name"], { env });
        expect(routes.stdout.trim().split("\n").sort()).toEqual([
          "edgeroute.net.10xdev.io/canary",
          "edgeroute.net.10xdev.io/web",
        ]);
        expect(clusterProcesses().length).toBeGreaterThanOrEqual(5);

        child.kill("SIGINT");
        expect(await exited, err).toBe(0);
        expect(err).toMatch(/SIGINT: tearing down/);
        expect(clusterProcesses()).toEqual([]);
        expect(existsSync(LOCK_FILE)).toBe(false);
        expect(existsSync(path.dirname(kubeconfig))).toBe(false);
      } finally {
        if (child.exitCode === null) {
          child.kill("SIGINT");
          await Promise.race([exited, new Promise((r) => setTimeout(r, 120_000))]);
        }
      }
    }, 1_800_000);
  },
);
