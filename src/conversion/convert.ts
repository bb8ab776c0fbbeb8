// v1 ⇄ v2 conversion of one EdgeRoute. v2 is the hub; the rules are written out
// in docs/conversion.md. In short:
//   v1 → v2: host → hostnames[0] (no host: no hostnames), pathPrefix → the one
//            PathPrefix match, service/port → the one backend with weight 1,
//            timeoutSeconds → `Ns`.
//   v2 → v1: the first hostname, the first rule with a backend (a redirect's rule
//            has none): its first match and first backend, its request timeout
//            (timeout or timeouts.request) rounded up to whole seconds. When v1 cannot
//            say everything (v1 → v2 of that projection is not the same spec),
//            the whole v2 spec travels as JSON in V2_SPEC_ANNOTATION.
//   v1 with the annotation → v2: the annotated spec, with the v1 fields that
//            differ from its projection (the v1 client's edits) written over it.
// Only the spec, apiVersion and V2_SPEC_ANNOTATION change; status and all other
// metadata pass through as the same references, so nothing is deep-copied.

import { fieldError, formatFieldError, type FieldError } from "../api/field-error.js";
import {
  API_VERSION_V1,
  API_VERSION_V2,
  V2_SPEC_ANNOTATION,
  type EdgeRoute,
  type EdgeRouteSpecV1,
  type EdgeRouteSpecV2,
  type EdgeRouteV1,
  type EdgeRouteV2,
  type ObjectMeta,
  type RouteRule,
} from "../api/types.js";
import { timeoutOf, timeoutSecondsOf } from "./duration.js";
import { jsonEqual } from "./json-equal.js";
import { checkV1Shape, checkV2Shape, shownRuleIndex, type JsonObject } from "./object-shape.js";
import { readV2SpecAnnotation } from "./v2-spec-annotation.js";

export type ConvertResult<T extends EdgeRoute = EdgeRoute> =
  { readonly ok: true; readonly object: T } | { readonly ok: false; readonly errors: readonly FieldError[] };

/** Thrown by toV1/toV2 when an object cannot be converted; convert() returns the errors instead. */
export class ConversionError extends Error {
  constructor(readonly errors: readonly FieldError[]) {
    super(errors.map(formatFieldError).join("; "));
    this.name = "ConversionError";
  }
}

// Optional fields are set after the literal rather than spread in: spreading a
// conditional object is several times slower, and these run per object per read.

/** v1 → v2 of a v1 spec alone, without the annotation. */
export function specV2Of(v1: EdgeRouteSpecV1): EdgeRouteSpecV2 {
  const rule: { -readonly [K in keyof RouteRule]: RouteRule[K] } = {
    matches: [{ path: { type: "PathPrefix", value: v1.pathPrefix } }],
    backends: [{ name: v1.service, port: v1.port, weight: 1 }],
  };
  if (v1.timeoutSeconds !== undefined) rule.timeout = timeoutOf(v1.timeoutSeconds);
  return v1.host !== undefined ? { hostnames: [v1.host], rules: [rule] } : { rules: [rule] };
}

/** The request timeout a rule says, in either of the two fields that say it. */
function requestTimeoutOf(rule: RouteRule): string | undefined {
  return rule.timeout ?? rule.timeouts?.request;
}

/** The rule with the v1 client's new timeout, written where the rule says it. */
function withRequestTimeout(rule: RouteRule, seconds: number | undefined): RouteRule {
  const { timeout: _old, timeouts, ...rest } = rule;
  const { request: _request, ...otherTimeouts } = timeouts ?? {};
  const keptTimeouts = Object.keys(otherTimeouts).length > 0 ? { timeouts: otherTimeouts } : {};
  if (seconds === undefined) return { ...rest, ...keptTimeouts };
  const text = timeoutOf(seconds);
  // Only in timeouts.request: keep it there; in timeout (or both): the same.
  if (rule.timeout === undefined && timeouts?.request !== undefined)
    return { ...rest, timeouts: { ...otherTimeouts, request: text } };
  return timeouts?.request !== undefined
    ? { ...rest, timeout: text, timeouts: { ...otherTimeouts, request: text } }
    : { ...rest, timeout: text, ...keptTimeouts };
}

/** What v1 shows of a v2 spec. The spec must have passed checkV2Shape. */
export function projectV1(v2: EdgeRouteSpecV2): EdgeRouteSpecV1 {
  const rule = v2.rules[shownRuleIndex(v2.rules)] as RouteRule;
  const match = rule.matches[0] as RouteRule["matches"][number];
  const backend = rule.backends[0] as RouteRule["backends"][number];
  const host = v2.hostnames?.[0];
  const [pathPrefix, service, port] = [match.path.value, backend.name, backend.port];
  const out: { -readonly [K in keyof EdgeRouteSpecV1]: EdgeRouteSpecV1[K] } =
    host !== undefined ? { host, pathPrefix, service, port } : { pathPrefix, service, port };
  const timeout = requestTimeoutOf(rule);
  const timeoutSeconds = timeout !== undefined ? timeoutSecondsOf(timeout) : undefined;
  if (timeoutSeconds !== undefined) out.timeoutSeconds = timeoutSeconds;
  return out;
}

/** True when v1 shows all of the spec, so no annotation is needed. */
export function isV1Expressible(v2: EdgeRouteSpecV2): boolean {
  return jsonEqual(specV2Of(projectV1(v2)), v2);
}

/**
 * The v1 client's edits, written over the annotated v2 spec: each v1 field that
 * differs from what v1 was shown replaces the v2 field it was projected from.
 * What v1 could not see is kept. Afterwards projectV1 of the result is `v1`.
 */
