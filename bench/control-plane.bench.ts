// Control-plane start to ready: from spawning etcd to kube-apiserver answering
// /readyz, over several cold starts (fresh data directory each time).

import os from "node:os";
import { startControlPlane } from "../tools/testenv/control-plane.js";
import { fmt, summarize } from "./stats.js";

const runs = Number(process.env.RUNS ?? 7);
const samples: number[] = [];
for (let i = 0; i < runs; i++) {
  const cp = await startControlPlane();
  samples.push(cp.startSeconds);
  process.stderr.write(`run ${i + 1}/${runs}: ${fmt(cp.startSeconds)} s\n`);
  await cp.stop();
}
const s = summarize(samples);
console.log(
  JSON.stringify({
    bench: "control-plane-start",
    unit: "s",
    cpus: os.cpus().length,
    load: os.loadavg()[0],
    ...s,
  }),
);
console.log(
  `start to ready over ${s.n} runs: min ${fmt(s.min)} s, p50 ${fmt(s.p50)} s, p90 ${fmt(s.p90)} s, max ${fmt(s.max)} s`,
);
