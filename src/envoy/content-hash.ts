// The snapshot's version: a hash of what Envoy would be sent, so that equal
// content gives an equal version across processes and restarts, and an
// unchanged version means there is nothing to push.
//
// It is a hash of hashes where the resources are many: each route entry,
// cluster and endpoint list is hashed on its own, each virtual host with its
// entries written as their hashes, and the version is the hash of the whole
// with each of those written as its own hash. A part that kept its object
// from the last build (translate/keep-unchanged.ts) keeps its hash too, so a
// one-route change hashes that route's entries and one host's list of hashes.

import { createHash } from "node:crypto";
import type { EnvoyResources, RouteConfiguration } from "./envoy-resources.js";
import { perObject } from "../api/per-object.js";

export const VERSION_LENGTH = 16;

/** Hashes of parts, by object: the parts are never changed once built. */
const partHashes = new WeakMap<object, string>();

/** The hex SHA-256 of a part's JSON. */
function partHash(part: object): string {
  return perObject(partHashes, part, () => sha256(JSON.stringify(part)));
}

function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

function hashList(parts: readonly object[], hash: (part: object) => string = partHash): string {
  let out = "[";
  for (let i = 0; i < parts.length; i++) out += (i > 0 ? ',"' : '"') + hash(parts[i] as object) + '"';
  return `${out}]`;
}

/** A virtual host's hash: of its JSON with each route entry written as the entry's own hash. */
function hostHash(vh: object & { readonly routes?: readonly object[] }): string {
  return perObject(partHashes, vh, () =>
    sha256(JSON.stringify(vh.routes === undefined ? vh : { ...vh, routes: vh.routes.map(partHash) })),
  );
}

/** A route configuration with each virtual host written as its hash; the fields in translate/envoy.ts's order. */
function routeConfigurationJson(rc: RouteConfiguration): string {
  const hosts = rc.virtual_hosts;
  if (hosts === undefined) return JSON.stringify(rc);
  return `{"@type":${JSON.stringify(rc["@type"])},"name":${JSON.stringify(rc.name)},"virtual_hosts":${hashList(hosts, hostHash)}}`;
}

/**
 * The JSON the version is the hash of: the resources as JSON.stringify writes
 * them (canonical here, because envoy-resources.ts builds every object with a
 * fixed key order), except that each cluster and endpoint list stands as the
 * hex SHA-256 of its own JSON, and each virtual host as the hex SHA-256 of its
 * JSON with each route entry standing as the hex SHA-256 of the entry's JSON.
 */
export function contentJson(resources: EnvoyResources): string {
  return (
    `[${JSON.stringify(resources.listeners)},[${resources.routeConfigurations.map(routeConfigurationJson).join(",")}],` +
    `${hashList(resources.clusters)},${hashList(resources.clusterLoadAssignments)}` +
    // Only when there are any: a snapshot without TLS keeps the version it would have without TLS.
    // The Secrets are hashed like the rest (a renewed certificate is a new version), never logged.
    `${resources.secrets.length > 0 ? `,${JSON.stringify(resources.secrets)}` : ""}]`
  );
}

/** The first 16 hex digits of the SHA-256 of contentJson. */
export function contentVersion(resources: EnvoyResources): string {
  return sha256(contentJson(resources)).slice(0, VERSION_LENGTH);
}
