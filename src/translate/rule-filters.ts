// What a rule's filters, timeouts and retry policy make of its Envoy route:
// header edits on the route entry, a redirect instead of a route action, and
// rewrites, mirrors and the retry policy on the action. A rule without any of
// them keeps the shared action of route-actions.ts untouched, so the snapshot
// of such routes is byte for byte what it was before they existed.

import { parseGatewayDuration } from "../api/duration.js";
import type {
  HeaderModifier,
  PathMatchType,
  RequestRedirect,
  RetryCondition,
  RetryPolicy,
  RouteRule,
} from "../api/types.js";
import type {
  HeaderValueOption,
  MirrorPolicy,
  RedirectAction,
  RedirectResponseCode,
  RouteAction,
  RouteHeaderEdits,
  RetryPolicy as EnvoyRetryPolicy,
} from "../envoy/envoy-resources.js";
import { protoDuration } from "../envoy/proto-duration.js";

/** A rule as its route entries read it. */
export interface RuleForm {
  /** Absent for a redirect, which sends nothing to a backend. */
  readonly action?: RouteAction;
  readonly redirect?: RedirectAction;
  readonly edits?: RouteHeaderEdits;
  /**
   * A ReplacePrefixMatch to `/`: Envoy's prefix_rewrite would leave `//rest`,
   * so each match gets a regex of its own prefix (perEntry).
   */
  readonly slashPrefix?: "rewrite" | "redirect";
}

/** Whether a rule says anything beyond backends and `timeout`. */
export function hasPolicies(rule: RouteRule): boolean {
  return (
    (rule.filters !== undefined && rule.filters.length > 0) ||
    rule.timeouts !== undefined ||
    rule.retry !== undefined
  );
}

/** Whether a rule answers with a redirect. */
export function isRedirectRule(rule: RouteRule): boolean {
  return rule.filters?.some((f) => f.type === "RequestRedirect") ?? false;
}

function retries(rule: RouteRule): boolean {
  return rule.retry !== undefined && (rule.retry.attempts ?? 1) > 0;
}

/**
 * The route's timeout as text: `timeouts.request` (or the older `timeout`);
 * without retries there is one attempt, so a shorter `backendRequest` bounds it.
 */
export function effectiveTimeout(rule: RouteRule): string | undefined {
  const request = rule.timeouts?.request ?? rule.timeout;
  const backend = rule.timeouts?.backendRequest;
  if (backend === undefined || retries(rule)) return request;
  if (request === undefined) return backend;
  const r = parseGatewayDuration(request);
  const b = parseGatewayDuration(backend);
  return r !== undefined && b !== undefined && b < r ? backend : request;
}

const RETRY_ON: Readonly<Record<RetryCondition, string>> = {
  "5xx": "5xx",
  GatewayError: "gateway-error",
  Reset: "reset",
  ConnectFailure: "connect-failure",
  Cancelled: "cancelled",
  DeadlineExceeded: "deadline-exceeded",
  Internal: "internal",
  ResourceExhausted: "resource-exhausted",
  Unavailable: "unavailable",
};

/** Without conditions or codes: what Envoy Gateway retries on by default. */
const DEFAULT_RETRY_ON = "connect-failure,refused-stream,unavailable,cancelled";

function durationOf(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  const ms = parseGatewayDuration(text);
  return ms === undefined ? undefined : protoDuration(ms);
}

function retryPolicyOf(rule: RouteRule, retry: RetryPolicy): EnvoyRetryPolicy {
  const on = [...new Set((retry.conditions ?? []).map((c) => RETRY_ON[c]))];
  const codes = retry.codes ?? [];
  if (codes.length > 0) on.push("retriable-status-codes");
  const perTry = durationOf(rule.timeouts?.backendRequest);
  const backoff = durationOf(retry.backoff);
  return {
    retry_on: on.length === 0 ? DEFAULT_RETRY_ON : on.join(","),
    ...(retry.attempts === undefined ? {} : { num_retries: retry.attempts }),
    ...(perTry === undefined ? {} : { per_try_timeout: perTry }),
    ...(codes.length === 0 ? {} : { retriable_status_codes: [...codes] }),
    ...(backoff === undefined ? {} : { retry_back_off: { base_interval: backoff } }),
  };
}

