// What the snapshot needs from a route before it can program it: a shape Envoy
// will take (the webhook should have refused anything else, but the builder must
// never emit config that makes Envoy reject the whole update) and backends whose
// Services and ports exist. Every problem is reported at once, as field errors.

import { fieldError, FieldPath, formatFieldError, type FieldError } from "../api/field-error.js";
import { HEADER_NAME_PATTERN, HOSTNAME_PATTERN, LIMITS } from "../api/schema.js";
import { isRecord } from "../api/is-record.js";
import type { EdgeRouteV2, RouteRule } from "../api/types.js";
import { parseGatewayDuration } from "../api/duration.js";
import { pathProblem } from "./path-match.js";
import {
  hasMatchPolicies,
  hasRulePolicies,
  matchPolicyErrors,
  redirectsOnly,
  rulePolicyErrors,
} from "./rule-policy-check.js";
import { objectKey } from "../api/object-key.js";
import type { ServiceEndpoints } from "./service-endpoints.js";

export type RouteCheck =
  | { readonly ok: true }
  | { readonly ok: false; readonly reason: "Invalid" | "ServiceNotFound"; readonly message: string };

const HOSTNAME = new RegExp(HOSTNAME_PATTERN);
const HEADER_NAME = new RegExp(HEADER_NAME_PATTERN);

// Many routes share a few hosts: remember the good ones (bounded, so odd input cannot grow it).
const goodHostnames = new Set<string>();

function isHostname(h: string): boolean {
  if (goodHostnames.has(h)) return true;
  if (!HOSTNAME.test(h)) return false;
  if (goodHostnames.size >= 10_000) goodHostnames.clear();
  goodHostnames.add(h);
  return true;
}

function isPort(v: unknown): v is number {
  return Number.isInteger(v) && (v as number) >= 1 && (v as number) <= 65535;
}

/** Structural problems: what would make the Envoy config invalid. */
export function shapeErrors(route: EdgeRouteV2): FieldError[] {
  const errors: FieldError[] = [];
  const meta = FieldPath.root("metadata");
  if (typeof route.metadata?.name !== "string" || route.metadata.name === "")
    errors.push(fieldError(meta.child("name"), "Required value", "a route needs a name"));
  if (typeof route.metadata?.namespace !== "string" || route.metadata.namespace === "")
    errors.push(fieldError(meta.child("namespace"), "Required value", "a route needs a namespace"));
  const spec = FieldPath.root("spec");
  const specValue: unknown = route.spec;
  if (!isRecord(specValue)) return [...errors, fieldError(spec, "Required value", "a route needs a spec")];
  const hostnames: unknown = specValue.hostnames;
  if (hostnames !== undefined) {
    if (!Array.isArray(hostnames))
      errors.push(fieldError(spec.child("hostnames"), "Invalid value", "must be a list", hostnames));
    else
      hostnames.forEach((h: unknown, i) => {
        if (typeof h !== "string" || !HOSTNAME.test(h))
          errors.push(
            fieldError(
              spec.child("hostnames").index(i),
              "Invalid value",
              "must be a DNS-1123 subdomain or *.domain",
              h,
            ),
          );
      });
  }
  const rules: unknown = specValue.rules;
  if (!Array.isArray(rules) || rules.length === 0) {
    errors.push(fieldError(spec.child("rules"), "Required value", "at least one rule"));
    return errors;
  }
  if (rules.length > LIMITS.rules)
    errors.push(
      fieldError(spec.child("rules"), "Too many", `must have at most ${LIMITS.rules} items`, rules.length),
    );
  rules.forEach((rule: unknown, r) => {
    const rp = spec.child("rules").index(r);
    if (!isRecord(rule)) {
      errors.push(fieldError(rp, "Invalid value", "must be an object", rule));
      return;
    }
    if (!Array.isArray(rule.matches) || rule.matches.length === 0)
      errors.push(fieldError(rp.child("matches"), "Required value", "at least one match"));
    else {
      if (rule.matches.length > LIMITS.matches)
        errors.push(
          fieldError(
            rp.child("matches"),
            "Too many",
            `must have at most ${LIMITS.matches} items`,
            rule.matches.length,
          ),
        );
      rule.matches.forEach((m: unknown, i) => errors.push(...matchErrors(m, rp.child("matches").index(i))));
    }
    if (!Array.isArray(rule.backends) || rule.backends.length === 0) {
      if (!(Array.isArray(rule.backends) && redirectsOnly(rule)))
        errors.push(fieldError(rp.child("backends"), "Required value", "at least one backend"));
    } else errors.push(...backendErrors(rule.backends, rp.child("backends")));
    if (hasRulePolicies(rule)) errors.push(...rulePolicyErrors(rule, rp));
    if (
      rule.timeout !== undefined &&
      (typeof rule.timeout !== "string" || parseGatewayDuration(rule.timeout) === undefined)
    )
      errors.push(
        fieldError(
          rp.child("timeout"),
          "Invalid value",
          "must be a Gateway API duration such as 15s or 1m30s",
          rule.timeout,
        ),
      );
  });
  return errors;
}

