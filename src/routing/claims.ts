// Oldest wins, per host and match. A match is its host, path type, normalized
// path and set of header matches; a later route that claims one already owned
// loses that one claim and keeps the rest. Maps by host, path type and claim
// keep this linear in the number of claims.

import type { PathMatchType } from "../api/types.js";

export interface HeaderClaim {
  /** Lowercase: header names are case-insensitive. */
  readonly name: string;
  readonly value: string;
  /** A RegularExpression match (RE2) rather than an exact value. */
  readonly regex?: true;
}

/** A query parameter condition as it claims: names compare with case, as Gateway API says. */
export interface QueryClaim {
  readonly name: string;
  readonly value: string;
  readonly regex?: true;
}

/** A match as given: header or query parameter conditions, of type Exact (the default) or RegularExpression. */
export interface ValueCondition {
  readonly name: string;
  readonly value: string;
  readonly type?: string;
}

/** A match a route asked for and did not get because an older route owns it. */
export interface DroppedMatch {
  readonly hostname: string;
  readonly rule: number;
  readonly match: number;
  /** `namespace/name` of the owner. */
  readonly owner: string;
}

function compareNames(a: { readonly name: string }, b: { readonly name: string }): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

/**
 * A match's header conditions as it claims them (Gateway API): names compare
 * without case, and of several conditions on one name the first counts; sorted
 * by name. Admission's conflict warnings and the snapshot both read them so.
 */
export function headerClaims(headers: readonly ValueCondition[] | undefined): HeaderClaim[] {
  if (headers === undefined || headers.length === 0) return [];
  const byName = new Map<string, HeaderClaim>();
  for (const h of headers) {
    const name = h.name.toLowerCase();
    if (!byName.has(name))
      byName.set(
        name,
        h.type === "RegularExpression" ? { name, value: h.value, regex: true } : { name, value: h.value },
      );
  }
  return [...byName.values()].sort(compareNames);
}

/** A match's query parameter conditions as it claims them: the first per name counts; sorted by name. */
export function queryClaims(params: readonly ValueCondition[] | undefined): QueryClaim[] {
  if (params === undefined || params.length === 0) return [];
  const byName = new Map<string, QueryClaim>();
  for (const q of params)
    if (!byName.has(q.name))
      byName.set(
        q.name,
        q.type === "RegularExpression"
          ? { name: q.name, value: q.value, regex: true }
          : { name: q.name, value: q.value },
      );
  return [...byName.values()].sort(compareNames);
}

/** A header set as one string, "" for none: a claim is its host, path type, path and this. */
export function headerKey(headers: readonly HeaderClaim[]): string {
  let key = "";
  for (const h of headers) key += `\u0000${h.name}${h.regex === true ? "\u0002" : "\u0001"}${h.value}`;
  return key;
}

/**
 * Everything a match asks of a request besides its path, as one string: the
 * header key, then the method and the query parameters when there are any,
 * so that matches told apart only by those do not conflict.
 */
export function conditionKey(
  headers: readonly HeaderClaim[],
  method: string | undefined,
  query: readonly QueryClaim[],
): string {
  let key = headerKey(headers);
  if (method !== undefined) key += `\u0003${method}`;
  for (const q of query) key += `\u0004${q.name}${q.regex === true ? "\u0002" : "\u0001"}${q.value}`;
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
  readonly regex: Owners;
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
      host = { exact: new Map(), prefix: new Map(), regex: new Map() };
      this.hosts.set(hostname, host);
    }
    const byHeaders =
      pathType === "Exact" ? host.exact : pathType === "PathPrefix" ? host.prefix : host.regex;
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
