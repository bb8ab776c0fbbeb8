// The snapshot's version: a hash of what Envoy would be sent, so that equal
// content gives an equal version across processes and restarts, and an
// unchanged version means there is nothing to push.

import { createHash } from "node:crypto";
import type { EnvoyResources } from "./envoy-resources.js";

export const VERSION_LENGTH = 16;

/** JSON.stringify is canonical here: envoy-resources.ts builds every object with a fixed key order. */
export function canonicalJson(resources: EnvoyResources): string {
  return JSON.stringify([
    resources.listeners,
    resources.routeConfigurations,
    resources.clusters,
    resources.clusterLoadAssignments,
  ]);
}

/** The first 16 hex digits of the SHA-256 of the canonical JSON. */
export function contentVersion(resources: EnvoyResources): string {
  return createHash("sha256").update(canonicalJson(resources)).digest("hex").slice(0, VERSION_LENGTH);
}
