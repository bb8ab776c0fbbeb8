// What the mutating webhook changes in an EdgeRoute: the finalizer that holds
// the route until the data plane has dropped it, and the v2 defaults. Pure: it
// returns a new object and leaves its input alone; the handler diffs the two
// into a JSON Patch.
//
// It runs before the apiserver checks the schema, so it must take any shape
// and only touch what has the shape it expects.

import {
  API_VERSION_V1,
  API_VERSION_V2,
  FINALIZER,
  FINALIZER_RELEASED_ANNOTATION,
  V2_SPEC_ANNOTATION,
  versionOf,
  type EdgeRoute,
} from "../api/types.js";
import { convert } from "../conversion/convert.js";
import { isRecord } from "../api/is-record.js";

export type Operation = "CREATE" | "UPDATE";

type Json = Record<string, unknown>;

function withFinalizer(metadata: Json): Json {
  const finalizers = metadata.finalizers;
  if (finalizers === undefined || finalizers === null) return { ...metadata, finalizers: [FINALIZER] };
  if (!Array.isArray(finalizers) || finalizers.includes(FINALIZER)) return metadata;
  return { ...metadata, finalizers: [...finalizers, FINALIZER] };
}

function withBackendDefaults(backend: unknown): unknown {
  if (!isRecord(backend) || backend.weight !== undefined) return backend;
  return { ...backend, weight: 1 };
}

/** Gateway API's default for a header or query parameter match: Exact. */
function withValueMatchDefaults(item: unknown): unknown {
  if (!isRecord(item) || item.type !== undefined) return item;
  return { ...item, type: "Exact" };
}

function withMatchDefaults(match: unknown): unknown {
  if (!isRecord(match)) return match;
  let out: Json = match;
  if (isRecord(match.path) && match.path.type === undefined)
    out = { ...out, path: { ...match.path, type: "PathPrefix" } };
  if (Array.isArray(match.headers)) out = { ...out, headers: match.headers.map(withValueMatchDefaults) };
  if (Array.isArray(match.queryParams))
    out = { ...out, queryParams: match.queryParams.map(withValueMatchDefaults) };
  return out;
}

/** Gateway API's default redirect status: 302. */
function withFilterDefaults(filter: unknown): unknown {
  if (
    !isRecord(filter) ||
    !isRecord(filter.requestRedirect) ||
    filter.requestRedirect.statusCode !== undefined
  )
    return filter;
  return { ...filter, requestRedirect: { ...filter.requestRedirect, statusCode: 302 } };
}

function withRuleDefaults(rule: unknown): unknown {
  if (!isRecord(rule)) return rule;
  const out: Json = { ...rule };
  if (Array.isArray(rule.matches)) out.matches = rule.matches.map(withMatchDefaults);
  if (Array.isArray(rule.backends)) out.backends = rule.backends.map(withBackendDefaults);
  if (Array.isArray(rule.filters)) out.filters = rule.filters.map(withFilterDefaults);
  return out;
}

function withSpecDefaults(obj: Json): Json {
  // v1 has no defaults; its optional fields mean "absent" (any host, no timeout).
  if (versionOf(obj.apiVersion) !== "v2" || !isRecord(obj.spec) || !Array.isArray(obj.spec.rules)) return obj;
  return { ...obj, spec: { ...obj.spec, rules: obj.spec.rules.map(withRuleDefaults) } };
}

/**
 * A v1 object whose v1 fields were edited still carries the v2 spec from before
 * the edit; reads through v2 apply the edit (docs/conversion.md), but the
 * annotation itself is stale. Storing the v1 form of what v2 would read keeps
 * the annotation true, so v1 and v2 views, and a later storage migration, agree.
 */
function withFreshV2Spec(obj: Json): Json {
  if (versionOf(obj.apiVersion) !== "v1" || !isRecord(obj.metadata) || !isRecord(obj.metadata.annotations))
    return obj;
  const annotations = obj.metadata.annotations;
  if (typeof annotations[V2_SPEC_ANNOTATION] !== "string") return obj;
  const v2 = convert(obj as unknown as EdgeRoute, API_VERSION_V2);
  if (!v2.ok) return obj; // the validating webhook says what is wrong
  const v1 = convert(v2.object, API_VERSION_V1);
  if (!v1.ok) return obj;
  const fresh = v1.object.metadata.annotations?.[V2_SPEC_ANNOTATION];
  if (fresh === annotations[V2_SPEC_ANNOTATION]) return obj;
  const next: Json = { ...annotations };
  if (fresh === undefined) delete next[V2_SPEC_ANNOTATION];
  else next[V2_SPEC_ANNOTATION] = fresh;
  return { ...obj, metadata: { ...obj.metadata, annotations: next } };
}

/**
 * The route as it should be stored. A route that is being deleted is left
 * exactly as it is: adding a finalizer would hold it forever, and changing its
 * spec would only bump its generation on the way out.
 */
export function mutateRoute(obj: unknown, operation: Operation, oldObject?: unknown): unknown {
  if (!isRecord(obj) || !isRecord(obj.metadata)) return obj;
  if (obj.metadata.deletionTimestamp !== undefined && obj.metadata.deletionTimestamp !== null) return obj;
  const defaulted = withFreshV2Spec(withSpecDefaults(obj));
  // An UPDATE that takes our finalizer off and marks it released is the
  // break-glass (or the uninstall hook) at work: putting it back would undo it.
  // Any other UPDATE without it (a `kubectl replace` of a manifest, an object
  // created before the webhook) gets it back.
  if (
    operation === "UPDATE" &&
    hasOurFinalizer(oldObject) &&
    !hasOurFinalizer(obj) &&
    isMarkedReleased(obj)
  ) {
    return defaulted;
  }
  return { ...defaulted, metadata: withFinalizer(defaulted.metadata as Json) };
}

function isMarkedReleased(obj: Json): boolean {
  return (
    isRecord(obj.metadata) &&
    isRecord(obj.metadata.annotations) &&
    typeof obj.metadata.annotations[FINALIZER_RELEASED_ANNOTATION] === "string"
  );
}

function hasOurFinalizer(obj: unknown): boolean {
  return (
    isRecord(obj) &&
    isRecord(obj.metadata) &&
    Array.isArray(obj.metadata.finalizers) &&
    obj.metadata.finalizers.includes(FINALIZER)
  );
}
