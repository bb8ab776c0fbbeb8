// What the validating webhook checks in an EdgeRoute: the schema from
// src/api/schema.ts (the CRD's own, compiled once by ajv) and the rules a
// schema cannot say. Pure: an object in, every field error out.

import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";
import addFormatsPlugin from "ajv-formats";
import { fieldError, FieldPath, pointerToPath, type FieldError } from "../api/field-error.js";
import {
  DNS1035_LABEL_PATTERN,
  FILTER_MESSAGES,
  HEADER_NAME_PATTERN,
  specSchemas,
  type Schema,
} from "../api/schema.js";
import type { Version } from "../api/types.js";
import { describeMatch, matchKey } from "../routing/match-keys.js";
import { isRecord } from "../api/is-record.js";
import { hostnameProblems } from "./hostname-problems.js";
import { tlsErrors } from "./tls-rules.js";
import { pathProblems } from "./path-problems.js";
import { filterErrors } from "./filter-rules.js";
import { matchValueErrors, pathValueProblems } from "./match-rules.js";
import { timeoutErrors } from "./timeout-rules.js";

export { hostnameProblems, pathProblems };

// ajv-formats is CommonJS: under NodeNext its default import is the module
// object, whose `default` is the plugin.
const addFormats = addFormatsPlugin.default;

function compileSpecValidators(): Record<Version, ValidateFunction> {
  // strict: unknown keywords and type mistakes in the schema fail at start-up,
  // not silently at admission time; the CRD-only keywords are declared as
  // annotations that ajv carries but does not check (the CEL rule is one of
  // the rules below).
  const ajv = new Ajv({ strict: true, allErrors: true, verbose: true });
  addFormats(ajv);
  for (const keyword of [
    "x-kubernetes-validations",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-preserve-unknown-fields",
  ]) {
    ajv.addKeyword({ keyword, schemaType: ["array", "string", "boolean"] });
  }
  return { v1: ajv.compile(specSchemas.v1), v2: ajv.compile(specSchemas.v2) };
}

const specValidators = compileSpecValidators();

// Fields whose strings the rules below check in full, with a better message
// than a regular expression: ajv's pattern and length errors there are dropped
// so that one problem gives one message.
const CUSTOM_STRING_FIELD =
  /^spec\.(host|pathPrefix|hostnames\[\d+\]|tls\.(secretName|hostnames\[\d+\])|rules\[\d+\]\.(timeout|timeouts\.(request|backendRequest)|retry\.backoff|matches\[\d+\]\.path\.value|filters\[\d+\]\.((requestRedirect|urlRewrite)\.path\.(replaceFullPath|replacePrefixMatch)|(request|response)HeaderModifier\.((set|add)\[\d+\]\.name|remove\[\d+\]))))$/;

const PATTERN_MESSAGES: Record<string, string> = {
  [DNS1035_LABEL_PATTERN]:
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character",
  [HEADER_NAME_PATTERN]: "must be an HTTP header name (letters, digits and !#$%&'*+-.^_`|~)",
};

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

function schemaOf(e: ErrorObject): Schema {
  return (e.parentSchema ?? {}) as Schema;
}

function between(s: Schema): string {
  if (s.minimum !== undefined && s.maximum !== undefined)
    return `must be between ${s.minimum} and ${s.maximum}`;
  if (s.minimum !== undefined) return `must be greater than or equal to ${s.minimum}`;
  return `must be less than or equal to ${s.maximum}`;
}

/** One ajv error as the apiserver would word it; undefined for errors a custom rule words better. */
function fromAjv(e: ErrorObject): FieldError | undefined {
  const path = pointerToPath(e.instancePath, "spec");
  const s = schemaOf(e);
  switch (e.keyword) {
    case "required": {
      const missing = String((e.params as { missingProperty: string }).missingProperty);
      return fieldError(`${path}.${missing}`, "Required value", "must be set");
    }
    case "type":
      return fieldError(
        path,
        "Invalid value",
        `must be of type ${String((e.params as { type: string }).type)}`,
        e.data,
      );
    case "minimum":
    case "maximum":
      return fieldError(path, "Invalid value", between(s), e.data);
    case "enum":
      return fieldError(
        path,
        "Unsupported value",
        `supported values: ${(s.enum ?? []).map((v) => JSON.stringify(v)).join(", ")}`,
        e.data,
      );
    case "minItems":
      return fieldError(path, "Required value", `must have at least ${plural(s.minItems ?? 0, "item")}`);
    case "maxItems":
      return fieldError(
        path,
        "Too many",
        `must have at most ${plural(s.maxItems ?? 0, "item")}`,
        (e.data as unknown[]).length,
      );
    case "minLength":
      return CUSTOM_STRING_FIELD.test(path)
        ? undefined
        : fieldError(path, "Invalid value", "must not be empty", e.data);
    case "maxLength":
      return CUSTOM_STRING_FIELD.test(path)
        ? undefined
        : fieldError(path, "Too long", `may not be more than ${s.maxLength ?? 0} bytes`);
    case "pattern":
      if (CUSTOM_STRING_FIELD.test(path)) return undefined;
      return fieldError(
        path,
        "Invalid value",
        PATTERN_MESSAGES[s.pattern ?? ""] ?? `must match ${s.pattern}`,
        e.data,
      );
    default:
      return fieldError(path, "Invalid value", e.message ?? "is invalid", e.data);
  }
}

function arrayAt(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}

