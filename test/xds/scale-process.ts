// Starts test/xds/scale-server.ts (built, from dist/) as a child process with
// the chart's NODE_OPTIONS (read from charts/edge-operator/values.yaml, so a
// change there is measured here), and talks to it over IPC.

import { fork, type ChildProcess } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chartMemoryEnv, chartNodeOptions } from "../harness/chart-memory.js";
import type { ScaleReply, ScaleRequest, ServerMemory } from "./scale-server.js";

const ROOT = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  import.meta.url.includes("/dist/") ? "../../.." : "../..",
);
const SERVER = path.join(ROOT, "dist/test/xds/scale-server.js");

export interface ScaleServer {
  readonly port: number;
  readonly version: string;
  readonly nodeOptions: readonly string[];
  program(
    change: "route" | "endpoints" | "base",
    k: number,
  ): Promise<{ ok: boolean; reason?: string; ms: number; buildMs: number }>;
  memory(): Promise<ServerMemory>;
  clients(): Promise<number>;
  stop(): void;
}

export async function startScaleServer(routes: number, timeoutMs = 120_000): Promise<ScaleServer> {
  const nodeOptions = chartNodeOptions();
  const child: ChildProcess = fork(SERVER, [String(routes), String(timeoutMs)], {
    // The chart's options alone: its --expose-gc is what lets the server collect written frames.
    execArgv: nodeOptions,
    env: { ...process.env, ...chartMemoryEnv() },
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const waiters: ((m: ScaleReply) => void)[] = [];
  child.on("message", (m: ScaleReply) => waiters.shift()?.(m));
  const next = <K extends ScaleReply["op"]>(op: K): Promise<Extract<ScaleReply, { op: K }>> =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`scale server: no ${op} within ${timeoutMs} ms`)),
        timeoutMs,
      );
      const onExit = (code: number | null) => reject(new Error(`scale server exited (${code}) before ${op}`));
      child.once("exit", onExit);
      waiters.push((m) => {
        clearTimeout(timer);
        child.off("exit", onExit);
        if (m.op !== op) reject(new Error(`scale server: expected ${op}, got ${m.op}`));
        else resolve(m as Extract<ScaleReply, { op: K }>);
      });
    });
  const ask = <K extends ScaleReply["op"]>(req: ScaleRequest, op: K) => {
    const answer = next(op);
    child.send(req);
    return answer;
  };
  const ready = await next("ready");
  return {
    port: ready.port,
    version: ready.version,
    nodeOptions,
    program: async (change, k) => {
      const { ok, reason, ms, buildMs } = await ask({ op: "program", change, k }, "programmed");
      return reason === undefined ? { ok, ms, buildMs } : { ok, reason, ms, buildMs };
    },
    memory: async () => {
      const { op: _op, ...m } = await ask({ op: "memory" }, "memory");
      return m;
    },
    clients: async () => (await ask({ op: "clients" }, "clients")).count,
    stop: () => {
      child.disconnect();
      child.kill();
    },
  };
}
