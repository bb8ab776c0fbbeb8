// Envoy v3 resources in their proto3 JSON form (snake_case field names, `@type`
// on every Any, Durations as strings). Every object is built here with a fixed
// key order and only primitive values copied from input, so JSON.stringify of
// the result is already canonical: that is what the content hash relies on.

import type { EnvoyPathMatch } from "../routing/path-match.js";
import type { SocketAddress } from "../routing/service-endpoints.js";

export const TYPE_URL = {
  listener: "type.googleapis.com/envoy.config.listener.v3.Listener",
  routeConfiguration: "type.googleapis.com/envoy.config.route.v3.RouteConfiguration",
  cluster: "type.googleapis.com/envoy.config.cluster.v3.Cluster",
  clusterLoadAssignment: "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment",
  httpConnectionManager:
    "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
  router: "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router",
} as const;

/** The RouteConfiguration that the listener asks for through RDS. */
export const ROUTE_CONFIG_NAME = "edge";
export const LISTENER_NAME = "http";

/** Where Envoy gets RDS and EDS: files in a watched directory (the ConfigMap mount), or ADS. */
export type ConfigSourceOptions = { readonly kind: "path"; readonly dir: string } | { readonly kind: "ads" };

export const DEFAULT_XDS_DIR = "/etc/envoy/xds";

/** The file in the watched directory that holds each resource type. */
export const XDS_FILES = { lds: "lds.json", rds: "rds.json", cds: "cds.json", eds: "eds.json" } as const;

export type ConfigSource =
  | {
      readonly path_config_source: {
        readonly path: string;
        readonly watched_directory: { readonly path: string };
      };
      readonly resource_api_version: "V3";
    }
  | { readonly ads: Record<string, never>; readonly resource_api_version: "V3" };

export function configSource(opts: ConfigSourceOptions, file: string): ConfigSource {
  if (opts.kind === "ads") return { ads: {}, resource_api_version: "V3" };
  return {
    path_config_source: { path: `${opts.dir}/${file}`, watched_directory: { path: opts.dir } },
    resource_api_version: "V3",
  };
}

export interface HeaderMatcher {
  readonly name: string;
  readonly string_match: { readonly exact: string };
}

export type RouteAction =
  | { readonly cluster: string; readonly timeout?: string }
  | {
      readonly weighted_clusters: {
        readonly clusters: readonly { readonly name: string; readonly weight: number }[];
      };
      readonly timeout?: string;
    };

export interface EnvoyRoute {
  readonly name: string;
  readonly match: EnvoyPathMatch & { readonly headers?: readonly HeaderMatcher[] };
  readonly route: RouteAction;
}

export interface VirtualHost {
  readonly name: string;
  readonly domains: readonly string[];
  readonly routes: readonly EnvoyRoute[];
}

export interface RouteConfiguration {
  readonly "@type": typeof TYPE_URL.routeConfiguration;
  readonly name: string;
  readonly virtual_hosts?: readonly VirtualHost[];
}

export interface Listener {
  readonly "@type": typeof TYPE_URL.listener;
  readonly name: string;
  readonly address: { readonly socket_address: { readonly address: string; readonly port_value: number } };
  readonly filter_chains: readonly { readonly filters: readonly unknown[] }[];
}

export interface Cluster {
  readonly "@type": typeof TYPE_URL.cluster;
  readonly name: string;
  readonly type: "EDS";
  readonly connect_timeout: string;
  readonly eds_cluster_config: { readonly eds_config: ConfigSource; readonly service_name: string };
}

export interface LbEndpoint {
  readonly endpoint: {
    readonly address: { readonly socket_address: { readonly address: string; readonly port_value: number } };
  };
}

export interface ClusterLoadAssignment {
  readonly "@type": typeof TYPE_URL.clusterLoadAssignment;
  readonly cluster_name: string;
  /** Absent when no endpoint is ready: Envoy then answers 503 for the cluster. */
  readonly endpoints?: readonly [{ readonly lb_endpoints: readonly LbEndpoint[] }];
}

export interface EnvoyResources {
  readonly listeners: readonly Listener[];
  readonly routeConfigurations: readonly RouteConfiguration[];
  readonly clusters: readonly Cluster[];
  readonly clusterLoadAssignments: readonly ClusterLoadAssignment[];
}

export interface ListenerOptions {
  readonly address: string;
  readonly port: number;
}

export function listener(opts: ListenerOptions, source: ConfigSourceOptions): Listener {
  return {
    "@type": TYPE_URL.listener,
    name: LISTENER_NAME,
    address: { socket_address: { address: opts.address, port_value: opts.port } },
    filter_chains: [
      {
        filters: [
          {
            name: "envoy.filters.network.http_connection_manager",
            typed_config: {
              "@type": TYPE_URL.httpConnectionManager,
              stat_prefix: "edge",
              // Route by host name whatever port the client wrote in Host.
              strip_any_host_port: true,
              // RDS, so that a route change updates the route table and never drains the listener.
              rds: {
                config_source: configSource(source, XDS_FILES.rds),
                route_config_name: ROUTE_CONFIG_NAME,
              },
              http_filters: [
                { name: "envoy.filters.http.router", typed_config: { "@type": TYPE_URL.router } },
              ],
            },
          },
        ],
      },
    ],
  };
}

export function cluster(name: string, connectTimeout: string, source: ConfigSourceOptions): Cluster {
  return {
    "@type": TYPE_URL.cluster,
    name,
    type: "EDS",
    connect_timeout: connectTimeout,
    eds_cluster_config: { eds_config: configSource(source, XDS_FILES.eds), service_name: name },
  };
}

export function clusterLoadAssignment(
  name: string,
  addresses: readonly SocketAddress[],
): ClusterLoadAssignment {
  if (addresses.length === 0) return { "@type": TYPE_URL.clusterLoadAssignment, cluster_name: name };
  const lb_endpoints = addresses.map((a) => ({
    endpoint: { address: { socket_address: { address: a.ip, port_value: a.port } } },
  }));
  return { "@type": TYPE_URL.clusterLoadAssignment, cluster_name: name, endpoints: [{ lb_endpoints }] };
}

/** `namespace/service:port`, the name of the cluster for one Service port. */
export function clusterName(namespace: string, service: string, port: number): string {
  return `${namespace}/${service}:${port}`;
}
