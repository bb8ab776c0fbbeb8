// hack/xds-go from the tests: grpc-go's proxyless xDS client (a second,
// independent xDS consumer beside @grpc/grpc-js-xds) and a validator of
// resources against the protoc-gen-validate rules of Envoy's protos. Built by
// scripts/xds-go.sh (once per run, in global-setup.ts) and cached outside the
// repo like the control plane's binaries.

import { spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { createInterface } from "node:readline";
import {
  killOnExit,
  Ring,
  startLineClient,
  stderrNote,
  xdsClientEnv,
  type GoXdsClient,
} from "./line-client.js";
import { REPO_ROOT } from "../../tools/testenv/testbin.js";

const GO_STDERR = "xds-go stderr (last part)";

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
      `xds-go validate exited ${code} with ${answers.length} answers for ${resources.length} resources${stderrNote(ring, GO_STDERR)}`,
    );
  const failures: ValidationFailure[] = [];
  resources.forEach((r, i) => {
    const a = JSON.parse(answers[i] as string) as { ok: boolean; error?: string };
    if (!a.ok) failures.push({ name: r.name ?? `#${i}`, typeUrl: r.typeUrl, error: a.error ?? "(no error)" });
  });
  return failures;
}

export type { GoCallOptions, GoCallResult, GoXdsClient } from "./line-client.js";

export interface GoXdsClientOptions {
  /** Default 127.0.0.1. */
  readonly adsHost?: string;
  readonly adsPort: number;
  readonly nodeId: string;
  /** More environment for the child (e.g. GRPC_GO_LOG_SEVERITY_LEVEL=info to see its ADS traffic). */
  readonly env?: Readonly<Record<string, string>>;
}

/** Starts `xds-go client` with a bootstrap pointing at the ADS server; resolves once it is ready. */
export async function startGoXdsClient(opts: GoXdsClientOptions): Promise<GoXdsClient> {
  return startLineClient({
    command: ensureXdsGo(),
    args: ["client"],
    env: xdsClientEnv(`${opts.adsHost ?? "127.0.0.1"}:${opts.adsPort}`, opts.nodeId, opts.env),
    label: "xds-go client",
    stderrHeader: GO_STDERR,
    readyWithinMs: 10_000,
  });
}