function matchErrors(m: unknown, mp: FieldPath): FieldError[] {
  if (!isRecord(m) || !isRecord(m.path))
    return [fieldError(mp.child("path"), "Required value", "a match needs a path")];
  const errors: FieldError[] = [];
  const { type, value } = m.path;
  if (type !== undefined && type !== "Exact" && type !== "PathPrefix" && type !== "RegularExpression")
    errors.push(
      fieldError(
        mp.child("path").child("type"),
        "Unsupported value",
        'supported values: "Exact", "PathPrefix", "RegularExpression"',
        type,
      ),
    );
  const problem =
    typeof value !== "string"
      ? "must be a string"
      : value.length > LIMITS.pathLength
        ? `must be at most ${LIMITS.pathLength} characters`
        : type === "RegularExpression"
          ? undefined
          : pathProblem(value);
  if (problem !== undefined)
    errors.push(fieldError(mp.child("path").child("value"), "Invalid value", problem, value));
  if (m.headers !== undefined) {
    if (!Array.isArray(m.headers))
      errors.push(fieldError(mp.child("headers"), "Invalid value", "must be a list", m.headers));
    else if (m.headers.length > LIMITS.headers)
      errors.push(
        fieldError(
          mp.child("headers"),
          "Too many",
          `must have at most ${LIMITS.headers} items`,
          m.headers.length,
        ),
      );
    else
      m.headers.forEach((h: unknown, i) => {
        const hp = mp.child("headers").index(i);
        if (!isRecord(h) || typeof h.name !== "string" || !HEADER_NAME.test(h.name))
          errors.push(
            fieldError(
              hp.child("name"),
              "Invalid value",
              "must be an HTTP header name",
              isRecord(h) ? h.name : h,
            ),
          );
        else if (typeof h.value !== "string")
          errors.push(fieldError(hp.child("value"), "Invalid value", "must be a string", h.value));
      });
  }
  if (hasMatchPolicies(m)) errors.push(...matchPolicyErrors(m, mp));
  return errors;
}

function backendErrors(backends: readonly unknown[], bp: FieldPath): FieldError[] {
  const errors: FieldError[] = [];
  let weighted = false;
  backends.forEach((b: unknown, i) => {
    const p = bp.index(i);
    if (!isRecord(b)) {
      errors.push(fieldError(p, "Invalid value", "must be an object", b));
      return;
    }
    if (typeof b.name !== "string" || b.name === "")
      errors.push(fieldError(p.child("name"), "Required value", "a Service name"));
    if (!isPort(b.port))
      errors.push(fieldError(p.child("port"), "Invalid value", "must be between 1 and 65535", b.port));
    if (
      b.weight !== undefined &&
      (!Number.isInteger(b.weight) || (b.weight as number) < 0 || (b.weight as number) > 0xffffffff)
    )
      errors.push(
        fieldError(p.child("weight"), "Invalid value", "must be a whole number of at least 0", b.weight),
      );
    if (b.weight === undefined || (b.weight as number) > 0) weighted = true;
  });
  if (errors.length === 0 && !weighted)
    errors.push(fieldError(bp, "Invalid value", "at least one backend must have a weight above 0"));
  return errors;
}

