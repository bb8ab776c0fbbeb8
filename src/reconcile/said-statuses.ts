// Which routes' statuses already say what a snapshot decides, remembered per
// route object. A snapshot reconcile asks it of every live route after the
// clients' ACK, before the one status write that reports a change: at 10,000
// routes `nextStatus` over the unchanged ones was most of the time from the
// ACK to that write. The cache hands the same route object until the route
// changes (a status write included), and the conditions a pass wants are
// shared objects in the common cases (acceptance.ts), so "same route object,
// same condition objects" is an exact and cheap test: `nextStatus` is a pure
// function of the route's status and generation and of the conditions.

import type { EdgeRouteV2 } from "../api/types.js";
import { nextStatus, type ConditionType, type DesiredCondition } from "./conditions.js";

interface Said {
  readonly desired: readonly DesiredCondition[];
  readonly remove: readonly ConditionType[];
}

function sameItems<T>(a: readonly T[], b: readonly T[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export class SaidStatuses {
  private readonly said = new WeakMap<EdgeRouteV2, Said>();

  /** Whether `route`'s status would change for these conditions (nextStatus answers a status). */
  changes(
    route: EdgeRouteV2,
    desired: readonly DesiredCondition[],
    remove: readonly ConditionType[],
  ): boolean {
    const s = this.said.get(route);
    if (s !== undefined && sameItems(s.desired, desired) && sameItems(s.remove, remove)) return false;
    // The time only goes into a status that changes: any will do to ask whether it does.
    if (nextStatus(route.status, desired, route.metadata.generation, "", remove) !== undefined) return true;
    this.said.set(route, { desired, remove });
    return false;
  }
}