function stringCheck(
  out: FieldError[],
  path: FieldPath,
  value: unknown,
  check: (s: string) => string[],
): void {
  if (typeof value !== "string") return;
  const problems = check(value);
  if (problems.length > 0) out.push(fieldError(path, "Invalid value", problems.join("; "), value));
}

function checkV1(spec: Record<string, unknown>, at: FieldPath): FieldError[] {
  const out: FieldError[] = [];
  stringCheck(out, at.child("host"), spec.host, hostnameProblems);
  stringCheck(out, at.child("pathPrefix"), spec.pathPrefix, pathProblems);
  return out;
}

function checkV2(spec: Record<string, unknown>, at: FieldPath): FieldError[] {
  const out: FieldError[] = [];
  const seenHosts = new Map<string, number>();
  arrayAt(spec.hostnames).forEach((h, i) => {
    const p = at.child("hostnames").index(i);
    stringCheck(out, p, h, hostnameProblems);
    if (typeof h !== "string") return;
    const first = seenHosts.get(h);
    if (first !== undefined)
      out.push(fieldError(p, "Duplicate value", `same as spec.hostnames[${first}]`, h));
    else seenHosts.set(h, i);
  });

  // Every match of the route shares its hostnames, so a match repeated in any
  // rule of the route can never be reached.
  const seenMatches = new Map<string, string>();
  arrayAt(spec.rules).forEach((rule, r) => {
    if (!isRecord(rule)) return;
    const rp = at.child("rules").index(r);
    arrayAt(rule.matches).forEach((match, m) => {
      if (!isRecord(match)) return;
      const mp = rp.child("matches").index(m);
      if (isRecord(match.path)) {
        const type = match.path.type;
        stringCheck(out, mp.child("path").child("value"), match.path.value, (v) =>
          pathValueProblems(type, v),
        );
      }
      out.push(...matchValueErrors(match, mp));
      const names = new Map<string, number>();
      arrayAt(match.headers).forEach((h, k) => {
        if (!isRecord(h) || typeof h.name !== "string") return;
        const name = h.name.toLowerCase();
        const first = names.get(name);
        if (first !== undefined) {
          out.push(
            fieldError(
              mp.child("headers").index(k).child("name"),
              "Duplicate value",
              `header names are case-insensitive; same name as ${mp.child("headers").index(first)}`,
              h.name,
            ),
          );
        } else names.set(name, k);
      });
      const key = matchKey(match);
      if (key === undefined) return;
      const firstAt = seenMatches.get(key);
      if (firstAt !== undefined) {
        out.push(fieldError(mp, "Duplicate value", `${describeMatch(key)} is already matched by ${firstAt}`));
      } else seenMatches.set(key, String(mp));
    });

    const backends = arrayAt(rule.backends);
    const weights = backends.map((b) => (isRecord(b) ? b.weight : undefined));
    // Only judge the sum when every weight is well-formed; a bad one has its own error.
    const allNumbers = weights.every(
      (w) => w === undefined || (typeof w === "number" && Number.isInteger(w)),
    );
    if (backends.length > 0 && allNumbers && !weights.some((w) => w === undefined || (w as number) > 0)) {
      out.push(
        fieldError(
          rp.child("backends"),
          "Invalid value",
          "at least one backend must have a weight above 0",
          weights,
        ),
      );
    }
    out.push(...filterErrors(rule, rp));
    out.push(...timeoutErrors(rule, rp));
  });
  // v1 shows a route as one Service; each rule without one says so itself.
  const rules = arrayAt(spec.rules);
  if (
    rules.length > 0 &&
    rules.every((r) => isRecord(r) && Array.isArray(r.backends) && r.backends.length === 0)
  )
    out.push(fieldError(at.child("rules"), "Required value", FILTER_MESSAGES.noRuleWithBackends));
  out.push(...tlsErrors(spec, at));
  return out;
}

/** Orders paths as a reader scans the object: `rules[2]` before `rules[10]`. */
function comparePaths(a: string, b: string): number {
  const split = (p: string) => p.split(/[.[\]]+/).filter((s) => s !== "");
  const sa = split(a);
  const sb = split(b);
  for (let i = 0; i < Math.min(sa.length, sb.length); i++) {
    const x = sa[i] as string;
    const y = sb[i] as string;
    if (x === y) continue;
    const nx = Number(x);
    const ny = Number(y);
    if (Number.isInteger(nx) && Number.isInteger(ny)) return nx - ny;
    return x < y ? -1 : 1;
  }
  return sa.length - sb.length;
}

/**
 * Every problem with an EdgeRoute's spec in the given version, as field
 * errors with kubectl's paths (`spec.rules[0].backends[1].port`); empty when
 * the route is valid.
 */
export function validateRoute(obj: unknown, version: Version): FieldError[] {
  const root = FieldPath.root("spec");
  const spec = isRecord(obj) ? obj.spec : undefined;
  if (spec === undefined || spec === null) return [fieldError(root, "Required value", "must be set")];
  if (!isRecord(spec)) return [fieldError(root, "Invalid value", "must be of type object", spec)];

  const validate = specValidators[version];
  const errors: FieldError[] = [];
  if (!validate(spec)) {
    for (const e of validate.errors ?? []) {
      const fe = fromAjv(e);
      if (fe) errors.push(fe);
    }
  }
  errors.push(...(version === "v1" ? checkV1(spec, root) : checkV2(spec, root)));

  const seen = new Set<string>();
  const unique = errors.filter((e) => {
    const key = `${e.path}\u0000${e.type}\u0000${e.detail}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  return unique.sort((a, b) => comparePaths(a.path, b.path));
}
