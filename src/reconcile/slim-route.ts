// A route with only what the reconcile reads, for the cache and the LISTs alike.

import type { EdgeRouteV2 } from "../api/types.js";

/**
 * A listed route with only what the reconcile reads: managedFields and the
 * last-applied annotation are most of an object's bytes, and with thousands of
 * routes held for a whole snapshot reconcile they are most of its memory.
 */
const LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration";

function withoutLastApplied(annotations: Readonly<Record<string, string>>): Record<string, string> {
  if (!(LAST_APPLIED in annotations)) return { ...annotations };
  const { [LAST_APPLIED]: _dropped, ...rest } = annotations;
  return rest;
}

export function slimRoute(route: EdgeRouteV2): EdgeRouteV2 {
  const m = route.metadata;
  const metadata: EdgeRouteV2["metadata"] = {
    name: m.name,
    namespace: m.namespace,
    uid: m.uid,
    resourceVersion: m.resourceVersion,
    generation: m.generation,
    creationTimestamp: m.creationTimestamp,
    ...(m.deletionTimestamp ? { deletionTimestamp: m.deletionTimestamp } : {}),
    ...(m.finalizers ? { finalizers: m.finalizers } : {}),
    ...(m.annotations ? { annotations: withoutLastApplied(m.annotations) } : {}),
  };
  return {
    apiVersion: route.apiVersion,
    kind: route.kind,
    metadata,
    spec: route.spec,
    ...(route.status ? { status: route.status } : {}),
  };
}
