// What the mutating webhook changes in an EdgeRoute: the finalizer that holds
// the route until the data plane has dropped it, and the v2 defaults. Pure: it
// returns a new object and leaves its input alone; the handler diffs the two
// into a JSON Patch.
//
// It runs before the apiserver checks the schema, so it must take any shape
// and only touch what has the shape it expects.

import { FINALIZER, versionOf } from "../api/types.js";

export type Operation = "CREATE" | "UPDATE";

type Json = Record<string, unknown>;

function isRecord(v: unknown): v is Json {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

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

function withMatchDefaults(match: unknown): unknown {
  if (!isRecord(match) || !isRecord(match.path) || match.path.type !== undefined) return match;
  return { ...match, path: { ...match.path, type: "PathPrefix" } };
}

function withRuleDefaults(rule: unknown): unknown {
  if (!isRecord(rule)) return rule;
  const out: Json = { ...rule };
  if (Array.isArray(rule.matches)) out.matches = rule.matches.map(withMatchDefaults);
  if (Array.isArray(rule.backends)) out.backends = rule.backends.map(withBackendDefaults);
  return out;
}

function withSpecDefaults(obj: Json): Json {
  // v1 has no defaults; its optional fields mean "absent" (any host, no timeout).
  if (versionOf(obj.apiVersion) !== "v2" || !isRecord(obj.spec) || !Array.isArray(obj.spec.rules)) return obj;
  return { ...obj, spec: { ...obj.spec, rules: obj.spec.rules.map(withRuleDefaults) } };
}

/**
 * The route as it should be stored. A route that is being deleted is left
 * exactly as it is: adding a finalizer would hold it forever, and changing its
 * spec would only bump its generation on the way out.
 */
export function mutateRoute(obj: unknown, _operation: Operation): unknown {
  if (!isRecord(obj) || !isRecord(obj.metadata)) return obj;
  if (obj.metadata.deletionTimestamp !== undefined && obj.metadata.deletionTimestamp !== null) return obj;
  const defaulted = withSpecDefaults(obj);
  return { ...defaulted, metadata: withFinalizer(obj.metadata) };
}
