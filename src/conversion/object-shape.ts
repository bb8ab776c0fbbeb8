// What conversion needs of an object before it can read it: the fields it maps
// must be there with the right JSON types. Ranges and patterns are not checked
// here: the apiserver validated the object when it was written, and a converter
// that rejects an old object under a newer, stricter rule would break every LIST
// that holds it.

import { isRecord } from "../api/is-record.js";
import { fieldError, FieldPath, type FieldError } from "../api/field-error.js";

export type JsonObject = Record<string, unknown>;

function typeName(v: unknown): string {
  return v === null ? "null" : Array.isArray(v) ? "array" : typeof v;
}

type Kind = "string" | "integer" | "object" | "array";

function hasKind(v: unknown, kind: Kind): boolean {
  switch (kind) {
    case "string":
      return typeof v === "string";
    case "integer":
      return Number.isInteger(v);
    case "object":
      return isRecord(v);
    case "array":
      return Array.isArray(v);
  }
}

class Checker {
  readonly errors: FieldError[] = [];

  /** Checks `parent[key]`; returns the value when it has the kind wanted. */
  need(parent: JsonObject, key: string, path: FieldPath, kind: Kind, optional = false): unknown {
    const v = parent[key];
    // The common case, a field of the right kind, builds no path text.
    if (v !== undefined && hasKind(v, kind)) return v;
    if (v !== undefined) {
      this.errors.push(
        fieldError(path.child(key), "Invalid value", `must be ${article(kind)}, not ${typeName(v)}`, v),
      );
    } else if (!optional) {
      this.errors.push(fieldError(path.child(key), "Required value", `must be ${article(kind)}`));
    }
    return undefined;
  }

  /** A non-empty array at `parent[key]`; returns its first element's path and value. */
  first(parent: JsonObject, key: string, path: FieldPath): { at: FieldPath; value: unknown } | undefined {
    const list = this.need(parent, key, path, "array") as unknown[] | undefined;
    if (list === undefined) return undefined;
    if (list.length === 0) {
      this.errors.push(fieldError(path.child(key), "Required value", "must have at least one item"));
      return undefined;
    }
    return { at: path.child(key).index(0), value: list[0] };
  }

  object(v: unknown, at: FieldPath): JsonObject | undefined {
    if (isRecord(v)) return v;
    this.errors.push(fieldError(at, "Invalid value", `must be an object, not ${typeName(v)}`, v));
    return undefined;
  }
}

function article(kind: Kind): string {
  return kind === "integer" || kind === "object" || kind === "array" ? `an ${kind}` : `a ${kind}`;
}

const SPEC = FieldPath.root("spec");
const METADATA = FieldPath.root("metadata");

function checkMetadata(c: Checker, obj: JsonObject): void {
  const meta = c.need(obj, "metadata", FieldPath.root(""), "object") as JsonObject | undefined;
  if (meta) c.need(meta, "annotations", METADATA, "object", true);
}

/** The fields v1 → v2 reads. */
export function checkV1Shape(obj: JsonObject): FieldError[] {
  const c = new Checker();
  checkMetadata(c, obj);
  const spec = c.need(obj, "spec", FieldPath.root(""), "object") as JsonObject | undefined;
  if (spec) {
    c.need(spec, "host", SPEC, "string", true);
    c.need(spec, "pathPrefix", SPEC, "string");
    c.need(spec, "service", SPEC, "string");
    c.need(spec, "port", SPEC, "integer");
    c.need(spec, "timeoutSeconds", SPEC, "integer", true);
  }
  return c.errors;
}

/** The fields v2 → v1 reads: the shown rule's first match, first backend and request timeout. */
export function checkV2Shape(obj: JsonObject): FieldError[] {
  const c = new Checker();
  checkMetadata(c, obj);
  const spec = c.need(obj, "spec", FieldPath.root(""), "object") as JsonObject | undefined;
  if (!spec) return c.errors;
  const hostnames = c.need(spec, "hostnames", SPEC, "array", true) as unknown[] | undefined;
  hostnames?.forEach((h, i) => {
    if (typeof h !== "string") {
      c.errors.push(
        fieldError(
          SPEC.child("hostnames").index(i),
          "Invalid value",
          `must be a string, not ${typeName(h)}`,
          h,
        ),
      );
    }
  });
  const rule0 = shownRule(c, spec);
  const rule = rule0 && c.object(rule0.value, rule0.at);
  if (!rule0 || !rule) return c.errors;
  const match0 = c.first(rule, "matches", rule0.at);
  const match = match0 && c.object(match0.value, match0.at);
  if (match0 && match) {
    const path = c.need(match, "path", match0.at, "object") as JsonObject | undefined;
    if (path) {
      c.need(path, "value", match0.at.child("path"), "string");
      c.need(path, "type", match0.at.child("path"), "string", true);
    }
  }
  const backend0 = c.first(rule, "backends", rule0.at);
  const backend = backend0 && c.object(backend0.value, backend0.at);
  if (backend0 && backend) {
    c.need(backend, "name", backend0.at, "string");
    c.need(backend, "port", backend0.at, "integer");
  }
  c.need(rule, "timeout", rule0.at, "string", true);
  const timeouts = c.need(rule, "timeouts", rule0.at, "object", true) as JsonObject | undefined;
  if (timeouts) c.need(timeouts, "request", rule0.at.child("timeouts"), "string", true);
  return c.errors;
}

/**
 * The rule v1 shows: the first with a backend, as a rule that only redirects
 * has no Service to name (the CRD makes every route have one such rule).
 */
export function shownRuleIndex(rules: readonly unknown[]): number {
  const i = rules.findIndex((r) => isRecord(r) && Array.isArray(r.backends) && r.backends.length > 0);
  return i < 0 ? 0 : i;
}

function shownRule(c: Checker, spec: JsonObject): { at: FieldPath; value: unknown } | undefined {
  const first = c.first(spec, "rules", SPEC);
  if (!first) return undefined;
  const rules = spec.rules as unknown[];
  const i = shownRuleIndex(rules);
  return i === 0 ? first : { at: SPEC.child("rules").index(i), value: rules[i] };
}
