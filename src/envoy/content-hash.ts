// The snapshot's version: a hash of what Envoy would be sent, so that equal
// content gives an equal version across processes and restarts, and an
// unchanged version means there is nothing to push.

import { createHash, type Hash } from "node:crypto";
import type { EnvoyResources, RouteConfiguration } from "./envoy-resources.js";

export const VERSION_LENGTH = 16;

/**
 * The JSON the version is the hash of. Plain JSON.stringify is canonical here
 * (equal content, equal text) because envoy-resources.ts builds every object
 * with a fixed key order; watcher/route-fingerprint.ts sorts keys instead,
 * for objects read off the wire.
 */
export function contentJson(resources: EnvoyResources): string {
  return JSON.stringify([
    resources.listeners,
    resources.routeConfigurations,
    resources.clusters,
    resources.clusterLoadAssignments,
    // Only when there are any: a snapshot without TLS keeps the version it had before TLS existed.
    ...(resources.secrets.length > 0 ? [resources.secrets] : []),
  ]);
}

/**
 * The bytes of JSON.stringify(rc), fed one virtual host at a time: each piece
 * is hashed and dropped while it is young, where one string of the whole
 * table (megabytes at 10,000 routes) would be copied by the collector and then
 * flattened again for the hash.
 */
function hashRouteConfiguration(hash: Hash, rc: RouteConfiguration): void {
  const hosts = rc.virtual_hosts;
  if (hosts === undefined) {
    hash.update(JSON.stringify(rc));
    return;
  }
  // The fields of RouteConfiguration in the order translate/envoy.ts writes them; virtual_hosts is last.
  hash.update(`{"@type":${JSON.stringify(rc["@type"])},"name":${JSON.stringify(rc.name)},"virtual_hosts":[`);
  for (let i = 0; i < hosts.length; i++) {
    if (i > 0) hash.update(",");
    hash.update(JSON.stringify(hosts[i]));
  }
  hash.update("]}");
}

/** The first 16 hex digits of the SHA-256 of contentJson (fed in pieces; the bytes are the same). */
export function contentVersion(resources: EnvoyResources): string {
  const hash = createHash("sha256");
  hash.update(`[${JSON.stringify(resources.listeners)},[`);
  resources.routeConfigurations.forEach((rc, i) => {
    if (i > 0) hash.update(",");
    hashRouteConfiguration(hash, rc);
  });
  hash.update(`],${JSON.stringify(resources.clusters)},${JSON.stringify(resources.clusterLoadAssignments)}`);
  // The Secrets are hashed like the rest (a renewed certificate is a new version), never logged.
  if (resources.secrets.length > 0) hash.update(`,${JSON.stringify(resources.secrets)}`);
  hash.update("]");
  return hash.digest("hex").slice(0, VERSION_LENGTH);
}
