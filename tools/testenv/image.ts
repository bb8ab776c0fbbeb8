// The operator's image, built without Docker by scripts/image.sh (the
// repository's Dockerfile through buildah, FROM a Node base image made
// locally), cached by the content hash of its inputs; and the demo's workload
// image (tools/demo-workloads: gRPC backends and an xDS client), built by the
// same script FROM the same base. The script's last two lines are the tarball
// and the image reference.

import { spawn } from "node:child_process";
import path from "node:path";
import { REPO_ROOT } from "./testbin.js";

export interface OperatorImage {
  /** A docker-archive tarball: `ctr images import` and `buildah pull docker-archive:` read it. */
  readonly tar: string;
  /** NAME:TAG, e.g. localhost/edge-operator:0123456789ab (the tag is the inputs' hash). */
  readonly ref: string;
  readonly repository: string;
  readonly tag: string;
  /** Seconds the script took (a cached image: well under one). */
  readonly seconds: number;
}

export interface BuildImageOptions {
  /** Another repository name for the image (EDGE_IMAGE_REPOSITORY). */
  repository?: string;
  /** Where the script's progress lines go; stderr by default. */
  progress?: (line: string) => void;
}

/** The demo's workload image: the same shape (localhost/edge-demo-workloads:TAG). */
export type WorkloadImage = OperatorImage;

/** Builds (or finds in the cache) the operator's image. */
export function buildOperatorImage(opts: BuildImageOptions = {}): Promise<OperatorImage> {
  return runImageScript([], opts);
}

/**
 * Builds (or finds in the cache) the demo's workload image. Its program is
 * the compiled dist/tools/demo-workloads/workload.js: `npm run build` first.
 */
export function buildWorkloadImage(opts: BuildImageOptions = {}): Promise<WorkloadImage> {
  return runImageScript(["demo-workloads"], opts);
}

function runImageScript(args: readonly string[], opts: BuildImageOptions): Promise<OperatorImage> {
  const started = performance.now();
  const env = { ...process.env };
  if (opts.repository) env.EDGE_IMAGE_REPOSITORY = opts.repository;
  const child = spawn("bash", [path.join(REPO_ROOT, "scripts/image.sh"), ...args], {
    cwd: REPO_ROOT,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
  child.stderr.setEncoding("utf8").on("data", (d: string) => {
    err = (err + d).slice(-8000);
    for (const line of d.split("\n"))
      if (line.trim()) (opts.progress ?? ((l) => process.stderr.write(l + "\n")))(line);
  });
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code) => {
      const lines = out.trim().split("\n");
      const tar = lines[lines.length - 2] ?? "";
      const ref = lines[lines.length - 1] ?? "";
      const colon = ref.lastIndexOf(":");
      if (code !== 0 || !tar.endsWith(".tar") || colon < 0) {
        const what = ["scripts/image.sh", ...args].join(" ");
        reject(new Error(`${what} failed (exit code ${code}):\n${err.trim()}`));
        return;
      }
      resolve({
        tar,
        ref,
        repository: ref.slice(0, colon),
        tag: ref.slice(colon + 1),
        seconds: (performance.now() - started) / 1000,
      });
    });
  });
}
