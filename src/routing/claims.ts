// Oldest wins, per host and match. A match is its host, path type, normalized
// path and set of header matches; a later route that claims one already owned
// loses that one claim and keeps the rest. Maps by host, path type and claim
// keep this linear in the number of claims.

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

/**
 * A match's header conditions as it claims them (Gateway API): names compare
 * without case, and of several conditions on one name the first counts; sorted
 * by name. Admission's conflict warnings and the snapshot both read them so.
 */
export function headerClaims(
  headers: readonly { readonly name: string; readonly value: string }[] | undefined,
): HeaderClaim[] {
  if (headers === undefined || headers.length === 0) return [];
  const byName = new Map<string, string>();
  for (const h of headers) {
    const name = h.name.toLowerCase();
    if (!byName.has(name)) byName.set(name, h.value);
  }
  return [...byName]
    .map(([name, value]) => ({ name, value }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** A header set as one string, "" for none: a claim is its host, path type, path and this. */
export function headerKey(headers: readonly HeaderClaim[]): string {
  let key = "";
  for (const h of headers) key += `\u0000${h.name}\u0001${h.value}`;
  return key;
}

export const GRANTED = { granted: true } as const;
export const HELD = { held: true } as const;

/** Owners by header key, then by path. */
type Owners = Map<string, Map<string, string>>;

/** One host's owners, by path type. */
interface HostClaims {
  readonly exact: Owners;
  readonly prefix: Owners;
}

export class ClaimRegistry {
  // Nested by host, path type, header set and path, so that a claim is a few
  // lookups by strings the build already holds: no key string is built per claim.
  private readonly hosts = new Map<string, HostClaims>();

  /**
   * Claims for `routeKey`; routes must claim in age order. `held` means the
   * route asked twice for the same match: the second copy could never be reached.
   */
  claim(
    routeKey: string,
    hostname: string,
    pathType: PathMatchType,
    path: string,
    headers: string,
  ): typeof GRANTED | typeof HELD | { readonly owner: string } {
    let host = this.hosts.get(hostname);
    if (host === undefined) {
      host = { exact: new Map(), prefix: new Map() };
      this.hosts.set(hostname, host);
    }
    const byHeaders = pathType === "Exact" ? host.exact : host.prefix;
    let owners = byHeaders.get(headers);
    if (owners === undefined) {
      owners = new Map();
      byHeaders.set(headers, owners);
    }
    const owner = owners.get(path);
    if (owner === undefined) {
      owners.set(path, routeKey);
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
