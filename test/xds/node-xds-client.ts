// @grpc/grpc-js-xds in a child process (xds-call-main.ts) behind the same
// interface as grpc-go's (test/harness/xds-go.ts), so one test body drives
// either: its own bootstrap (read once per process), its own node id, and a
// dial map for backends published under TEST-NET-1 addresses.

import { spawn } from "node:child_process";
import path from "node:path";
import { createInterface } from "node:readline";
import { REPO_ROOT } from "../harness/testbin.js";
import type { GoCallResult, GoXdsClient } from "../harness/xds-go.js";

const MAIN = path.join(REPO_ROOT, "test/xds/xds-call-main.ts");

export interface NodeXdsClientOptions {
  readonly adsPort: number;
  readonly nodeId: string;
  /** "FROM=TO,..." (dial-map.ts). */
  readonly dialMap?: string;
}

type Answer = { id: number; ok: boolean; backend?: string; code?: string; message?: string; ms?: number };

export async function startNodeXdsClient(opts: NodeXdsClientOptions): Promise<GoXdsClient> {
  const bootstrap = {
    xds_servers: [
      {
        server_uri: `127.0.0.1:${opts.adsPort}`,
        channel_creds: [{ type: "insecure" }],
        server_features: ["xds_v3"],
      },
    ],
    node: { id: opts.nodeId, locality: {} },
  };
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    GRPC_XDS_BOOTSTRAP_CONFIG: JSON.stringify(bootstrap),
    EDGE_DIAL_MAP: opts.dialMap ?? "",
  };
  delete env.GRPC_XDS_BOOTSTRAP;
  const child = spawn(process.execPath, ["--import", "tsx", MAIN], {
    cwd: REPO_ROOT,
    stdio: ["pipe", "pipe", "pipe"],
    env,
  });
  const kill = (): void => {
    child.kill("SIGKILL");
  };
  process.once("exit", kill);
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (c: string) => {
    stderr = (stderr + c).slice(-16_384);
  });
  child.stdin.on("error", () => undefined);
  const note = (): string => (stderr.trim() === "" ? "" : `\n--- xds-call-main stderr ---\n${stderr.trim()}`);

  const pending = new Map<number, (a: Answer) => void>();
  let gone: Error | undefined;
  let markReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  const exited = new Promise<void>((resolve) => {
    child.once("exit", (code, signal) => {
      process.removeListener("exit", kill);
      gone = new Error(`xds-call-main exited (code ${code}, signal ${signal})${note()}`);
      for (const p of pending.values()) p({ id: 0, ok: false, code: "Gone", message: gone.message });
      pending.clear();
      resolve();
    });
  });
  createInterface({ input: child.stdout, crlfDelay: Infinity }).on("line", (line) => {
    let msg: Answer | { ready: true };
    try {
      msg = JSON.parse(line) as Answer | { ready: true };
    } catch {
      stderr += `(stdout, not JSON) ${line}\n`;
      return;
    }
    if ("ready" in msg) return markReady();
    const p = pending.get(msg.id);
    pending.delete(msg.id);
    p?.(msg);
  });

  let nextId = 1;
  const send = (cmd: Record<string, unknown>, limitMs: number): Promise<Answer> => {
    if (gone !== undefined) return Promise.reject(gone);
    const id = nextId++;
    return new Promise<Answer>((resolve, reject) => {
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new Error(`xds-call-main gave no answer to ${JSON.stringify(cmd)} in ${limitMs} ms${note()}`));
      }, limitMs);
      pending.set(id, (a) => {
        clearTimeout(timer);
        resolve(a);
      });
      child.stdin.write(`${JSON.stringify({ id, ...cmd })}\n`);
    });
  };

  let startTimer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      ready,
      new Promise<never>((_, reject) => {
        startTimer = setTimeout(
          () => reject(new Error(`xds-call-main not ready within 20 s${note()}`)),
          20_000,
        );
      }),
      exited.then(() => Promise.reject(gone)),
    ]);
  } catch (e) {
    child.kill("SIGKILL");
    throw e;
  } finally {
    clearTimeout(startTimer);
  }

  return {
    async call(c): Promise<GoCallResult> {
      const timeoutMs = c.timeoutMs ?? 5_000;
      const a = await send(
        {
          call: {
            target: `xds:///${c.host}`,
            method: c.method ?? "/echo.Echo/Call",
            timeoutMs,
            headers: c.headers ?? {},
          },
        },
        timeoutMs + 5_000,
      );
      const ms = a.ms ?? NaN;
      return a.ok
        ? { ok: true, backend: a.backend ?? "", ms }
        : { ok: false, code: a.code ?? "Unknown", message: a.message ?? "", ms };
    },
    async closeChannel(host) {
      const a = await send({ close: `xds:///${host}` }, 5_000);
      if (!a.ok) throw new Error(`xds-call-main could not close xds:///${host}: ${a.message ?? a.code}`);
    },
    stderr: () => stderr,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.stdin.end();
      const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
