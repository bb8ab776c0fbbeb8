// The snapshot's guard: whether a stored route may be programmed. It applies
// admission's own rule set (validate.ts) to every route the cache holds, so a
// route stored without admission (a namespace the webhooks leave out, a
// webhook down with failurePolicy Ignore, an object from before an upgrade, a
// v1 object converted) is refused by the same rules, with the same words, and
// never reaches a proxy: Envoy and gRPC clients refuse an update whole, so one
// tenant's bad route would freeze every tenant's. Then the backends must exist.

import { fieldError, FieldPath, formatFieldError, type FieldError } from "../api/field-error.js";
import type { EdgeRouteV2, RouteRule } from "../api/types.js";
import { objectKey } from "../api/object-key.js";
import type { ServiceEndpoints } from "../routing/service-endpoints.js";
import { validateRoute } from "./validate.js";

export type RouteCheck =
  | { readonly ok: true }
  | { readonly ok: false; readonly reason: "Invalid" | "ServiceNotFound"; readonly message: string };

function metadataErrors(route: EdgeRouteV2): FieldError[] {
  const errors: FieldError[] = [];
  const meta = FieldPath.root("metadata");
  if (typeof route.metadata?.name !== "string" || route.metadata.name === "")
    errors.push(fieldError(meta.child("name"), "Required value", "a route needs a name"));
  if (typeof route.metadata?.namespace !== "string" || route.metadata.namespace === "")
    errors.push(fieldError(meta.child("namespace"), "Required value", "a route needs a namespace"));
  return errors;
}

/**
 * Every reason the route cannot be programmed whatever exists around it:
 * admission's rules, as v2. A build asks once per route object
 * (translate/model.ts keeps the answer with the object).
 */
export function routeProblems(route: EdgeRouteV2): readonly FieldError[] {
  return [...metadataErrors(route), ...validateRoute(route, "v2")];
}

/** Whether the route passes the rule set (routeProblems is empty). */
export function isProgrammable(route: EdgeRouteV2): boolean {
  return routeProblems(route).length === 0;
}

/** The Services a rule sends to: its backends, then its mirrors'. */
export function backendsAndMirrors(
  rule: RouteRule,
): readonly { readonly name: string; readonly port: number }[] {
  if (rule.filters === undefined) return rule.backends;
  const mirrors = rule.filters.flatMap((f) => (f.type === "RequestMirror" ? [f.requestMirror.backend] : []));
  return mirrors.length === 0 ? rule.backends : [...rule.backends, ...mirrors];
}

/** Backends whose Service, or whose port on it, does not exist. Call only on a route without problems. */
export function missingBackends(
  route: EdgeRouteV2,
  services: ReadonlyMap<string, ServiceEndpoints>,
): string[] {
  const ns = route.metadata.namespace ?? "";
  const missing = new Set<string>();
  for (const rule of route.spec.rules) {
    for (const b of backendsAndMirrors(rule)) {
      const service = services.get(objectKey(ns, b.name));
      if (service === undefined) missing.add(`Service ${objectKey(ns, b.name)} not found`);
      else if (!service.ports.some((p) => p.port === b.port))
        missing.add(`Service ${objectKey(ns, b.name)} has no port ${b.port}`);
    }
  }
  return [...missing];
}

function backendsExist(route: EdgeRouteV2, services: ReadonlyMap<string, ServiceEndpoints>): boolean {
  const ns = route.metadata.namespace ?? "";
  for (const rule of route.spec.rules)
    for (const b of backendsAndMirrors(rule)) {
      const service = services.get(objectKey(ns, b.name));
      if (service === undefined || !service.ports.some((p) => p.port === b.port)) return false;
    }
  return true;
}

const OK: RouteCheck = { ok: true };

/** Whether a route can be programmed at all, before conflicts are weighed. */
export function checkRoute(route: EdgeRouteV2, services: ReadonlyMap<string, ServiceEndpoints>): RouteCheck {
  const errors = routeProblems(route);
  if (errors.length > 0)
    return { ok: false, reason: "Invalid", message: errors.map(formatFieldError).join("; ") };
  if (backendsExist(route, services)) return OK;
  return { ok: false, reason: "ServiceNotFound", message: missingBackends(route, services).join("; ") };
}
