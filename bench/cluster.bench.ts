// The real single-node cluster: the build script's time with its cache present,
// start → Node Ready → ready for pods, stop, and the memory (PSS) of every
// process of the cluster with two small pods running. The floor, measured in the
// same run: the out-of-cluster control plane (etcd + kube-apiserver) start.

import { spawnSync } from "node:child_process";
import os from "node:os";
import path from "node:path";
import { startCluster } from "../tools/testenv/cluster.js";
import { startControlPlane } from "../tools/testenv/control-plane.js";
import { waitFor } from "../tools/testenv/process.js";
import { REPO_ROOT } from "../tools/testenv/testbin.js";
import { fmt, summarize } from "./stats.js";

const runs = Number(process.env.RUNS ?? 3);
const say = (l: string): boolean => process.stderr.write(`${l}\n`);

function timeScript(script: string): number {
  const t = process.hrtime.bigint();
  const res = spawnSync("bash", [path.join(REPO_ROOT, script)], { stdio: ["ignore", "pipe", "pipe"] });
  if (res.status !== 0) throw new Error(`${script} failed: ${res.stderr.toString()}`);
  return Number(process.hrtime.bigint() - t) / 1e9;
}

const cached = [1, 2, 3].map(() => timeScript("scripts/cluster-bin.sh"));
say(`cluster-bin.sh with its cache present: ${cached.map((s) => fmt(s)).join(", ")} s`);

const floor: number[] = [];
const apiserver: number[] = [];
const nodeReady: number[] = [];
const ready: number[] = [];
const stop: number[] = [];
const memory: Record<string, number>[] = [];
for (let i = 0; i < runs; i++) {
  const cp = await startControlPlane();
  floor.push(cp.startSeconds);
  await cp.stop();

  const c = await startCluster({ waitForOtherMs: 900_000, progress: (l) => say(`cluster: ${l}`) });
  apiserver.push(c.timings.apiserverReady);
  nodeReady.push(c.timings.nodeReady);
  ready.push(c.timings.ready);
  try {
    await c.ctrImport(c.helloImage.tar);
    for (const name of ["hello-1", "hello-2"]) {
      const res = await c.kubectl(["run", name, `--image=${c.helloImage.ref}`, "--image-pull-policy=Never"]);
      if (res.code !== 0) throw new Error(res.stderr);
    }
    await waitFor(
      "two pods Running",
      async () => {
        const r = await c.kubectl(["get", "pods", "-o", "jsonpath={.items[*].status.phase}"]);
        return r.stdout === "Running Running" ? true : undefined;
      },
      120_000,
      500,
    );
    // Let start-up work settle before reading memory.
    await new Promise((r) => setTimeout(r, 10_000));
    memory.push(await c.memory());
  } finally {
    const t = process.hrtime.bigint();
    await c.stop();
    stop.push(Number(process.hrtime.bigint() - t) / 1e9);
  }
  say(
    `run ${i + 1}/${runs}: control plane ${fmt(floor[i] ?? 0)} s; cluster apiserver ${fmt(apiserver[i] ?? 0)} s, ` +
      `node Ready ${fmt(nodeReady[i] ?? 0)} s, ready ${fmt(ready[i] ?? 0)} s, stop ${fmt(stop[i] ?? 0)} s`,
  );
}

const names = [...new Set(memory.flatMap((m) => Object.keys(m)))].sort();
const memSummary = Object.fromEntries(names.map((n) => [n, summarize(memory.map((m) => m[n] ?? 0)).p50]));
const total = summarize(memory.map((m) => Object.values(m).reduce((a, b) => a + b, 0)));
const readyRatio = summarize(ready.map((r, i) => r / (floor[i] ?? 1)));
const result = {
  bench: "cluster",
  cpus: os.cpus().length,
  load: os.loadavg()[0],
  buildCachedSeconds: summarize(cached),
  controlPlaneStartSeconds: summarize(floor),
  apiserverReadySeconds: summarize(apiserver),
  nodeReadySeconds: summarize(nodeReady),
  readySeconds: summarize(ready),
  readyOverControlPlane: readyRatio,
  stopSeconds: summarize(stop),
  pssMiBMedianByExecutable: memSummary,
  pssMiBTotal: total,
};
console.log(JSON.stringify(result));
console.log(
  `over ${runs} runs (p50, min–max): node Ready ${fmt(result.nodeReadySeconds.p50)} s ` +
    `(${fmt(result.nodeReadySeconds.min)}–${fmt(result.nodeReadySeconds.max)}), ready ${fmt(result.readySeconds.p50)} s, ` +
    `${fmt(readyRatio.p50)}× the control plane's ${fmt(result.controlPlaneStartSeconds.p50)} s; stop ${fmt(result.stopSeconds.p50)} s; ` +
    `PSS ${fmt(total.p50, 0)} MiB in all: ${names.map((n) => `${n} ${fmt(memSummary[n] ?? 0, 0)}`).join(", ")}`,
);
