// The snapshot's own check of what a rule says beyond paths, exact headers and
// backends: matches by method, query parameter and regular expression, filters,
// timeouts and retries. Admission refuses all of this with its own messages;
// this is the builder's guard, so that nothing it emits makes Envoy or a gRPC
// client refuse the whole route configuration.

import { fieldError, type FieldError, type FieldPath } from "../api/field-error.js";
import { isRecord } from "../api/is-record.js";
import { parseGatewayDuration } from "../api/duration.js";
import {
  HEADER_NAME_PATTERN,
  HTTP_METHODS,
  LIMITS,
  REDIRECT_STATUS_CODES,
  RETRY_CONDITIONS,
  headerEditProblem,
} from "../api/schema.js";
import { re2Problem } from "./re2-check.js";

const HEADER_NAME = new RegExp(HEADER_NAME_PATTERN);
const METHODS = new Set(HTTP_METHODS);
const VALUE_TYPES = new Set(["Exact", "RegularExpression"]);
const STATUS_CODES = new Set(REDIRECT_STATUS_CODES);
const RETRY_ON = new Set<string>(RETRY_CONDITIONS);

function isPort(v: unknown): boolean {
  return Number.isInteger(v) && (v as number) >= 1 && (v as number) <= 65535;
}

/** A condition's value as Envoy reads it: a RegularExpression must be RE2 within Envoy's size limit. */
function conditionErrors(c: unknown, p: FieldPath, what: "header" | "query"): FieldError[] {
  if (!isRecord(c) || typeof c.name !== "string" || c.name === "")
    return [fieldError(p.child("name"), "Required value", `a ${what} name`)];
  if (what === "header" && !HEADER_NAME.test(c.name))
    return [fieldError(p.child("name"), "Invalid value", "must be an HTTP header name", c.name)];
  if (typeof c.value !== "string")
    return [fieldError(p.child("value"), "Invalid value", "must be a string", c.value)];
  if (c.type !== undefined && (typeof c.type !== "string" || !VALUE_TYPES.has(c.type)))
    return [
      fieldError(
        p.child("type"),
        "Unsupported value",
        'supported values: "Exact", "RegularExpression"',
        c.type,
      ),
    ];
  if (c.type === "RegularExpression") {
    const problem = re2Problem(c.value);
    if (problem !== undefined) return [fieldError(p.child("value"), "Invalid value", problem, c.value)];
  }
  return [];
}

/** A match's method, query parameters and header types (the path and exact headers are route-check's). */
export function matchPolicyErrors(m: Readonly<Record<string, unknown>>, mp: FieldPath): FieldError[] {
  const errors: FieldError[] = [];
  if (m.method !== undefined && (typeof m.method !== "string" || !METHODS.has(m.method)))
    errors.push(fieldError(mp.child("method"), "Unsupported value", "must be an HTTP method", m.method));
  if (m.queryParams !== undefined) {
    if (!Array.isArray(m.queryParams) || m.queryParams.length > LIMITS.headers)
      errors.push(
        fieldError(mp.child("queryParams"), "Invalid value", `must be a list of at most ${LIMITS.headers}`),
      );
    else
      m.queryParams.forEach((q: unknown, i) =>
        errors.push(...conditionErrors(q, mp.child("queryParams").index(i), "query")),
      );
  }
  if (Array.isArray(m.headers))
    m.headers.forEach((h: unknown, i) => {
      if (isRecord(h) && h.type !== undefined)
        errors.push(...conditionErrors(h, mp.child("headers").index(i), "header"));
    });
  if (isRecord(m.path) && m.path.type === "RegularExpression" && typeof m.path.value === "string") {
    const problem = re2Problem(m.path.value);
    if (problem !== undefined)
      errors.push(fieldError(mp.child("path").child("value"), "Invalid value", problem, m.path.value));
  }
  return errors;
}

function durationErrors(v: unknown, p: FieldPath): FieldError[] {
  if (v === undefined) return [];
  if (typeof v === "string" && parseGatewayDuration(v) !== undefined) return [];
  return [fieldError(p, "Invalid value", "must be a Gateway API duration such as 15s or 1m30s", v)];
}

