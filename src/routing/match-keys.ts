// What a route claims, read from an object admission has not yet trusted:
// (host, match) pairs, as comparable strings. Two matches are the same when
// their path type, normalized path and header claims are, by the same rules
// the snapshot claims with (normalizePath, headerClaims), so the admission
// warning and the Conflicted condition agree (a property test holds them to it).

import type { PathMatchType } from "../api/types.js";
import { headerClaims, queryClaims } from "./claims.js";
import { normalizePath } from "./path-match.js";
import { isRecord } from "../api/is-record.js";

/** Header or query parameter conditions as given, or undefined when they are malformed. */
function conditionsOf(list: unknown): { name: string; value: string; type?: string }[] | undefined {
  if (list === undefined) return [];
  if (!Array.isArray(list)) return undefined;
  const given: { name: string; value: string; type?: string }[] = [];
  for (const h of list) {
    if (!isRecord(h) || typeof h.name !== "string" || typeof h.value !== "string") return undefined;
    given.push(
      typeof h.type === "string"
        ? { name: h.name, value: h.value, type: h.type }
        : { name: h.name, value: h.value },
    );
  }
  return given;
}

/** A claim's condition as JSON: a regular expression is told apart from the same text as an exact value. */
function conditionTuple(c: {
  readonly name: string;
  readonly value: string;
  readonly regex?: true;
}): string[] {
  return c.regex === true ? [c.name, c.value, "RegularExpression"] : [c.name, c.value];
}

/** A v2 match (`{path: {type, value}, headers, queryParams, method}`) as a key; undefined when it is malformed. */
export function matchKey(match: unknown): string | undefined {
  if (!isRecord(match) || !isRecord(match.path) || typeof match.path.value !== "string") return undefined;
  const type = match.path.type === undefined ? "PathPrefix" : match.path.type;
  if (typeof type !== "string") return undefined;
  const given = conditionsOf(match.headers);
  const params = conditionsOf(match.queryParams);
  if (given === undefined || params === undefined) return undefined;
  if (match.method !== undefined && typeof match.method !== "string") return undefined;
  const headers = headerClaims(given).map(conditionTuple);
  const path =
    type === "Exact" || type === "PathPrefix"
      ? normalizePath(type as PathMatchType, match.path.value)
      : match.path.value;
  // Old keys keep their shape: method and query parameters only when a match has them.
  const query = queryClaims(params).map(conditionTuple);
  if (match.method === undefined && query.length === 0) return JSON.stringify([type, path, headers]);
  return JSON.stringify([type, path, headers, match.method ?? null, query]);
}

/** `PathPrefix /api` or `Exact /api with headers x-a=1, x-b=2`, from a matchKey. */
export function describeMatch(key: string): string {
  const [type, value, headers, method, query] = JSON.parse(key) as [
    string,
    string,
    string[][],
    (string | null)?,
    string[][]?,
  ];
  const cond = (c: string[]) => (c[2] === undefined ? `${c[0]}=${c[1]}` : `${c[0]}~${c[1]}`);
  const m = typeof method === "string" ? ` method ${method}` : "";
  const h = headers.length > 0 ? ` with headers ${headers.map(cond).join(", ")}` : "";
  const q = query !== undefined && query.length > 0 ? ` with query ${query.map(cond).join(", ")}` : "";
  return `${type} ${value}${m}${h}${q}`;
}

export interface Claim {
  /** The hostname, or "" for any host. */
  readonly host: string;
  readonly match: string;
}

export function claimKey(c: Claim): string {
  return `${c.host} ${c.match}`;
}

/**
 * The (host, match) pairs a spec claims, read from either version's shape
 * (`rules` for v2, `pathPrefix` for v1), since a cluster without conversion
 * may hand back one shape under the other's apiVersion.
 */
export function claimsOf(spec: unknown): Claim[] {
  if (!isRecord(spec)) return [];
  if (Array.isArray(spec.rules)) {
    const hosts = Array.isArray(spec.hostnames) && spec.hostnames.length > 0 ? spec.hostnames : [""];
    const out: Claim[] = [];
    for (const rule of spec.rules) {
      if (!isRecord(rule) || !Array.isArray(rule.matches)) continue;
      for (const m of rule.matches) {
        const match = matchKey(m);
        if (match === undefined) continue;
        for (const host of hosts) if (typeof host === "string") out.push({ host, match });
      }
    }
    return out;
  }
  if (typeof spec.pathPrefix === "string") {
    const host = typeof spec.host === "string" ? spec.host : "";
    return [
      { host, match: JSON.stringify(["PathPrefix", normalizePath("PathPrefix", spec.pathPrefix), []]) },
    ];
  }
  return [];
}