export function applyV1Edits(
  base: EdgeRouteSpecV2,
  shown: EdgeRouteSpecV1,
  v1: EdgeRouteSpecV1,
): EdgeRouteSpecV2 {
  let hostnames = base.hostnames;
  if (v1.host !== shown.host) {
    // No host in v1 means any host; in v2 that is no hostnames at all.
    hostnames =
      v1.host === undefined
        ? undefined
        : [v1.host, ...(base.hostnames ?? []).slice(1).filter((h) => h !== v1.host)];
  }
  const shownAt = shownRuleIndex(base.rules);
  let rule = base.rules[shownAt] as RouteRule;
  if (v1.pathPrefix !== shown.pathPrefix) {
    // v1 only says prefixes: an edited path is a PathPrefix; the match's headers stay.
    const [match, ...otherMatches] = rule.matches as [RouteRule["matches"][number], ...RouteRule["matches"]];
    rule = {
      ...rule,
      matches: [{ ...match, path: { type: "PathPrefix", value: v1.pathPrefix } }, ...otherMatches],
    };
  }
  if (v1.service !== shown.service || v1.port !== shown.port) {
    const [backend, ...otherBackends] = rule.backends as [
      RouteRule["backends"][number],
      ...RouteRule["backends"],
    ];
    rule = { ...rule, backends: [{ ...backend, name: v1.service, port: v1.port }, ...otherBackends] };
  }
  if (v1.timeoutSeconds !== shown.timeoutSeconds) rule = withRequestTimeout(rule, v1.timeoutSeconds);
  const { hostnames: _old, ...others } = base;
  const rules = base.rules.map((r, i) => (i === shownAt ? rule : r));
  return { ...(hostnames !== undefined ? { hostnames } : {}), ...others, rules };
}

function withoutAnnotation(meta: ObjectMeta): ObjectMeta {
  const annotations = meta.annotations;
  if (annotations === undefined || !(V2_SPEC_ANNOTATION in annotations)) return meta;
  const { [V2_SPEC_ANNOTATION]: _dropped, ...rest } = annotations;
  const { annotations: _all, ...others } = meta;
  // An empty map is dropped, as the apiserver (omitempty) would.
  return Object.keys(rest).length > 0 ? { ...others, annotations: rest } : others;
}

function v1ToV2(obj: EdgeRouteV1): ConvertResult<EdgeRouteV2> {
  const shapeErrors = checkV1Shape(obj as unknown as JsonObject);
  if (shapeErrors.length > 0) return { ok: false, errors: shapeErrors };
  const annotation = obj.metadata.annotations?.[V2_SPEC_ANNOTATION];
  let spec: EdgeRouteSpecV2;
  if (annotation === undefined) {
    spec = specV2Of(obj.spec);
  } else {
    if (typeof annotation !== "string") {
      return {
        ok: false,
        errors: [
          fieldError(
            `metadata.annotations[${V2_SPEC_ANNOTATION}]`,
            "Invalid value",
            "must be a string",
            annotation,
          ),
        ],
      };
    }
    const read = readV2SpecAnnotation(annotation);
    if (!read.ok) return read;
    spec = applyV1Edits(read.spec, projectV1(read.spec), obj.spec);
  }
  return {
    ok: true,
    object: { ...obj, apiVersion: API_VERSION_V2, metadata: withoutAnnotation(obj.metadata), spec },
  };
}

function v2ToV1(obj: EdgeRouteV2): ConvertResult<EdgeRouteV1> {
  const shapeErrors = checkV2Shape(obj as unknown as JsonObject);
  if (shapeErrors.length > 0) return { ok: false, errors: shapeErrors };
  const spec = projectV1(obj.spec);
  let metadata = withoutAnnotation(obj.metadata);
  if (!jsonEqual(specV2Of(spec), obj.spec)) {
    metadata = {
      ...metadata,
      annotations: { ...metadata.annotations, [V2_SPEC_ANNOTATION]: JSON.stringify(obj.spec) },
    };
  }
  return { ok: true, object: { ...obj, apiVersion: API_VERSION_V1, metadata, spec } };
}

export function toV2(obj: EdgeRouteV1): EdgeRouteV2 {
  const r = v1ToV2(obj);
  if (!r.ok) throw new ConversionError(r.errors);
  return r.object;
}

export function toV1(obj: EdgeRouteV2): EdgeRouteV1 {
  const r = v2ToV1(obj);
  if (!r.ok) throw new ConversionError(r.errors);
  return r.object;
}

/**
 * Converts to `desiredApiVersion` (`net.10xdev.io/v1` or `/v2`). An object already
 * there comes back as the same reference, unchanged.
 */
export function convert(obj: EdgeRoute, desiredApiVersion: string): ConvertResult {
  if (desiredApiVersion !== API_VERSION_V1 && desiredApiVersion !== API_VERSION_V2) {
    const detail = `supported values: "${API_VERSION_V1}", "${API_VERSION_V2}"`;
    return {
      ok: false,
      errors: [fieldError("desiredAPIVersion", "Unsupported value", detail, desiredApiVersion)],
    };
  }
  if (obj.apiVersion === desiredApiVersion) return { ok: true, object: obj };
  if (obj.apiVersion === API_VERSION_V1) return v1ToV2(obj);
  if (obj.apiVersion === API_VERSION_V2) return v2ToV1(obj);
  const detail = `supported values: "${API_VERSION_V1}", "${API_VERSION_V2}"`;
  return {
    ok: false,
    errors: [
      fieldError("apiVersion", "Unsupported value", detail, (obj as { apiVersion: unknown }).apiVersion),
    ],
  };
}
