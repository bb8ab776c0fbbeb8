// A match's header conditions, in the two forms the build needs: the claim (for
// conflicts) and Envoy's header matchers. Made once per distinct single header
// in a build, since many routes carry the same one (a canary or probe header).

import { headerClaims, headerKey, type HeaderClaim } from "../routing/claims.js";
import type { HeaderMatcher } from "../envoy/envoy-resources.js";

export interface HeaderSet {
  /** Lowercase names, one per name, sorted by name. */
  readonly claims: readonly HeaderClaim[];
  /** headerKey(claims): what the claim registry tells header sets apart by. */
  readonly key: string;
  readonly matchers: readonly HeaderMatcher[];
}

export const NO_HEADERS: HeaderSet = { claims: [], key: "", matchers: [] };

function headerSet(claims: readonly HeaderClaim[]): HeaderSet {
  const matchers = claims.map((h) => ({ name: h.name, string_match: { exact: h.value } }));
  return { claims, key: headerKey(claims), matchers };
}

export class HeaderSets {
  /** Name as written → value → set, for the single-header case. */
  private readonly single = new Map<string, Map<string, HeaderSet>>();

  /** The claims as headerClaims reads them; one header alone is cached by name and value. */
  of(headers: readonly { readonly name: string; readonly value: string }[] | undefined): HeaderSet {
    if (headers === undefined || headers.length === 0) return NO_HEADERS;
    if (headers.length === 1) {
      const h = headers[0] as { readonly name: string; readonly value: string };
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
