// The main job's wall time, as a user meets it: `npm ci && npm run demo` on a
// fresh clone with every cache empty (COLD runs: a clone of HEAD with a HOME of
// its own, so npm's cache, the Go module and build caches, the cluster's
// binaries and the image store all start empty; the Debian packages the scripts
// install stay, so remove buildah, runc, containernetworking-plugins and
// nftables first for a machine's first run), then `npm run demo` with its caches present
// (CACHED runs, in this checkout). The floor, measured in the same run: the
// cluster alone started and stopped (the demo cannot be quicker than its node).
// Run: npm run bench:demo   (COLD=1 CACHED=3 by default; root on Linux, nothing else busy)

import { spawn } from "node:child_process";
import { appendFileSync, mkdtempSync, mkdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { clusterUnsupported, startCluster } from "../tools/testenv/cluster.js";
import { REPO_ROOT } from "../tools/testenv/testbin.js";
import { fmt, summarize } from "./stats.js";

const COLD = Number(process.env.COLD ?? 1);
const CACHED = Number(process.env.CACHED ?? 3);
const say = (l: string) => process.stderr.write(`bench: ${l}\n`);

const unsupported = clusterUnsupported();
if (unsupported) {
  say(`cannot run: ${unsupported}`);
  process.exit(1);
}

/**
 * Runs a shell command to its end; its wall time in seconds, or throws with its tail.
 * With `log`, every line of its output goes there too, after the seconds since its start
 * (whole lines: a chunk of a pipe may end mid-line).
 */
async function timed(command: string, cwd: string, env: NodeJS.ProcessEnv, log?: string): Promise<number> {
  const started = performance.now();
  const child = spawn("bash", ["-c", command], { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
  let tail = "";
  const keep = (b: Buffer) => {
    tail = (tail + b.toString()).slice(-4000);
  };
  child.stdout.on("data", keep);
  child.stderr.on("data", keep);
  if (log !== undefined)
    for (const output of [child.stdout, child.stderr])
      createInterface({ input: output, crlfDelay: Infinity }).on("line", (line) => {
        const at = ((performance.now() - started) / 1000).toFixed(1).padStart(7);
        appendFileSync(log, `${at} ${line}\n`);
      });
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  if (code !== 0) throw new Error(`${command} exited ${code}:\n${tail}`);
  return (performance.now() - started) / 1000;
}

async function floor(): Promise<number> {
  const started = performance.now();
  const cluster = await startCluster({ progress: () => undefined, waitForOtherMs: 1_200_000 });
  await cluster.stop();
  return (performance.now() - started) / 1000;
}

const cold: { npmCi: number; demo: number }[] = [];
for (let i = 0; i < COLD; i++) {
  const dir = mkdtempSync(path.join(os.tmpdir(), "edge-demo-cold-"));
  const clone = path.join(dir, "edge-operator");
  const home = path.join(dir, "home");
  mkdirSync(home);
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home };
  for (const k of [
    "EDGE_TESTBIN_DIR",
    "EDGE_TESTBIN_BIN",
    "EDGE_IMAGE_DIR",
    "GOPATH",
    "GOMODCACHE",
    "GOCACHE",
  ]) {
    delete env[k];
  }
  try {
    await timed(`git clone -q ${JSON.stringify(REPO_ROOT)} ${JSON.stringify(clone)}`, dir, env);
    // Where the time went, kept after the clone is gone: each step's progress lines, timed.
    const log = path.join(os.tmpdir(), `edge-demo-cold-${Date.now()}.log`);
    say(`cold ${i + 1}/${COLD}: its output, timed, in ${log}`);
    const npmCi = await timed("npm ci --no-audit --no-fund", clone, env, log);
    const demo = await timed("npm run demo", clone, env, log);
    cold.push({ npmCi, demo });
    say(`cold ${i + 1}/${COLD}: npm ci ${fmt(npmCi, 1)} s, npm run demo ${fmt(demo, 1)} s`);
  } finally {
    // Go's module cache is read-only on disk.
    await timed(`chmod -R u+w ${JSON.stringify(dir)}`, os.tmpdir(), process.env).catch(() => 0);
    rmSync(dir, { recursive: true, force: true });
  }
}

const cached: number[] = [];
const floors: number[] = [];
for (let i = 0; i < CACHED; i++) {
  floors.push(await floor());
  cached.push(await timed("npm run demo", REPO_ROOT, process.env));
  say(
    `cached ${i + 1}/${CACHED}: npm run demo ${fmt(cached[i] ?? 0, 1)} s; the cluster alone ${fmt(floors[i] ?? 0, 1)} s`,
  );
}

const coldTotal = cold.map((c) => c.npmCi + c.demo);
const result = {
  bench: "demo",
  cpus: os.cpus().length,
  load: os.loadavg(),
  coldNpmCiSeconds: summarize(cold.map((c) => c.npmCi)),
  coldDemoSeconds: summarize(cold.map((c) => c.demo)),
  coldTotalSeconds: summarize(coldTotal),
  cachedDemoSeconds: summarize(cached),
  clusterAloneSeconds: summarize(floors),
  cachedOverClusterAlone: summarize(cached.map((c, i) => c / (floors[i] ?? 1))),
};
console.log(JSON.stringify(result));
console.log(
  `cold (npm ci && npm run demo): ${coldTotal.map((s) => fmt(s, 0)).join(", ")} s; ` +
    `cached npm run demo: ${cached.map((s) => fmt(s, 1)).join(", ")} s, ` +
    `${fmt(result.cachedOverClusterAlone.p50)}× the cluster alone (${fmt(result.clusterAloneSeconds.p50, 1)} s)`,
);
