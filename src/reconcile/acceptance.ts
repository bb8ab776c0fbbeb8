// What the Accepted and Programmed conditions should say about one route:
// pure functions of what the reconcile read and what the data plane did.

import type { RouteProgramming } from "../dataplane/dataplane.js";
import { describeDropped } from "../routing/claims.js";
import type { DesiredCondition } from "./conditions.js";
import type { RouteOutcome } from "../translate/snapshot.js";

export const pendingNotAccepted: DesiredCondition = {
  type: "Programmed",
  status: "False",
  reason: "Pending",
  message: "not programmed: the route is not accepted",
};

/** Accepted, from the snapshot's verdict on the route. */
export function acceptedFrom(outcome: RouteOutcome): DesiredCondition {
  if (!outcome.accepted) {
    return { type: "Accepted", status: "False", reason: outcome.reason, message: outcome.message };
  }
  const message =
    outcome.dropped.length === 0
      ? "the route is valid and its Services exist"
      : `accepted in part: ${describeDropped(outcome.dropped)}`;
  return { type: "Accepted", status: "True", reason: "Valid", message };
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
  return {
    type: "Programmed",
    status: "True",
    reason: "Synced",
    message: "the data plane serves this route",
  };
}

/** A deleted route not yet let go: whatever held it may have dropped it, so it no longer says it is served. */
export const deprogramming: DesiredCondition = {
  type: "Programmed",
  status: "False",
  reason: "Pending",
  message: "deleted: waiting until every xDS client it was sent to holds a snapshot without it",
};