/**
 * A Gateway API header value (literal) as Envoy's headers_to_add read it: a
 * format string, where `%` starts a command operator and `%%` is a percent
 * (Envoy docs, "Custom request/response headers"). Sent as written, `100%` or
 * an unknown `%VAR%` fails the whole route configuration, every tenant's.
 */
export function literalHeaderValue(value: string): string {
  return value.includes("%") ? value.replaceAll("%", "%%") : value;
}

function headerOptions(m: HeaderModifier): HeaderValueOption[] {
  const out: HeaderValueOption[] = [];
  for (const h of m.set ?? [])
    out.push({
      header: { key: h.name, value: literalHeaderValue(h.value) },
      append_action: "OVERWRITE_IF_EXISTS_OR_ADD",
    });
  for (const h of m.add ?? [])
    out.push({
      header: { key: h.name, value: literalHeaderValue(h.value) },
      append_action: "APPEND_IF_EXISTS_OR_ADD",
    });
  return out;
}

function headerEditsOf(rule: RouteRule): RouteHeaderEdits | undefined {
  const reqAdd: HeaderValueOption[] = [];
  const reqRemove: string[] = [];
  const resAdd: HeaderValueOption[] = [];
  const resRemove: string[] = [];
  for (const f of rule.filters ?? []) {
    if (f.type === "RequestHeaderModifier") {
      reqAdd.push(...headerOptions(f.requestHeaderModifier));
      reqRemove.push(...(f.requestHeaderModifier.remove ?? []));
    } else if (f.type === "ResponseHeaderModifier") {
      resAdd.push(...headerOptions(f.responseHeaderModifier));
      resRemove.push(...(f.responseHeaderModifier.remove ?? []));
    }
  }
  if (reqAdd.length + reqRemove.length + resAdd.length + resRemove.length === 0) return undefined;
  return {
    ...(reqAdd.length === 0 ? {} : { request_headers_to_add: reqAdd }),
    ...(reqRemove.length === 0 ? {} : { request_headers_to_remove: reqRemove }),
    ...(resAdd.length === 0 ? {} : { response_headers_to_add: resAdd }),
    ...(resRemove.length === 0 ? {} : { response_headers_to_remove: resRemove }),
  };
}

const RESPONSE_CODES: Readonly<Record<number, RedirectResponseCode>> = {
  301: "MOVED_PERMANENTLY",
  302: "FOUND",
  303: "SEE_OTHER",
  307: "TEMPORARY_REDIRECT",
  308: "PERMANENT_REDIRECT",
};

/** A replacement prefix as Gateway API means it: `/v2/` and `/v2` are one prefix. */
function trimmedPrefix(value: string): string {
  let end = value.length;
  while (end > 1 && value.charCodeAt(end - 1) === 47 /* / */) end--;
  return value.slice(0, end);
}

function redirectOf(r: RequestRedirect): RedirectAction {
  const path = r.path;
  return {
    ...(r.scheme === undefined ? {} : { scheme_redirect: r.scheme }),
    ...(r.hostname === undefined ? {} : { host_redirect: r.hostname }),
    ...(r.port === undefined ? {} : { port_redirect: r.port }),
    ...(path?.type === "ReplaceFullPath" ? { path_redirect: path.replaceFullPath } : {}),
    ...(path?.type === "ReplacePrefixMatch" && trimmedPrefix(path.replacePrefixMatch) !== "/"
      ? { prefix_rewrite: trimmedPrefix(path.replacePrefixMatch) }
      : {}),
    response_code: RESPONSE_CODES[r.statusCode ?? 302] ?? "FOUND",
  };
}

/**
 * The rule's form; `base` is its shared action (undefined for a redirect), and
 * `clusterOf` names a mirror's cluster. Undefined when a mirror's Service or
 * port does not exist.
 */
