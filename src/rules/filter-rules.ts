// What admission refuses in a v2 rule's filters, beyond their schema: the
// filters that cannot work together (Gateway API's own rules, which the CRD's
// CEL rules say too), the headers Envoy refuses to touch (it NACKs the whole
// route configuration, every other route with it), and paths a redirect or
// rewrite could not produce.

import { fieldError, type FieldError, type FieldPath } from "../api/field-error.js";
import { isRecord } from "../api/is-record.js";
import {
  FILTER_FIELDS,
  FILTER_MESSAGES,
  headerEditProblem,
  HEADER_NAME_PATTERN,
  LIMITS,
  SINGLE_FILTER_TYPES,
} from "../api/schema.js";
import { pathProblems } from "./path-problems.js";

const FILTER_TYPES = Object.keys(FILTER_FIELDS) as (keyof typeof FILTER_FIELDS)[];

function arrayAt(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}

/** The filter types of a rule, by index; undefined where the type is not a string. */
function typesOf(filters: readonly unknown[]): (string | undefined)[] {
  return filters.map((f) => (isRecord(f) && typeof f.type === "string" ? f.type : undefined));
}

/** True when the rule has a RequestRedirect filter. */
export function hasRedirect(rule: Record<string, unknown>): boolean {
  return typesOf(arrayAt(rule.filters)).includes("RequestRedirect");
}

const HEADER_NAME = new RegExp(HEADER_NAME_PATTERN);

function headerNameProblems(name: string): string[] {
  if (name === "") return ["must not be empty"];
  const problems: string[] = [];
  if (name.length > LIMITS.headerNameLength)
    problems.push(`must be no more than ${LIMITS.headerNameLength} characters`);
  if (!HEADER_NAME.test(name))
    problems.push("must be an HTTP header name (letters, digits and !#$%&'*+-.^_`|~)");
  return problems;
}

// eslint-disable-next-line no-control-regex
const BAD_VALUE = /[\r\n\u0000]/;

function headerModifierErrors(mod: unknown, at: FieldPath): FieldError[] {
  if (!isRecord(mod)) return [];
  const out: FieldError[] = [];
  // Every name once across set, add and remove, without regard to case.
  const seen = new Map<string, string>();
  const name = (n: unknown, p: FieldPath): void => {
    if (typeof n !== "string") return;
    const problem = headerEditProblem(n);
    if (problem !== undefined) out.push(fieldError(p, "Forbidden", problem, n));
    else {
      const problems = headerNameProblems(n);
      if (problems.length > 0) out.push(fieldError(p, "Invalid value", problems.join("; "), n));
    }
    const key = n.toLowerCase();
    const first = seen.get(key);
    if (first !== undefined)
      out.push(
        fieldError(
          p,
          "Duplicate value",
          `header names are case-insensitive; ${first} names it already (a header is set, added or removed once)`,
          n,
        ),
      );
    else seen.set(key, String(p));
  };
  for (const list of ["set", "add"] as const) {
    arrayAt(mod[list]).forEach((h, i) => {
      if (!isRecord(h)) return;
      const hp = at.child(list).index(i);
      name(h.name, hp.child("name"));
      if (typeof h.value === "string" && BAD_VALUE.test(h.value))
        out.push(
          fieldError(
            hp.child("value"),
            "Invalid value",
            "must not contain CR, LF or NUL (Envoy refuses them)",
            h.value,
          ),
        );
    });
  }
  arrayAt(mod.remove).forEach((n, i) => name(n, at.child("remove").index(i)));
  return out;
}

function pathModifierErrors(mod: unknown, at: FieldPath, matchTypes: readonly unknown[]): FieldError[] {
  if (!isRecord(mod)) return [];
  const out: FieldError[] = [];
  const full = mod.replaceFullPath !== undefined;
  const prefix = mod.replacePrefixMatch !== undefined;
  const wanted =
    mod.type === "ReplaceFullPath"
      ? full && !prefix
      : mod.type === "ReplacePrefixMatch"
        ? prefix && !full
        : true;
  if (!wanted)
    out.push(
      fieldError(
        at,
        "Invalid value",
        "must set the one field its type names: replaceFullPath for ReplaceFullPath, replacePrefixMatch for ReplacePrefixMatch",
        mod.type,
      ),
    );
  for (const field of ["replaceFullPath", "replacePrefixMatch"] as const) {
    const v = mod[field];
    if (typeof v !== "string") continue;
    const problems = pathProblems(v);
    if (problems.length > 0) out.push(fieldError(at.child(field), "Invalid value", problems.join("; "), v));
  }
  if (mod.type === "ReplacePrefixMatch") {
    const other = matchTypes.findIndex((t) => t !== undefined && t !== "PathPrefix");
    if (other >= 0)
      out.push(
        fieldError(
          at.child("type"),
          "Invalid value",
          `${FILTER_MESSAGES.prefixOnly} (matches[${other}] is ${String(matchTypes[other])})`,
          mod.type,
        ),
      );
  }
  return out;
}

/**
 * Every problem of a rule's filters, and of its backends as its filters make
 * them (none with a redirect, at least one without); rp is the rule's path.
 */
export function filterErrors(rule: Record<string, unknown>, rp: FieldPath): FieldError[] {
  const out: FieldError[] = [];
  const filters = arrayAt(rule.filters);
  const types = typesOf(filters);
  const matchTypes = arrayAt(rule.matches).map((m) =>
    isRecord(m) && isRecord(m.path) ? (m.path.type ?? "PathPrefix") : undefined,
  );
  const firstOf = new Map<string, number>();
  filters.forEach((f, i) => {
    if (!isRecord(f)) return;
    const fp = rp.child("filters").index(i);
    const type = types[i];
    // The one field its type names, and no other.
    const set = FILTER_TYPES.filter((t) => f[FILTER_FIELDS[t]] !== undefined);
    if (
      type !== undefined &&
      (FILTER_TYPES as string[]).includes(type) &&
      (set.length !== 1 || set[0] !== type)
    )
      out.push(fieldError(fp, "Invalid value", FILTER_MESSAGES.typeField, type));
    if (type === undefined) return;
    const first = firstOf.get(type);
    if (first !== undefined && (SINGLE_FILTER_TYPES as readonly string[]).includes(type))
      out.push(
        fieldError(
          fp.child("type"),
          "Duplicate value",
          `may appear once in a rule, and ${rp.child("filters").index(first)} is one already`,
          type,
        ),
      );
    else if (first === undefined) firstOf.set(type, i);
    if (type === "URLRewrite" && types.includes("RequestRedirect"))
      out.push(fieldError(fp, "Forbidden", FILTER_MESSAGES.redirectAndRewrite));
    if (type === "RequestHeaderModifier" || type === "ResponseHeaderModifier")
      out.push(...headerModifierErrors(f[FILTER_FIELDS[type]], fp.child(FILTER_FIELDS[type])));
    if (type === "RequestRedirect" || type === "URLRewrite") {
      const body = f[FILTER_FIELDS[type]];
      if (isRecord(body))
        out.push(...pathModifierErrors(body.path, fp.child(FILTER_FIELDS[type]).child("path"), matchTypes));
    }
  });
  if (Array.isArray(rule.backends)) {
    const redirect = types.includes("RequestRedirect");
    if (redirect && rule.backends.length > 0)
      out.push(fieldError(rp.child("backends"), "Forbidden", FILTER_MESSAGES.redirectWithBackends));
    if (!redirect && rule.backends.length === 0)
      out.push(fieldError(rp.child("backends"), "Required value", FILTER_MESSAGES.noBackends));
  }
  return out;
}
