// What admission refuses in a v2 match beyond its schema and its path: the
// regular expressions RE2 (Envoy's and gRPC's engine) refuses or Envoy finds
// too large, and a query parameter named twice (the apiserver's list-map rule,
// which ajv does not know).

import { fieldError, type FieldError, type FieldPath } from "../api/field-error.js";
import { isRecord } from "../api/is-record.js";
import { LIMITS } from "../api/schema.js";
import { re2Problem } from "../routing/re2-check.js";
import { pathProblems } from "./path-problems.js";

/** Why a path match's value cannot be programmed, by its type; empty when it can. */
export function pathValueProblems(type: unknown, value: string): string[] {
  if (type !== "RegularExpression") return pathProblems(value);
  const problems: string[] = [];
  if (!value.startsWith("/")) problems.push("must start with '/'");
  if (value.length > LIMITS.pathLength) problems.push(`must be no more than ${LIMITS.pathLength} characters`);
  const re2 = re2Problem(value);
  if (re2 !== undefined) problems.push(re2);
  return problems;
}

function regexCheck(out: FieldError[], item: unknown, at: FieldPath): void {
  if (!isRecord(item) || item.type !== "RegularExpression" || typeof item.value !== "string") return;
  const problem = re2Problem(item.value);
  if (problem !== undefined) out.push(fieldError(at.child("value"), "Invalid value", problem, item.value));
}

/** Regular expressions of a match's headers and query parameters, and query names named twice. */
export function matchValueErrors(match: Record<string, unknown>, mp: FieldPath): FieldError[] {
  const out: FieldError[] = [];
  if (Array.isArray(match.headers))
    match.headers.forEach((h, k) => regexCheck(out, h, mp.child("headers").index(k)));
  if (Array.isArray(match.queryParams)) {
    const names = new Map<string, number>();
    match.queryParams.forEach((q, k) => {
      const qp = mp.child("queryParams").index(k);
      regexCheck(out, q, qp);
      if (!isRecord(q) || typeof q.name !== "string") return;
      const first = names.get(q.name);
      if (first !== undefined)
        out.push(
          fieldError(
            qp.child("name"),
            "Duplicate value",
            `same name as ${mp.child("queryParams").index(first)}`,
            q.name,
          ),
        );
      else names.set(q.name, k);
    });
  }
  return out;
}
