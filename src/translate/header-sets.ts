// A match's conditions besides its path, in the two forms the build needs: the
// claim (for conflicts) and Envoy's matchers. Made once per distinct single
// exact header in a build, since many routes carry the same one (a canary or
// probe header); methods and query parameters are rarer and made as they come.

import {
  conditionKey,
  headerClaims,
  headerKey,
  queryClaims,
  type HeaderClaim,
  type QueryClaim,
  type ValueCondition,
} from "../routing/claims.js";
import type { HeaderMatcher, QueryParameterMatcher, StringMatch } from "../envoy/envoy-resources.js";

export interface HeaderSet {
  /** Lowercase names, one per name, sorted by name. */
  readonly claims: readonly HeaderClaim[];
  /** conditionKey of the claims, method and query: what the claim registry tells matches apart by. */
  readonly key: string;
  /** Header matchers, then `:method` when the match names one. */
  readonly matchers: readonly HeaderMatcher[];
  readonly query: readonly QueryParameterMatcher[];
  /** How many header and query parameter conditions: what route order counts. */
  readonly count: number;
  readonly method: boolean;
}

export const NO_HEADERS: HeaderSet = {
  claims: [],
  key: "",
  matchers: [],
  query: [],
  count: 0,
  method: false,
};

function stringMatch(c: { readonly value: string; readonly regex?: true }): StringMatch {
  return c.regex === true ? { safe_regex: { regex: c.value } } : { exact: c.value };
}

function headerSet(claims: readonly HeaderClaim[]): HeaderSet {
  const matchers = claims.map((h) => ({ name: h.name, string_match: stringMatch(h) }));
  return { claims, key: headerKey(claims), matchers, query: [], count: claims.length, method: false };
}

function fullSet(
  claims: readonly HeaderClaim[],
  method: string | undefined,
  query: readonly QueryClaim[],
): HeaderSet {
  const matchers: HeaderMatcher[] = claims.map((h) => ({ name: h.name, string_match: stringMatch(h) }));
  // Envoy reads the method as the `:method` pseudo-header.
  if (method !== undefined) matchers.push({ name: ":method", string_match: { exact: method } });
  return {
    claims,
    key: conditionKey(claims, method, query),
    matchers,
    query: query.map((q) => ({ name: q.name, string_match: stringMatch(q) })),
    count: claims.length + query.length,
    method: method !== undefined,
  };
}

export class HeaderSets {
  /** Name as written → value → set, for the single exact header case. */
  private readonly single = new Map<string, Map<string, HeaderSet>>();

  /** The conditions as the claims read them; one exact header alone is cached by name and value. */
  of(
    headers: readonly ValueCondition[] | undefined,
    method?: string,
    query?: readonly ValueCondition[],
  ): HeaderSet {
    if (method !== undefined || (query !== undefined && query.length > 0))
      return fullSet(headerClaims(headers), method, queryClaims(query));
    if (headers === undefined || headers.length === 0) return NO_HEADERS;
    if (headers.length === 1 && (headers[0]?.type ?? "Exact") === "Exact") {
      const h = headers[0] as ValueCondition;
      let byValue = this.single.get(h.name);
      if (byValue === undefined) {
        byValue = new Map();
        this.single.set(h.name, byValue);
      }
      let set = byValue.get(h.value);
      if (set === undefined) {
        set = headerSet([{ name: h.name.toLowerCase(), value: h.value }]);
        byValue.set(h.value, set);
      }
      return set;
    }
    return headerSet(headerClaims(headers));
  }
}
