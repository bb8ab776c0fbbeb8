// The demo's workload as a local process, for the demo out of a cluster (and
// for tests): `node dist/tools/demo-workloads/workload.js ARGS`, supervised
// so that it never outlives the process that started it. It answers once the
// workload says where it listens.

import { existsSync } from "node:fs";
import path from "node:path";
import { supervise, waitFor, type Supervised } from "../testenv/process.js";
import { REPO_ROOT } from "../testenv/testbin.js";

/** What `npm run build` makes of tools/demo-workloads/workload.ts. */
export const WORKLOAD_JS = path.join(REPO_ROOT, "dist/tools/demo-workloads/workload.js");
const WORKLOAD_TS = path.join(REPO_ROOT, "tools/demo-workloads/workload.ts");

export interface LocalWorkload {
  readonly process: Supervised;
  readonly mode: "backend" | "client";
  /** The port it listens on: the gRPC port of a backend, the status port of a client. */
  readonly port: number;
  /** A client's status endpoint, e.g. http://127.0.0.1:40123 (for readClientState and setLink). */
  readonly statusUrl: string | undefined;
  /** SIGTERM, then SIGKILL after 5 s. */
  stop(): Promise<number>;
}

export interface LocalWorkloadOptions {
  /** The process's name in messages (default: the mode). */
  readonly name?: string;
  /** "source": run the TypeScript through tsx (tests that run without a build); default "dist". */
  readonly entry?: "dist" | "source";
  readonly env?: NodeJS.ProcessEnv;
  readonly logFile?: string;
  /** How long to wait for it to listen (default 20 s). */
  readonly timeoutMs?: number;
}

const BACKEND_READY = /^backend \S+ listening on (\S+):(\d+)$/m;
const CLIENT_READY = /^status http:\/\/(\S+):(\d+)$/m;

/**
 * Starts the workload with `args` (clientArgs() or backendArgs() of
 * workloads.ts: the mode first). A port of 0 is the kernel's pick, read back
 * from what the workload prints.
 */
export async function startLocalWorkload(
  args: readonly string[],
  opts: LocalWorkloadOptions = {},
): Promise<LocalWorkload> {
  const mode = args[0];
  if (mode !== "backend" && mode !== "client")
    throw new Error(`the workload's mode is backend or client, not ${JSON.stringify(mode)}`);
  const fromSource = opts.entry === "source";
  if (!fromSource && !existsSync(WORKLOAD_JS))
    throw new Error(`${WORKLOAD_JS} is missing: run npm run build first`);
  const nodeArgs = fromSource ? ["--import", "tsx", WORKLOAD_TS] : [WORKLOAD_JS];
  const name = opts.name ?? mode;
  const proc = supervise(name, process.execPath, [...nodeArgs, ...args], {
    cwd: REPO_ROOT,
    ...(opts.env ? { env: opts.env } : {}),
    ...(opts.logFile ? { logFile: opts.logFile } : {}),
  });
  const ready = mode === "backend" ? BACKEND_READY : CLIENT_READY;
  let match: RegExpExecArray;
  try {
    match = await Promise.race([
      waitFor(
        `the workload ${name} to listen`,
        async () => ready.exec(proc.output()) ?? undefined,
        opts.timeoutMs ?? 20_000,
        50,
      ),
      proc.exited.then((code): never => {
        throw new Error(`the workload ${name} exited (code ${code}) before it listened`);
      }),
    ]);
  } catch (e) {
    await proc.stop();
    throw new Error(`${(e as Error).message}\n${proc.output().trim().slice(-2000)}`);
  }
  const host = match[1] === "0.0.0.0" ? "127.0.0.1" : (match[1] as string);
  const port = Number(match[2]);
  return {
    process: proc,
    mode,
    port,
    statusUrl: mode === "client" ? `http://${host.includes(":") ? `[${host}]` : host}:${port}` : undefined,
    stop: () => proc.stop(),
  };
}
