// Oldest wins, per host and match. A match is its host, path type, normalized
// path and set of header matches; a later route that claims one already owned
// loses that one claim and keeps the rest. One Map keyed by the claim keeps
// this linear in the number of claims.

import type { PathMatchType } from "../api/types.js";

export interface HeaderClaim {
  /** Lowercase: header names are case-insensitive. */
  readonly name: string;
  readonly value: string;
}

/** A match a route asked for and did not get because an older route owns it. */
export interface DroppedMatch {
  readonly hostname: string;
  readonly rule: number;
  readonly match: number;
  /** `namespace/name` of the owner. */
  readonly owner: string;
}

export function claimKey(
  hostname: string,
  pathType: PathMatchType,
  path: string,
  headers: readonly HeaderClaim[],
): string {
  let key = `${hostname}\u0000${pathType}\u0000${path}`;
  for (const h of headers) key += `\u0000${h.name}\u0001${h.value}`;
  return key;
}

export const GRANTED = { granted: true } as const;
export const HELD = { held: true } as const;

export class ClaimRegistry {
  private readonly owners = new Map<string, string>();

  /**
   * Claims for `routeKey`; routes must claim in age order. `held` means the
   * route asked twice for the same match: the second copy could never be reached.
   */
  claim(routeKey: string, key: string): typeof GRANTED | typeof HELD | { readonly owner: string } {
    const owner = this.owners.get(key);
    if (owner === undefined) {
      this.owners.set(key, routeKey);
      return GRANTED;
    }
    return owner === routeKey ? HELD : { owner };
  }
}

function describeClaim(d: DroppedMatch): string {
  return `host ${d.hostname} rules[${d.rule}].matches[${d.match}] (owned by ${d.owner})`;
}

/** One line for a condition message; long lists are cut with a count. */
export function describeDropped(dropped: readonly DroppedMatch[], limit = 5): string {
  const shown = dropped.slice(0, limit).map(describeClaim).join(", ");
  const more = dropped.length > limit ? ` and ${dropped.length - limit} more` : "";
  return `${shown}${more}`;
}