export function ruleForm(
  rule: RouteRule,
  base: RouteAction | undefined,
  clusterOf: (service: string, port: number) => string | undefined,
): RuleForm | undefined {
  const edits = headerEditsOf(rule);
  const redirectFilter = rule.filters?.find((f) => f.type === "RequestRedirect");
  if (redirectFilter !== undefined) {
    const r = redirectFilter.requestRedirect;
    const slash = r.path?.type === "ReplacePrefixMatch" && trimmedPrefix(r.path.replacePrefixMatch) === "/";
    return {
      redirect: redirectOf(r),
      ...(edits === undefined ? {} : { edits }),
      ...(slash ? { slashPrefix: "redirect" as const } : {}),
    };
  }
  if (base === undefined) return undefined;
  const mirrors: MirrorPolicy[] = [];
  let rewrite: RouteAction | undefined;
  let slash = false;
  let host: string | undefined;
  for (const f of rule.filters ?? []) {
    if (f.type === "RequestMirror") {
      const cluster = clusterOf(f.requestMirror.backend.name, f.requestMirror.backend.port);
      if (cluster === undefined) return undefined;
      const percent = f.requestMirror.percent ?? 100;
      mirrors.push(
        percent >= 100
          ? { cluster }
          : { cluster, runtime_fraction: { default_value: { numerator: percent, denominator: "HUNDRED" } } },
      );
    } else if (f.type === "URLRewrite") {
      const p = f.urlRewrite.path;
      host = f.urlRewrite.hostname;
      if (p?.type === "ReplaceFullPath")
        rewrite = {
          ...base,
          // RE2 reads `\N` in a substitution as a capture group: the path is literal, so each backslash is doubled.
          regex_rewrite: {
            pattern: { regex: "^/.*$" },
            substitution: p.replaceFullPath.replaceAll("\\", "\\\\"),
          },
        };
      else if (p?.type === "ReplacePrefixMatch") {
        const prefix = trimmedPrefix(p.replacePrefixMatch);
        if (prefix === "/") slash = true;
        else rewrite = { ...base, prefix_rewrite: prefix };
      }
    }
  }
  const retry = retries(rule) ? retryPolicyOf(rule, rule.retry as RetryPolicy) : undefined;
  const start = rewrite ?? base;
  const action: RouteAction =
    host === undefined && retry === undefined && mirrors.length === 0 && start === base
      ? base
      : {
          ...start,
          ...(host === undefined ? {} : { host_rewrite_literal: host }),
          ...(retry === undefined ? {} : { retry_policy: retry }),
          ...(mirrors.length === 0 ? {} : { request_mirror_policies: mirrors }),
        };
  return {
    action,
    ...(edits === undefined ? {} : { edits }),
    ...(slash ? { slashPrefix: "rewrite" as const } : {}),
  };
}

/** RE2 with every metacharacter of `text` escaped. */
function quoteRegex(text: string): string {
  return text.replace(/[\\^$.|?*+()[\]{}]/g, "\\$&");
}

/** A prefix replaced by `/`, as a regex rewrite of this match's own prefix (with the slashes after it). */
function slashRewrite(
  pathType: PathMatchType,
  path: string,
): { pattern: { regex: string }; substitution: string } | undefined {
  if (pathType !== "PathPrefix" || path === "/") return undefined;
  return { pattern: { regex: `^${quoteRegex(path)}/*` }, substitution: "/" };
}

/** The action and redirect of one match of the rule: only a prefix replaced by `/` differs from match to match. */
export function perEntry(
  form: RuleForm,
  pathType: PathMatchType,
  path: string,
): { readonly action?: RouteAction; readonly redirect?: RedirectAction } {
  if (form.slashPrefix === undefined) return form;
  const regex_rewrite = slashRewrite(pathType, path);
  if (form.slashPrefix === "rewrite" && form.action !== undefined)
    return { action: regex_rewrite === undefined ? form.action : { ...form.action, regex_rewrite } };
  if (form.redirect !== undefined) {
    const { response_code, ...rest } = form.redirect;
    const redirect: RedirectAction =
      regex_rewrite === undefined
        ? { ...rest, prefix_rewrite: "/", response_code }
        : { ...rest, regex_rewrite, response_code };
    return { redirect };
  }
  return form;
}
