// `npm run demo -- --out-of-cluster`, run as a user runs it (the built demo,
// as a process), with gRPC's own xDS client and backends as processes: it
// prints the lab's lines from what that client holds and where its RPCs went
// and exits 0, `--keep`
// leaves a cluster that kubectl can use until Ctrl-C, and either way no
// process it started is left behind.

import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, inject, it } from "vitest";
import { CLI } from "../../tools/testenv/operator.js";
import { run, waitFor } from "../../tools/testenv/process.js";
import { DEMO, LAB_LINES, REST_OF_THE_SHOW, nonEmptyLines } from "../harness/demo-lines.js";

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
  const child = spawn(process.execPath, [DEMO, "--out-of-cluster", ...args], {
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

/** The demo's workload processes (backends and the xDS client): their command lines name the built workload. */
function workloadProcesses(): string[] {
  return execFileSync("ps", ["-eo", "pid=,args="], { encoding: "utf8" })
    .split("\n")
    .filter((l) => l.includes("dist/tools/demo-workloads/workload.js") && !l.includes("supervise"));
}

/** Samples the demo's processes while it runs, so "none left" is not vacuous. */
function sampleProcesses(demo: Demo): { max(): number; maxWorkloads(): number; stop(): void } {
  let max = 0;
  let maxWorkloads = 0;
  const timer = setInterval(() => {
    max = Math.max(max, processesOf(demo).length);
    maxWorkloads = Math.max(maxWorkloads, workloadProcesses().length);
  }, 500);
  return { max: () => max, maxWorkloads: () => maxWorkloads, stop: () => clearInterval(timer) };
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
  expect(workloadProcesses()).toEqual([]);
}

const lines = nonEmptyLines;

let running: Demo | undefined;
afterEach(() => {
  // A failed test must not leave a demo (and its control plane) running.
  if (running?.child.exitCode === null) running.child.kill("SIGKILL");
  running = undefined;
});

describe("the demo", () => {
  it("has its own entry point and help; the shipped CLI has no demo command", async () => {
    const help = await run(process.execPath, [DEMO, "--help"]);
    expect(help.code, help.stderr).toBe(0);
    expect(help.stdout).toMatch(/^Usage: npm run demo -- \[--keep\] \[--out-of-cluster\]$/m);
    expect(help.stdout).toMatch(/^ {2}--out-of-cluster /m);
    const bad = await run(process.execPath, [DEMO, "--no-such-flag"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^demo: Unknown option '--no-such-flag'/);

    const cli = await run(process.execPath, [CLI, "demo"]);
    expect(cli.code).toBe(2);
    expect(cli.stderr).toMatch(/unknown command "demo"/);
    const usage = await run(process.execPath, [CLI, "--help"]);
    expect(usage.stdout).not.toMatch(/demo/);
  });

  it("plays the lab's lifecycle with the lab's values, exits 0 and leaves nothing running", async () => {
    const demo = (running = startDemo());
    const sampler = sampleProcesses(demo);
    const code = await demo.exited;
    sampler.stop();
    const out = lines(demo.stdout());
    expect(code, `${demo.stdout()}\n${demo.stderr()}`).toBe(0);
    LAB_LINES.forEach((re, i) => expect(out[i]).toMatch(re));
    // The rest of the show: both versions, the refused route, the data plane.
    for (const re of REST_OF_THE_SHOW) expect(demo.stdout()).toMatch(re);
    expect(demo.stderr()).toMatch(/helm install edge/);
    expect(demo.stderr()).toMatch(/the data plane: gRPC's own xDS client \(@grpc\/grpc-js-xds\)/);
    expect(demo.stderr()).not.toMatch(/debug\/dataplane/);
    // etcd, kube-apiserver, serve and watch, each under its supervisor.
    expect(sampler.max()).toBeGreaterThanOrEqual(8);
    expect(sampler.maxWorkloads()).toBeGreaterThanOrEqual(4);
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
