// `edge-operator demo`, run as a user runs it (the built CLI, as a process):
// it prints the lab's five lines with the lab's values and exits 0, `--keep`
// leaves a cluster that kubectl can use until Ctrl-C, and either way no
// process it started is left behind.

import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, inject, it } from "vitest";
import { CLI } from "../harness/operator.js";
import { run, waitFor } from "../harness/process.js";

const LAB_LINES = [
  /^apply \(service missing\): {7}Accepted=false\(ServiceNotFound\) Programmed=false dpPushes=0$/,
  /^service created \(self-heal\): {3}Accepted=true\(Valid\) Programmed=true\(Synced\) dpPushes=1$/,
  /^reconcile x2 \(idempotent\): {5}Accepted=true Programmed=true dpPushes=1$/,
  /^delete issued \(Terminating\): {3}exists=true deletionTimestamp=set finalizer=net\.10xdev\.io\/deprogram\b/,
  /^reconcile \(finalizer cleanup\): exists=false dpPushes=2 dpRoutes=0$/,
];

interface Demo {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  exited: Promise<number>;
  /** Every process the demo starts names its control plane's directory, which carries this. */
  marker: string;
}

function startDemo(args: string[] = []): Demo {
  const testbin = inject("testbinDir");
  // Out of cluster: the real-cluster demo has its own test (test/e2e/cluster-demo.test.ts).
  const child = spawn(process.execPath, [CLI, "demo", "--out-of-cluster", ...args], {
    env: { ...process.env, ...(testbin ? { EDGE_TESTBIN_BIN: testbin } : {}) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout?.on("data", (c: Buffer) => (out += c.toString("utf8")));
  child.stderr?.on("data", (c: Buffer) => (err += c.toString("utf8")));
  const exited = new Promise<number>((resolve) =>
    child.on("exit", (code, signal) => resolve(code ?? (signal ? 128 : 1))),
  );
  return { child, stdout: () => out, stderr: () => err, exited, marker: `edge-cp-demo-${child.pid}-` };
}

/** Processes whose command line names the demo's directory (etcd, kube-apiserver, serve, watch, their supervisors). */
function processesOf(demo: Demo): string[] {
  return execFileSync("ps", ["-eo", "pid=,args="], { encoding: "utf8" })
    .split("\n")
    .filter((l) => l.includes(demo.marker));
}

/** Samples the demo's processes while it runs, so "none left" is not vacuous. */
function sampleProcesses(demo: Demo): { max(): number; stop(): void } {
  let max = 0;
  const timer = setInterval(() => {
    max = Math.max(max, processesOf(demo).length);
  }, 500);
  return { max: () => max, stop: () => clearInterval(timer) };
}

async function nothingLeft(demo: Demo): Promise<void> {
  // Supervisors stop their process within 5 s of their parent's exit.
  await waitFor(
    "the demo's processes to be gone",
    async () => (processesOf(demo).length === 0 ? true : undefined),
    10_000,
    200,
  ).catch(() => undefined);
  expect(processesOf(demo)).toEqual([]);
}

const lines = (text: string) => text.split("\n").filter((l) => l.trim() !== "");

let running: Demo | undefined;
afterEach(() => {
  // A failed test must not leave a demo (and its control plane) running.
  if (running?.child.exitCode === null) running.child.kill("SIGKILL");
  running = undefined;
});

describe("edge-operator demo", () => {
  it("plays the lab's lifecycle with the lab's values, exits 0 and leaves nothing running", async () => {
    const demo = (running = startDemo());
    const sampler = sampleProcesses(demo);
    const code = await demo.exited;
    sampler.stop();
    const out = lines(demo.stdout());
    expect(code, `${demo.stdout()}\n${demo.stderr()}`).toBe(0);
    LAB_LINES.forEach((re, i) => expect(out[i]).toMatch(re));
    // The rest of the show: both versions, the refused route, the data plane.
    expect(demo.stdout()).toMatch(/\$ kubectl get edgeroutes\.v1\.net\.10xdev\.io\n\s+NAME\s+HOSTS/);
    expect(demo.stdout()).toMatch(/canary as v1: \{"host":"shop\.example\.com"/);
    expect(demo.stdout()).toMatch(/canary as v2: \{"hostnames":\["shop\.example\.com"\],"rules"/);
    expect(demo.stdout()).toMatch(
      /invalid route refused: +The EdgeRoute "broken" is invalid: spec\.rules\[0\]\.backends\[0\]\.port: Invalid value: 70000/,
    );
    expect(demo.stdout()).toMatch(/data plane \(memory sink\): +version=[0-9a-f]+ pushes=\d+/);
    expect(demo.stderr()).toMatch(/helm install edge/);
    // etcd, kube-apiserver, serve and watch, each under its supervisor.
    expect(sampler.max()).toBeGreaterThanOrEqual(8);
    await nothingLeft(demo);
  });

  it("--keep leaves a cluster kubectl can use until Ctrl-C, then tears it all down", async () => {
    const demo = (running = startDemo(["--keep"]));
    const kubeconfig = await waitFor(
      "the demo to print its KUBECONFIG",
      async () => {
        if (demo.child.exitCode !== null) throw new Error(`demo exited early:\n${demo.stderr()}`);
        return /^export KUBECONFIG=(\S+)$/m.exec(demo.stdout())?.[1];
      },
      150_000,
      200,
    );
    LAB_LINES.forEach((re, i) => expect(lines(demo.stdout())[i]).toMatch(re));

    const binDir = inject("testbinDir");
    const listed = await run(path.join(binDir, "kubectl"), ["get", "edgeroutes", "-o", "name"], {
      env: { ...process.env, KUBECONFIG: kubeconfig },
    });
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout.trim().split("\n").sort()).toEqual([
      "edgeroute.net.10xdev.io/canary",
      "edgeroute.net.10xdev.io/web",
    ]);
    expect(processesOf(demo).length).toBeGreaterThanOrEqual(8);

    demo.child.kill("SIGINT");
    expect(await demo.exited, demo.stderr()).toBe(0);
    expect(demo.stderr()).toMatch(/SIGINT: tearing down/);
    await nothingLeft(demo);
    expect(existsSync(kubeconfig)).toBe(false);
  });
});
