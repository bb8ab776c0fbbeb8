// Where things are on the apiserver, spelled once. EdgeRoutes are read and
// written as v2, the hub; a migration names its own version.

import { GROUP, PLURAL, type Version } from "../api/types.js";

/** EdgeRoutes in all namespaces, or in one. */
export function edgeRoutesPath(version: Version = "v2", namespace?: string): string {
  const ns = namespace === undefined ? "" : `/namespaces/${encodeURIComponent(namespace)}`;
  return `/apis/${GROUP}/${version}${ns}/${PLURAL}`;
}

/** One EdgeRoute. */
export function edgeRoutePath(namespace: string, name: string, version: Version = "v2"): string {
  return `${edgeRoutesPath(version, namespace)}/${encodeURIComponent(name)}`;
}

export const SERVICES_PATH = "/api/v1/services";
export const ENDPOINT_SLICES_PATH = "/apis/discovery.k8s.io/v1/endpointslices";

export function servicePath(namespace: string, name: string): string {
  return `/api/v1/namespaces/${encodeURIComponent(namespace)}/services/${encodeURIComponent(name)}`;
}

/** Secrets in all namespaces. */
export const SECRETS_PATH = "/api/v1/secrets";

/** Only the type TLS termination reads: a fieldSelector the apiserver supports for Secrets. */
export const TLS_SECRET_TYPE = "kubernetes.io/tls";

/** Metadata only (names and resourceVersions, never `data`): what the apiserver answers to these. */
export const PARTIAL_METADATA_ACCEPT = {
  list: "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
  watch: "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
} as const;

export function secretPath(namespace: string, name: string): string {
  return `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets/${encodeURIComponent(name)}`;
}