/** Backends whose Service, or whose port on it, does not exist. Call only on a route without shape errors. */
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

/** The Services a rule sends to: its backends, then its mirrors'. */
function backendsAndMirrors(rule: RouteRule): readonly { readonly name: string; readonly port: number }[] {
  if (rule.filters === undefined) return rule.backends;
  const mirrors = rule.filters.flatMap((f) => (f.type === "RequestMirror" ? [f.requestMirror.backend] : []));
  return mirrors.length === 0 ? rule.backends : [...rule.backends, ...mirrors];
}

function isNonEmptyString(v: unknown): v is string {
  return typeof v === "string" && v !== "";
}

/**
 * The fast path: shapeErrors(route) is empty, decided without building a
 * single field path. A property test holds the two to the same answer.
 */
export function isWellShaped(route: EdgeRouteV2): boolean {
  if (!isNonEmptyString(route.metadata?.name) || !isNonEmptyString(route.metadata.namespace)) return false;
  const spec: unknown = route.spec;
  if (!isRecord(spec)) return false;
  const { hostnames, rules } = spec;
  if (hostnames !== undefined) {
    if (!Array.isArray(hostnames)) return false;
    for (const h of hostnames as unknown[]) if (typeof h !== "string" || !isHostname(h)) return false;
  }
  if (!Array.isArray(rules) || rules.length === 0 || rules.length > LIMITS.rules) return false;
  for (const rule of rules as unknown[]) {
    if (!isRecord(rule)) return false;
    const { matches, backends, timeout } = rule;
    if (!Array.isArray(matches) || matches.length === 0 || matches.length > LIMITS.matches) return false;
    for (const m of matches as unknown[]) {
      if (!isRecord(m) || !isRecord(m.path)) return false;
      const { type, value } = m.path;
      if (type !== undefined && type !== "Exact" && type !== "PathPrefix" && type !== "RegularExpression")
        return false;
      if (
        typeof value !== "string" ||
        value.length > LIMITS.pathLength ||
        (type !== "RegularExpression" && pathProblem(value) !== undefined)
      )
        return false;
      if (hasMatchPolicies(m) && matchPolicyErrors(m, FieldPath.root("m")).length > 0) return false;
      if (m.headers !== undefined) {
        if (!Array.isArray(m.headers) || m.headers.length > LIMITS.headers) return false;
        for (const h of m.headers as unknown[])
          if (
            !isRecord(h) ||
            typeof h.name !== "string" ||
            !HEADER_NAME.test(h.name) ||
            typeof h.value !== "string"
          )
            return false;
      }
    }
    if (hasRulePolicies(rule) && rulePolicyErrors(rule, FieldPath.root("r")).length > 0) return false;
    if (!Array.isArray(backends)) return false;
    // A redirect sends to no backend: nothing to weigh.
    let weighted = backends.length === 0 && redirectsOnly(rule);
    for (const b of backends as unknown[]) {
      if (!isRecord(b) || !isNonEmptyString(b.name) || !isPort(b.port)) return false;
      const w = b.weight;
      if (w !== undefined && (!Number.isInteger(w) || (w as number) < 0 || (w as number) > 0xffffffff))
        return false;
      if (w === undefined || (w as number) > 0) weighted = true;
    }
    if (!weighted) return false;
    if (timeout !== undefined && (typeof timeout !== "string" || parseGatewayDuration(timeout) === undefined))
      return false;
  }
  return true;
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
  if (isWellShaped(route) && backendsExist(route, services)) return OK;
  const errors = shapeErrors(route);
  if (errors.length > 0)
    return { ok: false, reason: "Invalid", message: errors.map(formatFieldError).join("; ") };
  const missing = missingBackends(route, services);
  if (missing.length > 0) return { ok: false, reason: "ServiceNotFound", message: missing.join("; ") };
  return { ok: true };
}
