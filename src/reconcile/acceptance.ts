// What the Accepted and Programmed conditions should say about one route:
// pure functions of what the reconcile read and what the data plane did.

import type { RouteProgramming } from "../dataplane/dataplane.js";
import { describeDropped } from "../routing/claims.js";
import type { ConditionType, DesiredCondition } from "./conditions.js";
import { describeGrpcUnapplied, type RouteOutcome, type TlsOutcome } from "../translate/snapshot.js";

export const pendingNotAccepted: DesiredCondition = {
  type: "Programmed",
  status: "False",
  reason: "Pending",
  message: "not programmed: the route is not accepted",
};

/** `host (why), ...`: TLS hosts not served over HTTPS, named as dropped matches are (the first few). */
export function describeNotServed(notServed: TlsOutcome["notServed"], limit = 5): string {
  const shown = notServed
    .slice(0, limit)
    .map((n) => `${n.hostname} not served over HTTPS (${n.message})`)
    .join(", ");
  const more = notServed.length > limit ? ` and ${notServed.length - limit} more` : "";
  return `${shown}${more}`;
}

// The words of nearly every route: a snapshot reconcile asks for them per
// route, so they are one shared object each instead of a fresh pair per route.
const acceptedValid: DesiredCondition = {
  type: "Accepted",
  status: "True",
  reason: "Valid",
  message: "the route is valid and its Services exist",
};
const programmedSynced: DesiredCondition = {
  type: "Programmed",
  status: "True",
  reason: "Synced",
  message: "the data plane serves this route",
};
const refsResolved: DesiredCondition = {
  type: "ResolvedRefs",
  status: "True",
  reason: "ResolvedRefs",
  message: "the TLS Secret exists and holds a usable certificate and key",
};

/** Accepted, from the snapshot's verdict on the route. */
export function acceptedFrom(outcome: RouteOutcome): DesiredCondition {
  if (!outcome.accepted) {
    return { type: "Accepted", status: "False", reason: outcome.reason, message: outcome.message };
  }
  const parts: string[] = [];
  if (outcome.dropped.length > 0) parts.push(describeDropped(outcome.dropped));
  if (outcome.tls && outcome.tls.notServed.length > 0) parts.push(describeNotServed(outcome.tls.notServed));
  const unapplied = outcome.grpcUnapplied ?? [];
  if (parts.length === 0 && unapplied.length === 0) return acceptedValid;
  const base = parts.length === 0 ? acceptedValid.message : `accepted in part: ${parts.join("; ")}`;
  // Envoy applies all of it; what gRPC clients would ignore or refuse is said, never left silent.
  const message = unapplied.length === 0 ? base : `${base}; ${describeGrpcUnapplied(unapplied)}`;
  return { type: "Accepted", status: "True", reason: "Valid", message };
}

/** ResolvedRefs, on a route whose spec has TLS (undefined otherwise: the condition is then removed). */
export function resolvedRefsFrom(outcome: RouteOutcome): DesiredCondition | undefined {
  const tls = outcome.tls;
  if (!tls) return undefined;
  if (!tls.refs.resolved)
    return { type: "ResolvedRefs", status: "False", reason: tls.refs.reason, message: tls.refs.message };
  return refsResolved;
}

/** Every condition the snapshot decides for a live route, and the types it removes. */
export function snapshotConditions(
  outcome: RouteOutcome,
  push: PushVerdict,
): { desired: DesiredCondition[]; remove: ConditionType[] } {
  const refs = resolvedRefsFrom(outcome);
  return {
    desired: [acceptedFrom(outcome), programmedFrom(outcome, push), ...(refs ? [refs] : [])],
    remove: refs ? [] : ["ResolvedRefs"],
  };
}

/** What the data plane did with the snapshot, for every route or for one (RouteStanding). */
export type PushVerdict = RouteProgramming;

/** Whether a route waits on data-plane clients (none connected that take it, or not all answered): looked at again steadily. */
export function waitsOnClients(v: PushVerdict): boolean {
  return !v.ok && (v.reason === "NoDataPlane" || v.reason === "Pending");
}

/** Programmed, from the verdict and whether the data plane took the snapshot that holds the route. */
export function programmedFrom(outcome: RouteOutcome, push: PushVerdict): DesiredCondition {
  if (!outcome.accepted) return pendingNotAccepted;
  if (!push.ok) return { type: "Programmed", status: "False", reason: push.reason, message: push.message };
  // No snapshot version in the message: it would rewrite every route's status on every change.
  return programmedSynced;
}

/** A deleted route not yet let go: whatever held it may have dropped it, so it no longer says it is served. */
export const deprogramming: DesiredCondition = {
  type: "Programmed",
  status: "False",
  reason: "Pending",
  message: "deleted: waiting until every xDS client it was sent to holds a snapshot without it",
};
