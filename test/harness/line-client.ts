// One driver for the xDS clients the tests run in a child process (grpc-go's
// `xds-go client`, test/harness/xds-go.ts; @grpc/grpc-js-xds's
// test/xds/xds-call-main.ts, test/xds/node-xds-client.ts). Both speak the same
// JSON lines: `{"ready":true}` once, then one answer per command, matched by id:
//   {"id":1,"call":{"target":"xds:///HOST","method":"/echo.Echo/Call","timeoutMs":5000,"headers":{}}}
//   {"id":2,"close":"xds:///HOST"}
//   -> {"id":1,"ok":true,"backend":"blue","ms":3} | {"id":1,"ok":false,"code":"Unavailable","message":"...","ms":3}

import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { createInterface } from "node:readline";

/** The last `max` characters a child wrote to stderr, for error messages. */
export class Ring {
  private text = "";
  constructor(private readonly max = 16 * 1024) {}
  push(chunk: string): void {
    this.text += chunk;
    if (this.text.length > this.max) this.text = this.text.slice(-this.max);
  }
  toString(): string {
    return this.text;
  }
}

/** The ring's text under `header`, for the end of an error message; nothing when it is empty. */
export function stderrNote(ring: Ring, header: string): string {
  const s = ring.toString().trim();
  return s === "" ? "" : `\n--- ${header} ---\n${s}`;
}

/** Kills the child when this process exits, whatever way it exits normally; removed once the child is gone. */
export function killOnExit(child: ChildProcessWithoutNullStreams): void {
  const kill = (): void => {
    child.kill("SIGKILL");
  };
  process.once("exit", kill);
  child.once("exit", () => process.removeListener("exit", kill));
}

export type GoCallResult =
  { ok: true; backend: string; ms: number } | { ok: false; code: string; message: string; ms: number };

export interface GoCallOptions {
  /** The target is `xds:///HOST`. */
  readonly host: string;
  /** Default /echo.Echo/Call. */
  readonly method?: string;
  /** Default 5 s. */
  readonly timeoutMs?: number;
  readonly headers?: Record<string, string>;
}

export interface GoXdsClient {
  /** One unary call (empty request, raw reply), on the channel of its host (made on first use). */
  call(opts: GoCallOptions): Promise<GoCallResult>;
  /** Closes the channel of `host`; the next call makes a new one. */
  closeChannel(host: string): Promise<void>;
  /** What the client wrote to stderr lately. */
  stderr(): string;
  /** Closes its stdin (it exits once its calls are done); kills it after 5 s. */
  stop(): Promise<void>;
}

export interface LineClientSpec {
  readonly command: string;
  readonly args: readonly string[];
  readonly env: NodeJS.ProcessEnv;
  readonly cwd?: string;
  /** Names the child in error messages ("xds-go client"). */
  readonly label: string;
  /** Heads its stderr in error messages. */
  readonly stderrHeader: string;
  /** How long it may take to say `{"ready":true}`. */
  readonly readyWithinMs: number;
  /**
   * What becomes of the commands in flight when the child exits: "reject" (the
   * default) fails them with the exit's error; "answer" answers each with
   * `{ok: false, code: "Gone"}` and that error's text.
   */
  readonly inFlightOnExit?: "reject" | "answer";
}

/**
 * The child's environment: this process's, then `more`, then a bootstrap
 * (GRPC_XDS_BOOTSTRAP_CONFIG) naming the ADS server and the node; xDS clients
 * read it once, at start, so it goes in the child's environment only.
 */
export function xdsClientEnv(
  serverUri: string,
  nodeId: string,
  more: Readonly<Record<string, string>> = {},
): NodeJS.ProcessEnv {
  const bootstrap = {
    xds_servers: [
      { server_uri: serverUri, channel_creds: [{ type: "insecure" }], server_features: ["xds_v3"] },
    ],
    node: { id: nodeId, locality: {} },
  };
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ...more,
    GRPC_XDS_BOOTSTRAP_CONFIG: JSON.stringify(bootstrap),
  };
  delete env.GRPC_XDS_BOOTSTRAP;
  return env;
}

type Answer = { id: number; ok: boolean; backend?: string; code?: string; message?: string; ms?: number };

/** Spawns the child and resolves once it is ready: `call` and `closeChannel` are its commands. */
export async function startLineClient(spec: LineClientSpec): Promise<GoXdsClient> {
  const { label } = spec;
  const child = spawn(spec.command, [...spec.args], {
    cwd: spec.cwd,
    stdio: ["pipe", "pipe", "pipe"],
    env: spec.env,
  });
  killOnExit(child);
  const ring = new Ring();
  const note = (): string => stderrNote(ring, spec.stderrHeader);
  child.stderr.setEncoding("utf8").on("data", (c: string) => ring.push(c));
  child.stdin.on("error", () => undefined);

  const pending = new Map<number, { resolve: (a: Answer) => void; reject: (e: Error) => void }>();
  let gone: Error | undefined;
  let nextId = 1;
  let markReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (markReady = resolve));

  const exited = new Promise<void>((resolve) => {
    const end = (why: string): void => {
      const err = (gone ??= new Error(`${label} ${why}${note()}`));
      for (const p of pending.values())
        if (spec.inFlightOnExit === "answer")
          p.resolve({ id: 0, ok: false, code: "Gone", message: err.message });
        else p.reject(err);
      pending.clear();
      resolve();
    };
    child.once("error", (e) => end(`could not run: ${e.message}`));
    child.once("exit", (code, signal) => end(`exited (code ${code}, signal ${signal})`));
  });
  const lines = createInterface({ input: child.stdout, crlfDelay: Infinity });
  lines.on("line", (line) => {
    let msg: Answer | { ready: true };
    try {
      msg = JSON.parse(line) as Answer | { ready: true };
    } catch {
      ring.push(`(stdout, not JSON) ${line}\n`);
      return;
    }
    if ("ready" in msg) return markReady();
    const p = pending.get(msg.id);
    pending.delete(msg.id);
    p?.resolve(msg);
  });

  /** A command's answer; a child that stops answering is not waited on past `limitMs`. */
  const send = (cmd: Record<string, unknown>, limitMs: number): Promise<Answer> => {
    if (gone !== undefined) return Promise.reject(gone);
    const id = nextId++;
    return new Promise<Answer>((resolve, reject) => {
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new Error(`${label} gave no answer to ${JSON.stringify(cmd)} in ${limitMs} ms${note()}`));
      }, limitMs);
      const settle =
        <T>(f: (v: T) => void) =>
        (v: T): void => {
          clearTimeout(timer);
          f(v);
        };
      pending.set(id, { resolve: settle(resolve), reject: settle(reject) });
      child.stdin.write(JSON.stringify({ id, ...cmd }) + "\n");
    });
  };

  let startTimer: NodeJS.Timeout | undefined;
  const notReady = new Promise<never>((_, reject) => {
    startTimer = setTimeout(
      () => reject(new Error(`${label} not ready within ${spec.readyWithinMs / 1000} s${note()}`)),
      spec.readyWithinMs,
    );
  });
  try {
    await Promise.race([ready, notReady, exited.then(() => Promise.reject(gone))]);
  } catch (err) {
    child.kill("SIGKILL");
    throw err;
  } finally {
    clearTimeout(startTimer);
  }

  return {
    async call(c) {
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
      if (!a.ok) throw new Error(`${label} could not close xds:///${host}: ${a.message ?? a.code}`);
    },
    stderr: () => ring.toString(),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.stdin.end();
      const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
