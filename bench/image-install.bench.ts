// The operator's image and the chart in the real cluster: how long
// `npm run image` takes cold (an empty cache: the image writer, the Node base,
// the Dockerfile through buildah with its two `npm ci`s from the registry) and
// cached (same inputs), and how long `helm install` with the chart's defaults
// takes until every pod of the release is Ready, on one cluster, installed and
// uninstalled RUNS times. The image's figures include the registry's answers;
// the install's the kubelet starting four containers.
// Run: npm run build && npm run bench:image   (COLD=2 CACHED=3 RUNS=3 by default; root on Linux)

import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { clusterUnsupported, startCluster } from "../tools/testenv/cluster.js";
import { buildOperatorImage } from "../tools/testenv/image.js";
import { componentPods, helmInstall, release } from "../tools/testenv/operator-in-cluster.js";
import { must } from "../tools/testenv/process.js";
import { waitFor } from "../tools/testenv/process.js";
import { fmt, summarize } from "./stats.js";

const COLD = Number(process.env.COLD ?? 2);
const CACHED = Number(process.env.CACHED ?? 3);
const RUNS = Number(process.env.RUNS ?? 3);
const say = (l: string) => process.stderr.write(`bench: ${l}\n`);
const line = (label: string, xs: number[]) => {
  const s = summarize(xs);
  return `${label}: n=${s.n} min=${fmt(s.min, 1)} s p50=${fmt(s.p50, 1)} s max=${fmt(s.max, 1)} s  [${xs.map((x) => fmt(x, 1)).join(", ")}]`;
};

const unsupported = clusterUnsupported();
if (unsupported) {
  say(`cannot run: ${unsupported}`);
  process.exit(1);
}

const cold: number[] = [];
for (let i = 0; i < COLD; i++) {
  const dir = mkdtempSync(path.join(os.tmpdir(), "edge-image-bench-"));
  process.env.EDGE_IMAGE_DIR = dir;
  const img = await buildOperatorImage({ progress: () => undefined });
  cold.push(img.seconds);
  say(`cold build ${i + 1}: ${fmt(img.seconds, 1)} s`);
  rmSync(dir, { recursive: true, force: true });
}
delete process.env.EDGE_IMAGE_DIR;
const image = await buildOperatorImage({ progress: () => undefined });
const cached: number[] = [];
for (let i = 0; i < CACHED; i++) cached.push((await buildOperatorImage()).seconds);

const cluster = await startCluster({ progress: say, waitForOtherMs: 1_200_000 });
const install: number[] = [];
try {
  await cluster.ctrImport(image.tar);
  const rel = release();
  for (let i = 0; i < RUNS; i++) {
    const started = performance.now();
    await helmInstall(cluster, rel, image);
    await waitFor(
      "every pod Ready",
      async () => {
        const pods = [
          ...(await componentPods(cluster, rel, "server")),
          ...(await componentPods(cluster, rel, "watcher")),
        ];
        return pods.length === 4 && pods.every((p) => p.ready) ? true : undefined;
      },
      300_000,
      250,
    );
    install.push((performance.now() - started) / 1000);
    say(`install ${i + 1}: ${fmt(install[i] ?? NaN, 1)} s`);
    await must("helm uninstall", cluster.helm(["uninstall", rel.name, "-n", rel.namespace, "--wait"]));
    await waitFor(
      "the release's pods gone",
      async () =>
        (await cluster.kubectl(["get", "pods", "-n", rel.namespace, "-o", "name"])).stdout.trim() === ""
          ? true
          : undefined,
      180_000,
      500,
    );
  }
} finally {
  await cluster.stop();
}

console.log(
  `machine: ${os.cpus().length} cores, load average ${os
    .loadavg()
    .map((l) => fmt(l, 1))
    .join(" ")}`,
);
console.log(line("image, cold (empty cache)", cold));
console.log(line("image, cached (same inputs)", cached));
console.log(line("helm install (defaults) to all 4 pods Ready", install));