function modifierErrors(m: unknown, p: FieldPath): FieldError[] {
  if (!isRecord(m)) return [fieldError(p, "Required value", "the filter's settings")];
  const errors: FieldError[] = [];
  for (const list of ["set", "add"] as const) {
    const items = m[list];
    if (items === undefined) continue;
    if (!Array.isArray(items)) {
      errors.push(fieldError(p.child(list), "Invalid value", "must be a list", items));
      continue;
    }
    items.forEach((h: unknown, i) => {
      const hp = p.child(list).index(i);
      if (!isRecord(h) || typeof h.name !== "string" || !HEADER_NAME.test(h.name))
        errors.push(fieldError(hp.child("name"), "Invalid value", "must be an HTTP header name"));
      else if (headerEditProblem(h.name) !== undefined)
        errors.push(fieldError(hp.child("name"), "Forbidden", headerEditProblem(h.name) ?? "", h.name));
      else if (typeof h.value !== "string")
        errors.push(fieldError(hp.child("value"), "Invalid value", "must be a string", h.value));
    });
  }
  if (m.remove !== undefined) {
    if (!Array.isArray(m.remove))
      errors.push(fieldError(p.child("remove"), "Invalid value", "must be a list"));
    else
      m.remove.forEach((n: unknown, i) => {
        if (typeof n !== "string" || !HEADER_NAME.test(n))
          errors.push(
            fieldError(p.child("remove").index(i), "Invalid value", "must be an HTTP header name", n),
          );
        else if (headerEditProblem(n) !== undefined)
          errors.push(fieldError(p.child("remove").index(i), "Forbidden", headerEditProblem(n) ?? "", n));
      });
  }
  return errors;
}

function pathModifierErrors(m: unknown, p: FieldPath, regexMatch: boolean): FieldError[] {
  if (m === undefined) return [];
  if (!isRecord(m)) return [fieldError(p, "Invalid value", "must be an object")];
  if (
    m.type === "ReplaceFullPath" &&
    typeof m.replaceFullPath === "string" &&
    m.replaceFullPath.startsWith("/")
  )
    return [];
  if (
    m.type === "ReplacePrefixMatch" &&
    typeof m.replacePrefixMatch === "string" &&
    m.replacePrefixMatch.startsWith("/")
  )
    return regexMatch
      ? [fieldError(p, "Invalid value", "ReplacePrefixMatch needs PathPrefix matches only")]
      : [];
  return [fieldError(p, "Invalid value", "a ReplaceFullPath or ReplacePrefixMatch path starting with '/'")];
}

function filterErrors(f: unknown, fp: FieldPath, regexMatch: boolean): FieldError[] {
  if (!isRecord(f)) return [fieldError(fp, "Invalid value", "must be an object", f)];
  switch (f.type) {
    case "RequestHeaderModifier":
      return modifierErrors(f.requestHeaderModifier, fp.child("requestHeaderModifier"));
    case "ResponseHeaderModifier":
      return modifierErrors(f.responseHeaderModifier, fp.child("responseHeaderModifier"));
    case "RequestRedirect": {
      const r = f.requestRedirect;
      const rp = fp.child("requestRedirect");
      if (!isRecord(r)) return [fieldError(rp, "Required value", "the filter's settings")];
      const errors = pathModifierErrors(r.path, rp.child("path"), regexMatch);
      if (r.scheme !== undefined && r.scheme !== "http" && r.scheme !== "https")
        errors.push(
          fieldError(rp.child("scheme"), "Unsupported value", 'supported values: "http", "https"', r.scheme),
        );
      if (r.port !== undefined && !isPort(r.port))
        errors.push(fieldError(rp.child("port"), "Invalid value", "must be between 1 and 65535", r.port));
      if (r.statusCode !== undefined && !STATUS_CODES.has(r.statusCode as number))
        errors.push(
          fieldError(
            rp.child("statusCode"),
            "Unsupported value",
            "supported values: 301, 302, 303, 307, 308",
            r.statusCode,
          ),
        );
      if (r.hostname !== undefined && typeof r.hostname !== "string")
        errors.push(fieldError(rp.child("hostname"), "Invalid value", "must be a string", r.hostname));
      return errors;
    }
    case "URLRewrite": {
      const u = f.urlRewrite;
      const up = fp.child("urlRewrite");
      if (!isRecord(u)) return [fieldError(up, "Required value", "the filter's settings")];
      const errors = pathModifierErrors(u.path, up.child("path"), regexMatch);
      if (u.hostname !== undefined && typeof u.hostname !== "string")
        errors.push(fieldError(up.child("hostname"), "Invalid value", "must be a string", u.hostname));
      return errors;
    }
    case "RequestMirror": {
      const m = f.requestMirror;
      const mp = fp.child("requestMirror");
      if (
        !isRecord(m) ||
        !isRecord(m.backend) ||
        typeof m.backend.name !== "string" ||
        m.backend.name === "" ||
        !isPort(m.backend.port)
      )
        return [fieldError(mp.child("backend"), "Required value", "a Service name and port")];
      if (
        m.percent !== undefined &&
        (!Number.isInteger(m.percent) || (m.percent as number) < 0 || (m.percent as number) > 100)
      )
        return [
          fieldError(mp.child("percent"), "Invalid value", "must be a whole number from 0 to 100", m.percent),
        ];
      return [];
    }
    default:
      return [
        fieldError(
          fp.child("type"),
          "Unsupported value",
          "not a filter type this operator translates",
          f.type,
        ),
      ];
  }
}

