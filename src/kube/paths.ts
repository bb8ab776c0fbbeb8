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
