// What a route says that a proxyless gRPC client does not apply, read from
// @grpc/grpc-js-xds 1.14's resolver (resolver-xds.js, route.js, matcher.js,
// route-config-resource-type.js), not only from the xDS protos:
//  - a route whose action is a redirect is NACKed (with the whole route
//    configuration): redirect rules are left out of what gRPC clients get;
//  - a match reads path and headers only: query parameters are never read (a
//    gRPC request has no query string), and `:method` is no header its
//    metadata holds. Every gRPC call is a POST: a POST match is sent without
//    the method, a match on any other method or on query parameters is left out;
//  - header modifiers, rewrites and mirrors are not read at all;
//  - a retry policy is read for its gRPC status names (cancelled,
//    deadline-exceeded, internal, resource-exhausted, unavailable), its
//    num_retries and its back-off; per_try_timeout, retriable_status_codes
//    and HTTP conditions are not read.
// Each is reported by field path, for the route's Accepted condition.

import type { EdgeRouteV2, RetryCondition } from "../api/types.js";

/** A field of the route that gRPC clients do not apply, and what they do instead. */
export interface GrpcUnapplied {
  readonly path: string;
  readonly reason: string;
}

const GRPC_RETRY_ON: ReadonlySet<RetryCondition> = new Set([
  "Cancelled",
  "DeadlineExceeded",
  "Internal",
  "ResourceExhausted",
  "Unavailable",
]);

const IGNORED = "ignored by gRPC clients";

/** The route's fields gRPC clients do not apply; empty for most routes. */
export function grpcUnapplied(route: EdgeRouteV2): GrpcUnapplied[] {
  const out: GrpcUnapplied[] = [];
  route.spec.rules.forEach((rule, r) => {
    const rp = `spec.rules[${r}]`;
    const hasRedirect = rule.filters?.some((f) => f.type === "RequestRedirect") ?? false;
    rule.matches.forEach((m, i) => {
      const mp = `${rp}.matches[${i}]`;
      if (hasRedirect) return;
      if (m.queryParams !== undefined && m.queryParams.length > 0)
        out.push({
          path: `${mp}.queryParams`,
          reason: "gRPC requests carry no query: not sent to gRPC clients",
        });
      if (m.method !== undefined && m.method !== "POST")
        out.push({ path: `${mp}.method`, reason: "gRPC calls are POST: not sent to gRPC clients" });
    });
    rule.filters?.forEach((f, j) => {
      const fp = `${rp}.filters[${j}]`;
      if (f.type === "RequestRedirect")
        out.push({
          path: fp,
          reason: "RequestRedirect: gRPC clients refuse a redirect, so the rule is not sent to them",
        });
      else out.push({ path: fp, reason: `${f.type}: ${IGNORED}` });
    });
    const retry = rule.retry;
    if (retry === undefined || (retry.attempts ?? 1) === 0) return;
    if (rule.timeouts?.backendRequest !== undefined)
      out.push({ path: `${rp}.timeouts.backendRequest`, reason: `the per-try timeout is ${IGNORED}` });
    if (retry.codes !== undefined && retry.codes.length > 0)
      out.push({ path: `${rp}.retry.codes`, reason: `HTTP status codes are ${IGNORED}` });
    const http = (retry.conditions ?? []).filter((c) => !GRPC_RETRY_ON.has(c));
    if (http.length > 0)
      out.push({ path: `${rp}.retry.conditions`, reason: `${http.join(", ")}: ${IGNORED}` });
  });
  return out;
}

/** One line for a condition message; long lists are cut with a count. */
export function describeGrpcUnapplied(list: readonly GrpcUnapplied[], limit = 5): string {
  const shown = list
    .slice(0, limit)
    .map((u) => `${u.path} (${u.reason})`)
    .join(", ");
  const more = list.length > limit ? ` and ${list.length - limit} more` : "";
  return `gRPC clients do not apply ${shown}${more}`;
}
