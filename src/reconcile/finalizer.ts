// Removing our finalizer: always with a precondition (the resourceVersion we
// decided on, and the finalizer at the index we saw), never a blind replace
// that could drop another controller's finalizer or race a newer change.

import { FINALIZER, FINALIZER_RELEASED_ANNOTATION, type EdgeRouteV2 } from "../api/types.js";
import type { KubeClient } from "../kube/client.js";
import { edgeRoutePath } from "../kube/paths.js";

export function hasFinalizer(route: EdgeRouteV2): boolean {
  return route.metadata.finalizers?.includes(FINALIZER) ?? false;
}

/**
 * The JSON Patch that removes our finalizer from exactly this version of the
 * route. A release by hand (`reason` given) also marks the route released, so
 * the mutating webhook does not put the finalizer back on a live route.
 */
export function releasePatch(route: EdgeRouteV2, reason?: string): object[] | undefined {
  const i = route.metadata.finalizers?.indexOf(FINALIZER) ?? -1;
  if (i < 0) return undefined;
  const ops: object[] = [
    { op: "test", path: "/metadata/resourceVersion", value: route.metadata.resourceVersion },
    { op: "test", path: `/metadata/finalizers/${i}`, value: FINALIZER },
    { op: "remove", path: `/metadata/finalizers/${i}` },
  ];
  if (reason !== undefined) {
    const key = FINALIZER_RELEASED_ANNOTATION.replace("/", "~1");
    ops.push(
      route.metadata.annotations
        ? { op: "add", path: `/metadata/annotations/${key}`, value: reason }
        : { op: "add", path: "/metadata/annotations", value: { [FINALIZER_RELEASED_ANNOTATION]: reason } },
    );
  }
  return ops;
}

/**
 * Removes the finalizer; a stale read fails the precondition and the caller
 * retries. `path` names the route in the version it was read in (default v2).
 */
export async function releaseFinalizer(
  kube: KubeClient,
  route: EdgeRouteV2,
  reason?: string,
  path: string = edgeRoutePath(route.metadata.namespace ?? "", route.metadata.name ?? ""),
  signal?: AbortSignal,
): Promise<boolean> {
  const patch = releasePatch(route, reason);
  if (!patch) return false;
  const after = await kube.json<EdgeRouteV2>("PATCH", path, {
    body: patch,
    contentType: "application/json-patch+json",
    timeoutMs: 15_000,
    signal,
  });
  // A mutating webhook could have put it back in the same write: say so, never "released".
  if (after.metadata?.finalizers?.includes(FINALIZER)) {
    throw new Error(
      `the finalizer ${FINALIZER} is still on ${edgeRoutePath(route.metadata.namespace ?? "", route.metadata.name ?? "")} after the release: a mutating webhook put it back`,
    );
  }
  return true;
}
