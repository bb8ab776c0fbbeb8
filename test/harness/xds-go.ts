// hack/xds-go from the tests: grpc-go's proxyless xDS client (a second,
// independent xDS consumer beside @grpc/grpc-js-xds) and a validator of
// resources against the protoc-gen-validate rules of Envoy's protos. Built by
// scripts/xds-go.sh (once per run, in global-setup.ts) and cached outside the
// repo like the control plane's binaries.

import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { createInterface } from "node:readline";
import { REPO_ROOT } from "./testbin.js";

/** Set by global-setup.ts when the build failed, so that each file reports it without building again. */
export const XDS_GO_ERROR_ENV = "EDGE_XDS_GO_ERROR";

let built: string | undefined;

/** The xds-go binary: EDGE_XDS_GO_BIN when it names a file, else built (or found cached) by scripts/xds-go.sh. */
export function ensureXdsGo(): string {
  const given = process.env.EDGE_XDS_GO_BIN;
  if (given !== undefined && given !== "" && existsSync(given)) return given;
  if (built !== undefined) return built;
  const failed = process.env[XDS_GO_ERROR_ENV];
  if (failed !== undefined && failed !== "") throw new Error(failed);
  const script = path.join(REPO_ROOT, "scripts/xds-go.sh");
  const res = spawnSync("bash", [script], { stdio: ["ignore", "pipe", "pipe"], encoding: "utf8" });
  process.stderr.write(res.stderr ?? "");
  if (res.error !== undefined || res.status !== 0) {
    const tail = (res.stderr ?? "").trim().split("\n").slice(-10).join("\n");
    const why = res.error ? res.error.message : `exit ${res.status}`;
    throw new Error(`scripts/xds-go.sh failed (${why}):\n${tail}`);
  }
  const bin = res.stdout.trim().split("\n").pop() ?? "";
  if (!existsSync(bin))
    throw new Error(`scripts/xds-go.sh answered ${JSON.stringify(bin)}, which is no file`);
  built = bin;
  return bin;
}

/** The last `max` characters a child wrote to stderr, for error messages. */
class Ring {
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

function stderrNote(ring: Ring): string {
  const s = ring.toString().trim();
  return s === "" ? "" : `\n--- xds-go stderr (last part) ---\n${s}`;
}

/** Kills the child when this process exits, whatever way it exits normally; removed once the child is gone. */
function killOnExit(child: ChildProcessWithoutNullStreams): void {
  const kill = (): void => {
    child.kill("SIGKILL");
  };
  process.once("exit", kill);
  child.once("exit", () => process.removeListener("exit", kill));
}

export interface ResourceToValidate {
  readonly typeUrl: string;
  readonly value: Uint8Array;
  /** For the report; else its index. */
  readonly name?: string;
}

export interface ValidationFailure {
  readonly name: string;
  readonly typeUrl: string;
  readonly error: string;
}

/** Each resource through `xds-go validate` (one process per call): the failures, none when all are valid. */
export async function validateResources(
  resources: readonly ResourceToValidate[],
): Promise<ValidationFailure[]> {
  const bin = ensureXdsGo();
  const child = spawn(bin, ["validate"], { stdio: ["pipe", "pipe", "pipe"] });
  killOnExit(child);
  const ring = new Ring();
  child.stderr.setEncoding("utf8").on("data", (c: string) => ring.push(c));
  const exited = new Promise<number>((resolve, reject) => {
    child.once("error", reject);
    child.once("exit", (code, signal) => resolve(code ?? (signal ? 128 : 1)));
  });
  const answers: string[] = [];
  const lines = createInterface({ input: child.stdout, crlfDelay: Infinity });
  const read = (async () => {
    for await (const line of lines) answers.push(line);
  })();
  child.stdin.on("error", () => undefined);
  for (const r of resources) {
    const line = JSON.stringify({ type_url: r.typeUrl, value: Buffer.from(r.value).toString("base64") });
    if (!child.stdin.write(line + "\n")) await new Promise((res) => child.stdin.once("drain", res));
  }
  child.stdin.end();
  const [code] = await Promise.all([exited, read]);
  if (code !== 0 || answers.length !== resources.length)
    throw new Error(
      `xds-go validate exited ${code} with ${answers.length} answers for ${resources.length} resources${stderrNote(ring)}`,
    );
  const failures: ValidationFailure[] = [];
  resources.forEach((r, i) => {
    const a = JSON.parse(answers[i] as string) as { ok: boolean; error?: string };
    if (!a.ok) failures.push({ name: r.name ?? `#${i}`, typeUrl: r.typeUrl, error: a.error ?? "(no error)" });
  });
  return failures;
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

export interface GoXdsClientOptions {
  /** Default 127.0.0.1. */
  readonly adsHost?: string;
  readonly adsPort: number;
  readonly nodeId: string;
  /** More environment for the child (e.g. GRPC_GO_LOG_SEVERITY_LEVEL=info to see its ADS traffic). */
  readonly env?: Readonly<Record<string, string>>;
}

type Answer = { id: number; ok: boolean; backend?: string; code?: string; message?: string; ms?: number };

/** Starts `xds-go client` with a bootstrap pointing at the ADS server; resolves once it is ready. */
export async function startGoXdsClient(opts: GoXdsClientOptions): Promise<GoXdsClient> {
  const bin = ensureXdsGo();
  const bootstrap = {
    xds_servers: [
      {
        server_uri: `${opts.adsHost ?? "127.0.0.1"}:${opts.adsPort}`,
        channel_creds: [{ type: "insecure" }],
        server_features: ["xds_v3"],
      },
    ],
    node: { id: opts.nodeId, locality: {} },
  };
  // grpc-go reads its bootstrap once, at start: it goes in the child's environment only.
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ...opts.env,
    GRPC_XDS_BOOTSTRAP_CONFIG: JSON.stringify(bootstrap),
  };
  delete env.GRPC_XDS_BOOTSTRAP;
  const child = spawn(bin, ["client"], { stdio: ["pipe", "pipe", "pipe"], env });
  killOnExit(child);
  const ring = new Ring();
  child.stderr.setEncoding("utf8").on("data", (c: string) => ring.push(c));
  child.stdin.on("error", () => undefined);

  const pending = new Map<number, { resolve: (a: Answer) => void; reject: (e: Error) => void }>();
  let gone: Error | undefined;
  let nextId = 1;
  let markReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (markReady = resolve));

  const exited = new Promise<void>((resolve) => {
    const end = (why: string): void => {
      gone ??= new Error(`xds-go client ${why}${stderrNote(ring)}`);
      for (const p of pending.values()) p.reject(gone);
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
        reject(
          new Error(
            `xds-go client gave no answer to ${JSON.stringify(cmd)} in ${limitMs} ms${stderrNote(ring)}`,
          ),
        );
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
      () => reject(new Error(`xds-go client not ready within 10 s${stderrNote(ring)}`)),
      10_000,
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
      if (!a.ok) throw new Error(`xds-go client could not close xds:///${host}: ${a.message ?? a.code}`);
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