/** The rule's filters, timeouts and retry, as the builder needs them. */
export function rulePolicyErrors(rule: Readonly<Record<string, unknown>>, rp: FieldPath): FieldError[] {
  const errors: FieldError[] = [];
  const matches = Array.isArray(rule.matches) ? (rule.matches as unknown[]) : [];
  const regexMatch = matches.some(
    (m) => isRecord(m) && isRecord(m.path) && m.path.type !== undefined && m.path.type !== "PathPrefix",
  );
  if (rule.filters !== undefined) {
    if (!Array.isArray(rule.filters))
      errors.push(fieldError(rp.child("filters"), "Invalid value", "must be a list"));
    else {
      rule.filters.forEach((f: unknown, i) =>
        errors.push(...filterErrors(f, rp.child("filters").index(i), regexMatch)),
      );
      const redirects = rule.filters.filter((f) => isRecord(f) && f.type === "RequestRedirect").length;
      const rewrites = rule.filters.filter((f) => isRecord(f) && f.type === "URLRewrite").length;
      if (redirects > 1 || rewrites > 1 || (redirects > 0 && rewrites > 0))
        errors.push(
          fieldError(rp.child("filters"), "Invalid value", "at most one RequestRedirect or one URLRewrite"),
        );
      if (redirects > 0 && Array.isArray(rule.backends) && rule.backends.length > 0)
        errors.push(
          fieldError(rp.child("backends"), "Forbidden", "a rule with a RequestRedirect sends to no backend"),
        );
    }
  }
  if (rule.timeouts !== undefined) {
    if (!isRecord(rule.timeouts))
      errors.push(fieldError(rp.child("timeouts"), "Invalid value", "must be an object"));
    else {
      errors.push(...durationErrors(rule.timeouts.request, rp.child("timeouts").child("request")));
      errors.push(
        ...durationErrors(rule.timeouts.backendRequest, rp.child("timeouts").child("backendRequest")),
      );
    }
  }
  if (rule.retry !== undefined) {
    const r = rule.retry;
    const p = rp.child("retry");
    if (!isRecord(r)) errors.push(fieldError(p, "Invalid value", "must be an object"));
    else {
      if (
        r.attempts !== undefined &&
        (!Number.isInteger(r.attempts) || (r.attempts as number) < 0 || (r.attempts as number) > 10)
      )
        errors.push(
          fieldError(p.child("attempts"), "Invalid value", "must be a whole number from 0 to 10", r.attempts),
        );
      if (
        r.codes !== undefined &&
        (!Array.isArray(r.codes) || r.codes.some((c) => !Number.isInteger(c) || c < 500 || c > 599))
      )
        errors.push(
          fieldError(p.child("codes"), "Invalid value", "must be HTTP status codes from 500 to 599"),
        );
      if (
        r.conditions !== undefined &&
        (!Array.isArray(r.conditions) || r.conditions.some((c) => typeof c !== "string" || !RETRY_ON.has(c)))
      )
        errors.push(
          fieldError(
            p.child("conditions"),
            "Unsupported value",
            "must be retry conditions this operator knows",
          ),
        );
      errors.push(...durationErrors(r.backoff, p.child("backoff")));
    }
  }
  return errors;
}

/** Whether a rule has anything rulePolicyErrors reads: plain rules skip it. */
export function hasRulePolicies(rule: Readonly<Record<string, unknown>>): boolean {
  return rule.filters !== undefined || rule.timeouts !== undefined || rule.retry !== undefined;
}

/** Whether a rule with no backends answers with a redirect. */
export function redirectsOnly(rule: Readonly<Record<string, unknown>>): boolean {
  return Array.isArray(rule.filters) && rule.filters.some((f) => isRecord(f) && f.type === "RequestRedirect");
}

/** Whether a match has anything matchPolicyErrors reads. */
export function hasMatchPolicies(m: Readonly<Record<string, unknown>>): boolean {
  return (
    m.method !== undefined ||
    m.queryParams !== undefined ||
    (isRecord(m.path) && m.path.type === "RegularExpression") ||
    (Array.isArray(m.headers) && m.headers.some((h) => isRecord(h) && h.type !== undefined))
  );
}
