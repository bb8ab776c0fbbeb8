// Storage migration, the pure part: what the CRD says is stored and where, what
// a run must do, and the lines it prints. The I/O (listing, the no-op writes,
// the status update) is in migrator.ts.

import { createHash } from "node:crypto";
import { kubeStatus } from "../kube/kube-error.js";
import { isTransient } from "../kube/retry.js";

/** The parts of a CustomResourceDefinition that migration reads. */
export interface CrdStorageView {
  readonly metadata: {
    readonly name?: string;
    readonly resourceVersion?: string;
    readonly generation?: number;
  };
  readonly spec: {
    readonly group: string;
    readonly names: { readonly kind: string; readonly plural: string };
    readonly versions: readonly {
      readonly name: string;
      readonly served: boolean;
      readonly storage: boolean;
    }[];
  };
  readonly status?: { readonly storedVersions?: readonly string[] };
}

export interface MigrationPlan {
  readonly group: string;
  readonly kind: string;
  readonly plural: string;
  /** The version every object is rewritten into. */
  readonly storageVersion: string;
  /** status.storedVersions as read. */
  readonly storedVersions: readonly string[];
  /** What status.storedVersions becomes once every object is rewritten. */
  readonly trimmedStoredVersions: readonly string[];
  /** Versions objects may still be stored in, besides the storage version. */
  readonly stale: readonly string[];
}

export type PlanResult =
  { readonly ok: true; readonly plan: MigrationPlan } | { readonly ok: false; readonly reason: string };

export function planMigration(crd: CrdStorageView): PlanResult {
  const name = crd.metadata.name ?? `${crd.spec.names.plural}.${crd.spec.group}`;
  const storage = crd.spec.versions.filter((v) => v.storage);
  if (storage.length !== 1 || storage[0] === undefined) {
    return { ok: false, reason: `CRD ${name} has ${storage.length} storage versions, expected exactly one` };
  }
  const storageVersion = storage[0].name;
  if (!storage[0].served) {
    // The apiserver refuses this, but a clear reason beats a 404 on the first list.
    return { ok: false, reason: `CRD ${name}: the storage version ${storageVersion} is not served` };
  }
  const storedVersions = crd.status?.storedVersions ?? [];
  return {
    ok: true,
    plan: {
      group: crd.spec.group,
      kind: crd.spec.names.kind,
      plural: crd.spec.names.plural,
      storageVersion,
      storedVersions,
      trimmedStoredVersions: [storageVersion],
      stale: storedVersions.filter((v) => v !== storageVersion),
    },
  };
}

/** True when nothing can be stored in another version, so there is nothing to rewrite. */
export function isMigrated(plan: MigrationPlan): boolean {
  return plan.stale.length === 0;
}

/**
 * The apiserver's storageVersionHash for a resource stored as group/version/kind,
 * as published in discovery (k8s.io/apiserver endpoints/discovery): the first
 * 8 bytes of SHA-256 of "group/version/kind", base64. When discovery shows the
 * hash of the new storage version, the apiserver writes in it.
 */
export function storageVersionHash(group: string, version: string, kind: string): string {
  return createHash("sha256")
    .update(`${group}/${version}/${kind}`)
    .digest()
    .subarray(0, 8)
    .toString("base64");
}

/** status.storedVersions trimmed, on a copy of the CRD as read (its resourceVersion kept, as a precondition). */
export function withTrimmedStoredVersions<T extends CrdStorageView>(crd: T, plan: MigrationPlan): T {
  return { ...crd, status: { ...crd.status, storedVersions: [...plan.trimmedStoredVersions] } };
}

/** How one failed write is handled. */
export type WriteFailure = "reread" | "gone" | "retry" | "fatal";

/**
 * 409: someone wrote the object since we read it; re-read and write again.
 * 404: it was deleted meanwhile; nothing is stored, nothing to migrate.
 * What the client's one rule calls transient (429, 5xx, a cut connection, a
 * deadline) may pass; anything else (a webhook's denial, a forbidden write)
 * will not pass by retrying.
 */
export function classifyWriteFailure(err: unknown): WriteFailure {
  const status = kubeStatus(err);
  if (status === 409) return "reread";
  if (status === 404) return "gone";
  return isTransient(err) ? "retry" : "fatal";
}

export interface Tally {
  /** Distinct objects written in the storage version. */
  readonly rewritten: number;
  readonly conflicts: number;
  /** Deleted between the list and the write. */
  readonly gone: number;
  /** Lists restarted because their continue token expired. */
  readonly restarts: number;
}

const versionList = (vs: readonly string[]): string => `[${vs.join(", ")}]`;

export function formatRate(count: number, seconds: number): string {
  return seconds > 0 ? `${Math.round(count / seconds)}/s` : "-";
}

export function progressLine(
  plan: MigrationPlan,
  done: number,
  estimatedTotal: number | undefined,
  seconds: number,
): string {
  const of = estimatedTotal !== undefined && estimatedTotal >= done ? ` of ~${estimatedTotal}` : "";
  return `migrate: rewrote ${done}${of} ${plan.kind}s to ${plan.storageVersion} (${seconds.toFixed(1)} s, ${formatRate(done, seconds)})`;
}

export function summaryLine(plan: MigrationPlan, tally: Tally, seconds: number): string {
  const extras = [
    tally.conflicts > 0 ? `${tally.conflicts} conflicts re-read` : "",
    tally.gone > 0 ? `${tally.gone} deleted meanwhile` : "",
    tally.restarts > 0 ? `list expired ${tally.restarts} times` : "",
  ].filter(Boolean);
  return (
    `migrated ${tally.rewritten} ${plan.kind}s to ${plan.group}/${plan.storageVersion} in ${seconds.toFixed(1)} s ` +
    `(${formatRate(tally.rewritten, seconds)}${extras.length ? `; ${extras.join(", ")}` : ""}); ` +
    `status.storedVersions ${versionList(plan.storedVersions)} → ${versionList(plan.trimmedStoredVersions)}`
  );
}

export function alreadyMigratedLine(plan: MigrationPlan): string {
  return `nothing to migrate: status.storedVersions is ${versionList(plan.storedVersions)}, every ${plan.kind} is stored as ${plan.group}/${plan.storageVersion}`;
}

export function dryRunLine(plan: MigrationPlan, count: number, namespaces: number): string {
  if (isMigrated(plan)) return `dry run: ${alreadyMigratedLine(plan)}`;
  return (
    `dry run: would rewrite ${count} ${plan.kind}s in ${namespaces} namespaces to ${plan.group}/${plan.storageVersion}, ` +
    `then set status.storedVersions ${versionList(plan.storedVersions)} → ${versionList(plan.trimmedStoredVersions)}; nothing was written`
  );
}
