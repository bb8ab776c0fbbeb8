// kube-score from the tests: built (or found cached) by
// scripts/chart-lint-tools.sh at the pinned version, and its JSON report
// reduced to the findings a user reads as [CRITICAL].

import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { REPO_ROOT } from "../../tools/testenv/testbin.js";

/** kube-score's grade for a failed check (scorecard.GradeCritical). */
const GRADE_CRITICAL = 1;

/** Set by global-setup.ts: the binary it built, or why the build failed (so each file reports it without building again). */
export const KUBE_SCORE_BIN_ENV = "EDGE_KUBE_SCORE_BIN";
export const KUBE_SCORE_ERROR_ENV = "EDGE_KUBE_SCORE_ERROR";

let built: string | undefined;

/** The kube-score binary; a failed build throws with the script's last lines (never a skip). */
export function ensureKubeScore(): string {
  if (built !== undefined) return built;
  const given = process.env[KUBE_SCORE_BIN_ENV];
  if (given !== undefined && given !== "" && existsSync(given)) return (built = given);
  const failed = process.env[KUBE_SCORE_ERROR_ENV];
  if (failed !== undefined && failed !== "") throw new Error(failed);
  const res = spawnSync("bash", [path.join(REPO_ROOT, "scripts/chart-lint-tools.sh")], {
    stdio: ["ignore", "pipe", "pipe"],
    encoding: "utf8",
  });
  if (res.error !== undefined || res.status !== 0) {
    const tail = (res.stderr ?? "").trim().split("\n").slice(-10).join("\n");
    throw new Error(
      `scripts/chart-lint-tools.sh failed (${res.error?.message ?? `exit ${res.status}`}):\n${tail}`,
    );
  }
  const bin = path.join(res.stdout.trim().split("\n").pop() ?? "", "kube-score");
  if (!existsSync(bin)) throw new Error(`scripts/chart-lint-tools.sh built no ${bin}`);
  built = bin;
  return bin;
}

export interface Finding {
  /** The check's id, as `kube-score list` and --ignore-test name it. */
  readonly check: string;
  /** Kind/name of the object. */
  readonly object: string;
  /** The container or field the comment is about, when it names one. */
  readonly path: string;
  readonly summary: string;
}

interface Report {
  readonly object_name: string;
  readonly type_meta: { readonly kind: string };
  readonly object_meta: { readonly name: string };
  readonly checks: readonly {
    readonly check: { readonly id: string };
    readonly grade: number;
    readonly skipped: boolean;
    readonly comments: readonly { readonly path: string; readonly summary: string }[] | null;
  }[];
}

/** `kube-score score` on a rendered manifest: its critical findings, one per comment. */
export function criticalFindings(bin: string, manifest: string): Finding[] {
  const res = spawnSync(bin, ["score", "-", "--output-format", "json"], {
    input: manifest,
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  // Exit 1 means "critical findings", not a failure to score.
  if (res.error !== undefined || (res.status !== 0 && res.status !== 1))
    throw new Error(`kube-score failed (${res.error?.message ?? `exit ${res.status}`}):\n${res.stderr}`);
  // null when nothing in the manifest is scored (no workloads).
  const reports = (JSON.parse(res.stdout) as Report[] | null) ?? [];
  return reports.flatMap((r) =>
    r.checks
      .filter((c) => !c.skipped && c.grade === GRADE_CRITICAL)
      .flatMap((c) =>
        (c.comments ?? [{ path: "", summary: "" }]).map((m) => ({
          check: c.check.id,
          object: `${r.type_meta.kind}/${r.object_meta.name}`,
          path: m.path,
          summary: m.summary,
        })),
      ),
  );
}
