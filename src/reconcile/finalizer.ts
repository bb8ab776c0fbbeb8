// Removing our finalizer: always with a precondition (the resourceVersion we
// decided on, and the finalizer at the index we saw), never a blind replace
// that could drop another controller's finalizer or race a newer change.

import { FINALIZER, type EdgeRouteV2 } from "../api/types.js";
import type { KubeClient } from "../watcher/kube-http.js";
import { routePath } from "./cluster-reader.js";

export function hasFinalizer(route: EdgeRouteV2): boolean {
  return route.metadata.finalizers?.includes(FINALIZER) ?? false;
}

/** The JSON Patch that removes our finalizer from exactly this version of the route. */
export function releasePatch(route: EdgeRouteV2): object[] | undefined {
  const i = route.metadata.finalizers?.indexOf(FINALIZER) ?? -1;
  if (i < 0) return undefined;
  return [
    { op: "test", path: "/metadata/resourceVersion", value: route.metadata.resourceVersion },
    { op: "test", path: `/metadata/finalizers/${i}`, value: FINALIZER },
    { op: "remove", path: `/metadata/finalizers/${i}` },
  ];
}

/** Removes the finalizer; a stale read fails the precondition and the caller retries. */
export async function releaseFinalizer(kube: KubeClient, route: EdgeRouteV2): Promise<boolean> {
  const patch = releasePatch(route);
  if (!patch) return false;
  await kube.json("PATCH", routePath(route.metadata.namespace ?? "", route.metadata.name ?? ""), {
    body: patch,
    contentType: "application/json-patch+json",
    timeoutMs: 15_000,
  });
  return true;
}
