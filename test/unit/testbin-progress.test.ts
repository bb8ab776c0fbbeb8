// scripts/testbin.sh keeps talking while a long build runs: a line at least
// every interval naming what builds and the time so far, so a ten-minute
// kube-apiserver build does not look like a hang. `go` is replaced by a stub
// on PATH whose builds are slow; the interval is shortened to keep this quick.

import { spawn } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "../..");
const SCRIPT = path.join(ROOT, "scripts/testbin.sh");

// Answers what testbin.sh asks go: module versions and times, and builds that
// take $STUB_SLOW_SECONDS for the command named $STUB_SLOW (and fail for $STUB_FAIL).
const STUB_GO = `#!/usr/bin/env bash
set -euo pipefail
case "$1" in
  list)
    case "$4" in
      *Time*) echo 2026-01-01T00:00:00Z ;;
      *) case "$5" in
           k8s.io/kubernetes) echo v1.36.3 ;;
           go.etcd.io/*) echo v3.6.8 ;;
           helm.sh/*) echo v3.21.4 ;;
         esac ;;
    esac ;;
  build)
    out=""; prev=""
    for a in "$@"; do [ "$prev" = "-o" ] && out=$a; prev=$a; done
    name=$(basename "$out")
    [ "$name" = "\${STUB_FAIL:-}" ] && { echo "stub: $name does not build" >&2; exit 3; }
    [ "$name" = "\${STUB_SLOW:-}" ] && sleep "\${STUB_SLOW_SECONDS:-0}"
    printf '#!/bin/sh\\n' > "$out"; chmod +x "$out" ;;
  version) echo "go version go1.26.0 stub" ;;
esac
`;

interface Run {
  code: number | null;
  stdout: string;
  /** Each stderr line with the ms since start at which it arrived. */
  lines: { at: number; text: string }[];
  exitedAt: number;
  /** When stdout and stderr closed: a ticker left behind would hold them open. */
  closedAt: number;
}

function runScript(env: Record<string, string>): Promise<Run> {
  const started = Date.now();
  const child = spawn("bash", [SCRIPT], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let pending = "";
  const lines: Run["lines"] = [];
  let exitedAt = 0;
  child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
  child.stderr.on("data", (c: Buffer) => {
    pending += c.toString();
    for (let nl = pending.indexOf("\n"); nl >= 0; nl = pending.indexOf("\n")) {
      lines.push({ at: Date.now() - started, text: pending.slice(0, nl) });
      pending = pending.slice(nl + 1);
    }
  });
  child.on("exit", () => (exitedAt = Date.now() - started));
  return new Promise((resolve) =>
    child.on("close", (code) => resolve({ code, stdout, lines, exitedAt, closedAt: Date.now() - started })),
  );
}

describe("scripts/testbin.sh progress", { timeout: 60_000 }, () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  const setup = () => {
    const bin = mkdtempSync(path.join(os.tmpdir(), "testbin-stub-"));
    dirs.push(bin);
    writeFileSync(path.join(bin, "go"), STUB_GO);
    chmodSync(path.join(bin, "go"), 0o755);
    return {
      cache: path.join(bin, "cache"),
      env: { PATH: `${bin}:${process.env.PATH}`, EDGE_TESTBIN_DIR: path.join(bin, "cache") },
    };
  };

  it("says what is building and the time so far, at least every interval, while a build is slow", async () => {
    const { cache, env } = setup();
    const run = await runScript({
      ...env,
      EDGE_TESTBIN_PROGRESS_SECONDS: "2",
      STUB_SLOW: "kube-apiserver",
      STUB_SLOW_SECONDS: "7",
    });
    const stderr = run.lines.map((l) => l.text).join("\n");
    expect(run.code, stderr).toBe(0);
    const dir = path.join(cache, "k8s-1.36.3_etcd-3.6.8_helm-3.21.4");
    // stdout is the directory alone: the progress lines never reach it.
    expect(run.stdout).toBe(`${dir}\n`);
    for (const b of ["kube-apiserver", "kubectl", "etcd", "helm"])
      expect(existsSync(path.join(dir, b)), b).toBe(true);

    const ticks = run.lines.filter((l) =>
      l.text.startsWith("testbin: still building kube-apiserver v1.36.3: "),
    );
    expect(ticks.length, stderr).toBeGreaterThanOrEqual(2);
    expect(ticks.length, stderr).toBeLessThanOrEqual(4);
    const soFar = ticks.map((t) => {
      const m = /: (\d+)m(\d\d)s so far \(\d\d:\d\d:\d\d\)$/.exec(t.text);
      expect(m, t.text).not.toBeNull();
      return Number(m?.[1]) * 60 + Number(m?.[2]);
    });
    for (let i = 1; i < soFar.length; i++) expect(soFar[i]).toBeGreaterThan(soFar[i - 1] ?? 0);
    expect(stderr).toMatch(/^testbin: built kube-apiserver v1\.36\.3 in 0m0[6-9]s$/m);

    // From the step's first line to its last, no silence longer than the interval
    // (2 s) and a margin for a busy machine.
    const first = run.lines.findIndex((l) => l.text.startsWith("testbin: building kube-apiserver"));
    const last = run.lines.findIndex((l) => l.text.startsWith("testbin: built kube-apiserver"));
    const during = run.lines.slice(first, last + 1);
    const gaps = during.slice(1).map((l, i) => l.at - (during[i]?.at ?? 0));
    expect(Math.max(...gaps), stderr).toBeLessThan(3500);
    // Only the slow build ticks; the ticker ends with its build.
    expect(
      run.lines.filter((l) => l.text.includes("still building") && !l.text.includes("kube-apiserver")),
    ).toEqual([]);
    expect(run.closedAt - run.exitedAt).toBeLessThan(1000);
  });

  it("stops the ticker when a build fails, and exits non-zero", async () => {
    const { env } = setup();
    const run = await runScript({
      ...env,
      EDGE_TESTBIN_PROGRESS_SECONDS: "1",
      STUB_SLOW: "etcd",
      STUB_SLOW_SECONDS: "2",
      STUB_FAIL: "helm",
    });
    const stderr = run.lines.map((l) => l.text).join("\n");
    expect(run.code, stderr).not.toBe(0);
    expect(stderr).toContain("stub: helm does not build");
    expect(stderr).toMatch(/^testbin: still building etcd v3\.6\.8: 0m0\ds so far/m);
    expect(stderr).not.toContain("built helm");
    expect(run.lines.at(-1)?.text).toBe("stub: helm does not build");
    expect(run.closedAt - run.exitedAt).toBeLessThan(1000);
  });

  it("prints only the directory when the binaries are cached", async () => {
    const { env } = setup();
    const first = await runScript(env);
    expect(first.code).toBe(0);
    const again = await runScript(env);
    expect(again.code).toBe(0);
    expect(again.stdout).toBe(first.stdout);
    expect(again.lines).toEqual([]);
  });
});
