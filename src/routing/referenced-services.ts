// Which Services a route references: the watcher indexes routes by them (so a
// Service event re-enqueues the routes that use it) and the route key's
// reconcile reads them to settle Accepted. One reading for both, so they
// never disagree on what a route uses.

import { isRecord } from "../api/is-record.js";
import type { Watched } from "../api/object-key.js";

/**
 * The names of every backend and every RequestMirror's backend of every rule
 * of a v2 route (and the `service` of a v1-shaped one), de-duplicated and
 * sorted; nothing for a malformed spec. Backends are same-namespace only: the
 * route's namespace qualifies them.
 */
export function referencedServices(route: Watched): string[] {
  if (!isRecord(route.spec)) return [];
  const names = new Set<string>();
  const { rules, service } = route.spec;
  if (typeof service === "string" && service) names.add(service);
  if (Array.isArray(rules)) {
    for (const rule of rules) {
      if (!isRecord(rule)) continue;
      const mirrors = Array.isArray(rule.filters)
        ? rule.filters.map((f) =>
            isRecord(f) && isRecord(f.requestMirror) ? f.requestMirror.backend : undefined,
          )
        : [];
      for (const b of [...(Array.isArray(rule.backends) ? rule.backends : []), ...mirrors])
        if (isRecord(b) && typeof b.name === "string" && b.name) names.add(b.name);
    }
  }
  return [...names].sort();
}
