// What admission refuses in a v2 spec's `tls`, beyond its schema: the TLS
// that can never be served. The Secret's name must be one the apiserver can
// store; TLS needs the route's hosts (no TLS on the catch-all) and serves only
// hosts the route names, each once; and a wildcard directly under a top-level
// domain, which no TLS client matches a certificate to (OpenSSL wants two
// labels after the star, browsers refuse it too), is not served over TLS.
// Whether the Secret exists is a warning, not a refusal (admission.ts).

import { fieldError, type FieldError, type FieldPath } from "../api/field-error.js";
import { isRecord } from "../api/is-record.js";
import { LIMITS } from "../api/schema.js";
import { hostnameProblems } from "./hostname-problems.js";

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Why a name is not a DNS-1123 subdomain (what a Secret's name must be); empty when it is one. */
export function secretNameProblems(name: string): string[] {
  if (name === "") return ["must not be empty"];
  const problems: string[] = [];
  if (name.length > LIMITS.secretNameLength)
    problems.push(`must be no more than ${LIMITS.secretNameLength} characters`);
  if (!DNS1123_SUBDOMAIN.test(name)) {
    problems.push(
      "a DNS-1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'shop-tls')",
    );
  }
  return problems;
}

/** `*.com`: a wildcard with one label after it, which TLS clients never match. */
function isTopLevelWildcard(host: string): boolean {
  return host.startsWith("*.") && !host.slice(2).includes(".");
}

const TOP_LEVEL_WILDCARD =
  "a wildcard served over TLS needs two labels after '*.' (*.example.com): TLS clients never match a wildcard certificate directly under a top-level domain";

/** "must be one of spec.hostnames", and why a near miss with a wildcard is one. */
function notAmongDetail(host: string, routeHosts: readonly (string | undefined)[], at: FieldPath): string {
  const base = "must be one of spec.hostnames";
  const where = (i: number) => `${at.child("hostnames").index(i)} ${JSON.stringify(routeHosts[i])}`;
  const covering = routeHosts.findIndex(
    (h) => h !== undefined && h.startsWith("*.") && host.endsWith(h.slice(1)) && !host.startsWith("*."),
  );
  if (covering >= 0)
    return `${base}: ${where(covering)} covers it, but a TLS host is named as spec.hostnames names it`;
  if (host.startsWith("*.")) {
    const covered = routeHosts.findIndex(
      (h) => h !== undefined && !h.startsWith("*.") && h.endsWith(host.slice(1)),
    );
    if (covered >= 0)
      return `${base}: a wildcard TLS host serves the same wildcard in spec.hostnames, not exact names it covers (${where(covered)})`;
  }
  return base;
}

/** Every problem of `spec.tls` that its schema does not already report; empty without tls. */
export function tlsErrors(spec: Record<string, unknown>, at: FieldPath): FieldError[] {
  const tls = spec.tls;
  // Absent, or not an object: the schema's type error says so.
  if (!isRecord(tls)) return [];
  const out: FieldError[] = [];
  const tp = at.child("tls");

  if (typeof tls.secretName === "string") {
    const problems = secretNameProblems(tls.secretName);
    if (problems.length > 0)
      out.push(fieldError(tp.child("secretName"), "Invalid value", problems.join("; "), tls.secretName));
  }

  if (spec.hostnames !== undefined && !Array.isArray(spec.hostnames)) return out; // a type error of its own
  const routeHosts = (spec.hostnames ?? []).map((h) => (typeof h === "string" ? h : undefined));
  if (routeHosts.length === 0) {
    out.push(
      fieldError(
        tp,
        "Forbidden",
        "needs spec.hostnames: a route for any host (no hostnames) cannot have TLS",
      ),
    );
    return out;
  }

  if (!Array.isArray(tls.hostnames)) {
    // No tls.hostnames: TLS serves every hostname of the route.
    if (tls.hostnames !== undefined) return out; // a type error of its own
    routeHosts.forEach((h, i) => {
      if (h !== undefined && hostnameProblems(h).length === 0 && isTopLevelWildcard(h)) {
        out.push(
          fieldError(
            at.child("hostnames").index(i),
            "Invalid value",
            `${TOP_LEVEL_WILDCARD}; spec.tls.hostnames can leave it out`,
            h,
          ),
        );
      }
    });
    return out;
  }

  const seen = new Map<string, number>();
  tls.hostnames.forEach((h, i) => {
    if (typeof h !== "string") return;
    const p = tp.child("hostnames").index(i);
    const problems = hostnameProblems(h);
    if (problems.length > 0) {
      out.push(fieldError(p, "Invalid value", problems.join("; "), h));
      return;
    }
    const first = seen.get(h);
    if (first !== undefined) {
      out.push(fieldError(p, "Duplicate value", `same as ${tp.child("hostnames").index(first)}`, h));
      return;
    }
    seen.set(h, i);
    if (!routeHosts.includes(h))
      out.push(fieldError(p, "Invalid value", notAmongDetail(h, routeHosts, at), h));
    else if (isTopLevelWildcard(h)) out.push(fieldError(p, "Invalid value", TOP_LEVEL_WILDCARD, h));
  });
  return out;
}
