// The files Envoy reads from its watched directory: one DiscoveryResponse per
// resource type (the shape `path_config_source` takes) and a bootstrap that
// points LDS and CDS at them. The listener's RDS and the clusters' EDS point at
// rds.json and eds.json themselves (see envoy-resources.ts), so a route change
// rewrites the route table and never the listener: no drain.
//
// TLS is not in the files: a ConfigMap is no place for a private key (anyone
// who may read ConfigMaps in the namespace would read it, and it would sit in
// etcd unencrypted at rest). The HTTPS listener, its `https/HOST` route
// configurations and the Secrets are left out, so this sink serves plain HTTP
// only; TLS needs the xds sink, which serves Secrets by SDS to authenticated
// proxies (docs/architecture.md, "TLS at the edge").

import { stringify } from "yaml";
import {
  DEFAULT_XDS_DIR,
  HTTPS_LISTENER_NAME,
  ROUTE_CONFIG_NAME,
  TYPE_URL,
  XDS_FILES,
} from "../envoy/envoy-resources.js";
import type { Snapshot } from "./snapshot.js";

export interface DiscoveryResponse {
  readonly version_info: string;
  readonly resources: readonly unknown[];
  readonly type_url: string;
}

export const BOOTSTRAP_FILE = "envoy.yaml";

export interface BootstrapOptions {
  /** Where the ConfigMap is mounted in the Envoy container; must match the snapshot's config source. */
  readonly dir?: string;
  readonly nodeId?: string;
  readonly adminPort?: number;
}

function discoveryResponse(
  version: string,
  typeUrl: string,
  resources: readonly unknown[],
): DiscoveryResponse {
  return { version_info: version, resources, type_url: typeUrl };
}

/** The Envoy bootstrap, as an object in proto3 JSON form. */
export function envoyBootstrap(opts: BootstrapOptions = {}): Record<string, unknown> {
  const dir = opts.dir ?? DEFAULT_XDS_DIR;
  const source = (file: string) => ({
    path_config_source: { path: `${dir}/${file}`, watched_directory: { path: dir } },
    resource_api_version: "V3",
  });
  return {
    node: { id: opts.nodeId ?? "edge-envoy", cluster: "edge-envoy" },
    dynamic_resources: { lds_config: source(XDS_FILES.lds), cds_config: source(XDS_FILES.cds) },
    admin: { address: { socket_address: { address: "127.0.0.1", port_value: opts.adminPort ?? 9901 } } },
  };
}

/** File name → content, for every file in the watched directory. */
export function envoyFiles(snapshot: Snapshot, opts: BootstrapOptions = {}): Record<string, string> {
  const { version, resources } = snapshot;
  // Plain HTTP only: never a key in a ConfigMap (above).
  const listeners = resources.listeners.filter((l) => l.name !== HTTPS_LISTENER_NAME);
  const routeConfigurations = resources.routeConfigurations.filter((rc) => rc.name === ROUTE_CONFIG_NAME);
  return {
    [XDS_FILES.lds]: JSON.stringify(discoveryResponse(version, TYPE_URL.listener, listeners)),
    [XDS_FILES.rds]: JSON.stringify(
      discoveryResponse(version, TYPE_URL.routeConfiguration, routeConfigurations),
    ),
    [XDS_FILES.cds]: JSON.stringify(discoveryResponse(version, TYPE_URL.cluster, resources.clusters)),
    [XDS_FILES.eds]: JSON.stringify(
      discoveryResponse(version, TYPE_URL.clusterLoadAssignment, resources.clusterLoadAssignments),
    ),
    [BOOTSTRAP_FILE]: stringify(envoyBootstrap(opts)),
  };
}
