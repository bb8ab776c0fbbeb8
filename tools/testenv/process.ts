// Child processes for tests and the demo, each under scripts/supervise.sh so
// that none outlives the process that started it, whatever way that one ends.

import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream, type WriteStream } from "node:fs";
import net from "node:net";
import path from "node:path";
import { REPO_ROOT } from "./testbin.js";

const SUPERVISE = path.join(REPO_ROOT, "scripts/supervise.sh");

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface Supervised {
  readonly name: string;
  readonly child: ChildProcess;
  /** The last output of the process (stdout and stderr), for failure messages. */
  output(): string;
  /** Resolves with the exit code once the process has ended. */
  readonly exited: Promise<number>;
  /** SIGTERM, then SIGKILL after 5 s; resolves when it is gone. */
  stop(): Promise<number>;
  /** SIGKILL at once (a crash, for tests of recovery). */
  kill(): Promise<number>;
}

export interface SuperviseOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Also append all output to this file. */
  logFile?: string;
}

const MAX_KEPT = 256 * 1024;

export function supervise(
  name: string,
  cmd: string,
  args: readonly string[],
  opts: SuperviseOptions = {},
): Supervised {
  const child = spawn("bash", [SUPERVISE, cmd, ...args], {
    env: opts.env ?? process.env,
    cwd: opts.cwd,
    stdio: ["pipe", "pipe", "pipe"],
  });
  let kept = "";
  const log: WriteStream | undefined = opts.logFile
    ? createWriteStream(opts.logFile, { flags: "a" })
    : undefined;
  const onData = (chunk: Buffer): void => {
    kept += chunk.toString("utf8");
    if (kept.length > MAX_KEPT) kept = kept.slice(-MAX_KEPT / 2);
    log?.write(chunk);
  };
  child.stdout?.on("data", onData);
  child.stderr?.on("data", onData);
  const exited = new Promise<number>((resolve) => {
    child.on("exit", (code, signal) => {
      log?.end();
      resolve(code ?? (signal ? 128 : 1));
    });
  });
  const stop = async (): Promise<number> => {
    if (child.exitCode === null && child.signalCode === null) child.stdin?.end();
    return exited;
  };
  const kill = async (): Promise<number> => {
    // Kill the real process (the supervisor's child), not only the supervisor.
    if (child.pid !== undefined) {
      await run("pkill", ["-KILL", "-P", String(child.pid)]).catch(() => undefined);
    }
    child.stdin?.end();
    return exited;
  };
  return { name, child, output: () => kept, exited, stop, kill };
}

/** Runs a command to completion and collects its output. */
export function run(
  cmd: string,
  args: readonly string[],
  opts: { input?: string; env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number } = {},
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      env: opts.env ?? process.env,
      cwd: opts.cwd,
      stdio: ["pipe", "pipe", "pipe"],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on("data", (c: Buffer) => out.push(c));
    child.stderr.on("data", (c: Buffer) => err.push(c));
    const timer = setTimeout(() => child.kill("SIGKILL"), opts.timeoutMs ?? 120_000);
    child.on("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({
        code: code ?? (signal ? 128 : 1),
        stdout: Buffer.concat(out).toString("utf8"),
        stderr: Buffer.concat(err).toString("utf8"),
      });
    });
    // A command that exits without reading its input must not crash us with EPIPE.
    child.stdin.on("error", () => undefined);
    child.stdin.end(opts.input ?? "");
  });
}

/** A free TCP port on loopback (the kernel picks; the window before use is short). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Polls until `fn` returns a value other than undefined, or fails with the last reason. */
export async function waitFor<T>(
  what: string,
  fn: () => Promise<T | undefined>,
  timeoutMs = 30_000,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${(last as Error).message}` : ""}`,
      );
    }
    await sleep(everyMs);
  }
}

/** The command's stdout; throws with its own words when it exits non-zero. */
export async function must(what: string, p: Promise<RunResult>): Promise<string> {
  const r = await p;
  if (r.code !== 0) throw new Error(`${what} failed (exit ${r.code}): ${(r.stderr || r.stdout).trim()}`);
  return r.stdout;
}
