// C++ RE2 from the tests: test/re2/program-size.cc, built against Debian's
// libre2-dev by scripts/re2-oracle.sh and cached outside the repo, answers
// for each pattern what Envoy's RE2 answers (parse error, or ProgramSize()).

import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

export type OracleVerdict =
  { readonly ok: true; readonly size: number } | { readonly ok: false; readonly error: string };

/** The oracle's binary: EDGE_RE2_ORACLE_BIN when it names a file, else built (or found cached) by scripts/re2-oracle.sh. */
export function buildRe2Oracle(): string {
  const given = process.env.EDGE_RE2_ORACLE_BIN;
  if (given !== undefined && given !== "" && existsSync(given)) return given;
  const script = path.join(REPO, "scripts/re2-oracle.sh");
  const res = spawnSync("bash", [script], {
    stdio: ["ignore", "pipe", "pipe"],
    encoding: "utf8",
    timeout: 900_000,
  });
  process.stderr.write(res.stderr ?? "");
  if (res.error !== undefined || res.status !== 0) {
    const tail = (res.stderr ?? "").trim().split("\n").slice(-10).join("\n");
    throw new Error(
      `scripts/re2-oracle.sh failed (${res.error ? res.error.message : `exit ${res.status}`}):\n${tail}`,
    );
  }
  const bin = res.stdout.trim().split("\n").pop() ?? "";
  if (!existsSync(bin))
    throw new Error(`scripts/re2-oracle.sh answered ${JSON.stringify(bin)}, which is no file`);
  return bin;
}

/** One running oracle: patterns in (hex-encoded UTF-8, one a line), verdicts out, in order. */
export class Re2Oracle {
  private readonly waiting: ((line: string) => void)[] = [];
  private failure: Error | undefined;

  private constructor(private readonly child: ChildProcessWithoutNullStreams) {
    const lines = createInterface({ input: child.stdout, crlfDelay: Infinity });
    lines.on("line", (line) => this.waiting.shift()?.(line));
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr = (stderr + c).slice(-2000)));
    child.once("exit", (code, signal) => {
      this.failure = new Error(`the RE2 oracle exited (${code ?? signal}): ${stderr}`);
      for (const w of this.waiting.splice(0)) w("");
    });
    child.stdin.on("error", () => undefined);
  }

  static start(bin: string): Re2Oracle {
    return new Re2Oracle(spawn(bin, [], { stdio: ["pipe", "pipe", "pipe"] }));
  }

  /** C++ RE2's verdict, the pattern encoded to UTF-8 as Envoy receives it. */
  judge(pattern: string): Promise<OracleVerdict> {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    const answer = new Promise<string>((resolve) => this.waiting.push(resolve));
    this.child.stdin.write(Buffer.from(pattern, "utf8").toString("hex") + "\n");
    return answer.then((line) => {
      if (this.failure !== undefined && line === "") throw this.failure;
      const ok = /^ok (\d+)$/.exec(line);
      if (ok !== null) return { ok: true, size: Number(ok[1]) };
      if (line.startsWith("error ")) return { ok: false, error: line.slice("error ".length) };
      throw new Error(`the RE2 oracle answered ${JSON.stringify(line)}`);
    });
  }

  judgeAll(patterns: readonly string[]): Promise<OracleVerdict[]> {
    return Promise.all(patterns.map((p) => this.judge(p)));
  }

  close(): void {
    this.child.stdin.end();
  }
}
