// metav1.Condition bookkeeping: lastTransitionTime moves only when status
// moves, and a status that would not change is not written at all.

import type { Condition, EdgeRouteStatus } from "../api/types.js";
import type { RefsReason } from "../translate/tls-secrets.js";

export type ConditionType = "Accepted" | "Programmed" | "ResolvedRefs";

export type AcceptedReason = "Valid" | "ServiceNotFound" | "Conflicted" | "Invalid" | "HostFull" | "Rejected";
export type ProgrammedReason =
  "Synced" | "PushFailed" | "Pending" | "DeprogramStuck" | "SnapshotTooLarge" | "Rejected" | "NoDataPlane";
/** As Gateway API's: the route's TLS Secret resolved, or why not. */
export type ResolvedRefsReason = "ResolvedRefs" | RefsReason;

/** A condition as the reconcile wants it; the times and generation are filled in by `nextStatus`. */
export interface DesiredCondition {
  readonly type: ConditionType;
  readonly status: "True" | "False" | "Unknown";
  readonly reason: AcceptedReason | ProgrammedReason | ResolvedRefsReason;
  readonly message: string;
}

export function findCondition(status: EdgeRouteStatus | undefined, type: string): Condition | undefined {
  return status?.conditions?.find((c) => c.type === type);
}

/**
 * The status to write, or undefined when the current one already says all of
 * this (a no-op status update is still a write, and an event for watchers).
 * Conditions of other types are kept as they are, but for those in `remove`,
 * which go (ResolvedRefs, once a route's spec no longer has TLS).
 */
export function nextStatus(
  current: EdgeRouteStatus | undefined,
  desired: readonly DesiredCondition[],
  generation: number | undefined,
  now: string,
  remove: readonly ConditionType[] = [],
): EdgeRouteStatus | undefined {
  const before = current?.conditions ?? [];
  // The common answer first, without building anything: a snapshot reconcile asks this of every route.
  if (current?.observedGeneration === generation && saysAll(before, desired, generation, remove))
    return undefined;
  const gone = (t: string): boolean => (remove as readonly string[]).includes(t);
  let changed = current?.observedGeneration !== generation;
  if (before.some((c) => gone(c.type) && !desired.some((d) => d.type === c.type))) changed = true;
  const conditions: Condition[] = before.filter(
    (c) => !desired.some((d) => d.type === c.type) && !gone(c.type),
  );
  for (const d of desired) {
    const old = before.find((c) => c.type === d.type);
    const same =
      old !== undefined &&
      old.status === d.status &&
      old.reason === d.reason &&
      old.message === d.message &&
      old.observedGeneration === generation;
    if (!same) changed = true;
    conditions.push({
      type: d.type,
      status: d.status,
      reason: d.reason,
      message: d.message,
      ...(generation !== undefined ? { observedGeneration: generation } : {}),
      lastTransitionTime: old !== undefined && old.status === d.status ? old.lastTransitionTime : now,
    });
  }
  if (!changed) return undefined;
  // A stable order (Accepted, Programmed, then others by type) keeps diffs, tests and kubectl's view readable.
  const rank = (t: string) => (t === "Accepted" ? 0 : t === "Programmed" ? 1 : 2);
  conditions.sort((a, b) => rank(a.type) - rank(b.type) || a.type.localeCompare(b.type));
  return { ...(generation !== undefined ? { observedGeneration: generation } : {}), conditions };
}

/** The condition of `type` in `conditions`, by index: no closure, as saysAll runs per route. */
function indexOfType(conditions: readonly { readonly type: string }[], type: string): number {
  for (let i = 0; i < conditions.length; i++) if ((conditions[i] as { type: string }).type === type) return i;
  return -1;
}

/**
 * Whether `before` already holds every desired condition at `generation`, and
 * none that is to go. Plain loops: at 10,000 routes the closures of find/some
 * per route made this most of a snapshot reconcile's status pass.
 */
function saysAll(
  before: readonly Condition[],
  desired: readonly DesiredCondition[],
  generation: number | undefined,
  remove: readonly ConditionType[],
): boolean {
  for (let i = 0; i < desired.length; i++) {
    const d = desired[i] as DesiredCondition;
    const at = indexOfType(before, d.type);
    if (at < 0) return false;
    const old = before[at] as Condition;
    if (
      old.status !== d.status ||
      old.reason !== d.reason ||
      old.message !== d.message ||
      old.observedGeneration !== generation
    )
      return false;
  }
  for (let i = 0; i < remove.length; i++) {
    const t = remove[i] as ConditionType;
    if (indexOfType(before, t) >= 0 && indexOfType(desired, t) < 0) return false;
  }
  return true;
}

/** Kubernetes timestamps are RFC 3339 with whole seconds. */
export function nowRfc3339(date = new Date()): string {
  return date.toISOString().replace(/\.\d{3}Z$/, "Z");
}
