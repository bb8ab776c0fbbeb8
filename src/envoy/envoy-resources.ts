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
  secret: "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret",
  downstreamTlsContext: "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext",
  tlsInspector: "type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector",
} as const;

/** The RouteConfiguration that the listener asks for through RDS. */
export const ROUTE_CONFIG_NAME = "edge";
export const LISTENER_NAME = "http";
/** The TLS listener: one filter chain per host served over HTTPS, each with its own route configuration. */
export const HTTPS_LISTENER_NAME = "https";

/** `https/HOST`: the route configuration of the HTTPS filter chain of HOST (a host name holds no `/`). */
export function httpsRoutesName(hostname: string): string {
  return `${HTTPS_LISTENER_NAME}/${hostname}`;
}

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

/** Envoy's StringMatcher, of the two kinds a route can ask for (RE2 syntax for the regex). */
export type StringMatch = { readonly exact: string } | { readonly safe_regex: { readonly regex: string } };

export interface HeaderMatcher {
  readonly name: string;
  readonly string_match: StringMatch;
}

export interface QueryParameterMatcher {
  readonly name: string;
  readonly string_match: StringMatch;
}

/** A header a route adds or sets: `OVERWRITE_IF_EXISTS_OR_ADD` is Gateway API's set, `APPEND_IF_EXISTS_OR_ADD` its add. */
export interface HeaderValueOption {
  readonly header: { readonly key: string; readonly value: string };
  readonly append_action: "APPEND_IF_EXISTS_OR_ADD" | "OVERWRITE_IF_EXISTS_OR_ADD";
}

export interface RetryPolicy {
  readonly retry_on: string;
  readonly num_retries?: number;
  readonly per_try_timeout?: string;
  readonly retriable_status_codes?: readonly number[];
  readonly retry_back_off?: { readonly base_interval: string };
}

export interface MirrorPolicy {
  readonly cluster: string;
  /** Absent: every request. */
  readonly runtime_fraction?: {
    readonly default_value: { readonly numerator: number; readonly denominator: "HUNDRED" };
  };
}

/** What a rule's filters and policies add to its action; absent fields are not written. */
export interface RouteActionExtras {
  readonly prefix_rewrite?: string;
  readonly regex_rewrite?: { readonly pattern: { readonly regex: string }; readonly substitution: string };
  readonly host_rewrite_literal?: string;
  readonly retry_policy?: RetryPolicy;
  readonly request_mirror_policies?: readonly MirrorPolicy[];
}

export type RouteAction = (
  | { readonly cluster: string; readonly timeout?: string }
  | {
      readonly weighted_clusters: {
        readonly clusters: readonly { readonly name: string; readonly weight: number }[];
      };
      readonly timeout?: string;
    }
) &
  RouteActionExtras;

/** Gateway API's redirect status codes as Envoy names them. */
export type RedirectResponseCode =
  "MOVED_PERMANENTLY" | "FOUND" | "SEE_OTHER" | "TEMPORARY_REDIRECT" | "PERMANENT_REDIRECT";

/** Envoy's RedirectAction, as a rule's RequestRedirect fills it. */
export interface RedirectAction {
  readonly scheme_redirect?: string;
  readonly host_redirect?: string;
  readonly port_redirect?: number;
  readonly path_redirect?: string;
  readonly prefix_rewrite?: string;
  readonly regex_rewrite?: { readonly pattern: { readonly regex: string }; readonly substitution: string };
  readonly response_code: RedirectResponseCode;
}

/** A match as Envoy reads it: a path specifier, then headers and query parameters when there are any. */
export type EnvoyRouteMatch = (EnvoyPathMatch | { readonly safe_regex: { readonly regex: string } }) & {
  readonly headers?: readonly HeaderMatcher[];
  readonly query_parameters?: readonly QueryParameterMatcher[];
};

/** The header edits of a rule's header modifier filters. */
export interface RouteHeaderEdits {
  readonly request_headers_to_add?: readonly HeaderValueOption[];
  readonly request_headers_to_remove?: readonly string[];
  readonly response_headers_to_add?: readonly HeaderValueOption[];
  readonly response_headers_to_remove?: readonly string[];
}

export type EnvoyRoute =
  | ({
      readonly name: string;
      readonly match: EnvoyRouteMatch;
      readonly route: RouteAction;
    } & RouteHeaderEdits)
  | ({
      readonly name: string;
      readonly match: EnvoyRouteMatch;
      readonly redirect: RedirectAction;
    } & RouteHeaderEdits);

export interface VirtualHost {
  readonly name: string;
  readonly domains: readonly string[];
  readonly routes: readonly EnvoyRoute[];
}

/** The one route of a host whose plain HTTP goes to HTTPS: named `namespace/name/https-redirect`. */
export interface RedirectRoute {
  readonly name: string;
  readonly match: { readonly prefix: "/" };
  readonly redirect: { readonly https_redirect: true; readonly response_code: "MOVED_PERMANENTLY" };
}

/** A TLS host's virtual host on the plain listener when plain HTTP is redirected. */
export interface RedirectVirtualHost {
  readonly name: string;
  readonly domains: readonly string[];
  readonly routes: readonly [RedirectRoute];
}

export interface RouteConfiguration {
  readonly "@type": typeof TYPE_URL.routeConfiguration;
  readonly name: string;
  readonly virtual_hosts?: readonly (VirtualHost | RedirectVirtualHost)[];
}

/** A filter chain: the plain listener's one, or an HTTPS one matched by SNI and terminating TLS. */
export interface FilterChain {
  readonly filter_chain_match?: { readonly server_names: readonly string[] };
  readonly filters: readonly unknown[];
  readonly transport_socket?: {
    readonly name: "envoy.transport_sockets.tls";
    readonly typed_config: DownstreamTlsContext;
  };
}

export interface Listener {
  readonly "@type": typeof TYPE_URL.listener;
  readonly name: string;
  readonly address: { readonly socket_address: { readonly address: string; readonly port_value: number } };
  readonly filter_chains: readonly FilterChain[];
  readonly listener_filters?: readonly {
    readonly name: string;
    readonly typed_config: { readonly "@type": string };
  }[];
}

export interface DownstreamTlsContext {
  readonly "@type": typeof TYPE_URL.downstreamTlsContext;
  readonly common_tls_context: {
    readonly tls_params: {
      readonly tls_minimum_protocol_version: "TLSv1_2";
      readonly cipher_suites: readonly string[];
    };
    readonly tls_certificate_sds_secret_configs: readonly [
      { readonly name: string; readonly sds_config: ConfigSource },
    ];
    readonly alpn_protocols: readonly string[];
  };
}

/**
 * An SDS Secret: a certificate chain and its key, inline. Only the xds sink
 * serves it, and only to clients authenticated by mutual TLS; nothing logs it.
 */
export interface Secret {
  readonly "@type": typeof TYPE_URL.secret;
  /** `namespace/name` of the Kubernetes Secret. */
  readonly name: string;
  readonly tls_certificate: {
    readonly certificate_chain: { readonly inline_string: string };
    readonly private_key: { readonly inline_string: string };
  };
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
  /** The SDS Secrets the HTTPS listener names, sorted by name; never written to Envoy's files. */
  readonly secrets: readonly Secret[];
}

export interface ListenerOptions {
  readonly address: string;
  readonly port: number;
}

function httpConnectionManager(statPrefix: string, rds: ConfigSource, routeConfigName: string): unknown {
  return {
    name: "envoy.filters.network.http_connection_manager",
    typed_config: {
      "@type": TYPE_URL.httpConnectionManager,
      stat_prefix: statPrefix,
      // Route by host name whatever port the client wrote in Host.
      strip_any_host_port: true,
      // RDS, so that a route change updates the route table and never drains the listener.
      rds: { config_source: rds, route_config_name: routeConfigName },
      http_filters: [{ name: "envoy.filters.http.router", typed_config: { "@type": TYPE_URL.router } }],
    },
  };
}

export function listener(opts: ListenerOptions, source: ConfigSourceOptions): Listener {
  return {
    "@type": TYPE_URL.listener,
    name: LISTENER_NAME,
    address: { socket_address: { address: opts.address, port_value: opts.port } },
    filter_chains: [
      { filters: [httpConnectionManager("edge", configSource(source, XDS_FILES.rds), ROUTE_CONFIG_NAME)] },
    ],
  };
}

const ADS: ConfigSource = { ads: {}, resource_api_version: "V3" };

/** One served TLS host: its SNI name and the SDS Secret (`namespace/name`) that holds its certificate. */
export interface HttpsHost {
  readonly hostname: string;
  readonly secret: string;
}

/**
 * The HTTPS listener: the TLS inspector reads the SNI name, and each host's
 * filter chain terminates TLS with its certificate from SDS and routes by its
 * own route configuration `https/HOST`, so a one-host change touches one
 * route configuration, and a renewed certificate only its Secret. Always ADS:
 * Envoy's files never carry a key, so this listener only goes over ADS.
 * TLS 1.2 and up, TLS 1.2 with `ciphers` (ECDHE and AEAD only); TLS 1.3 keeps
 * BoringSSL's suites, which are all modern.
 */
export function httpsListener(
  opts: ListenerOptions,
  hosts: readonly HttpsHost[],
  ciphers: readonly string[],
): Listener {
  return {
    "@type": TYPE_URL.listener,
    name: HTTPS_LISTENER_NAME,
    address: { socket_address: { address: opts.address, port_value: opts.port } },
    filter_chains: hosts.map((h) => ({
      filter_chain_match: { server_names: [h.hostname] },
      filters: [httpConnectionManager("https", ADS, httpsRoutesName(h.hostname))],
      transport_socket: {
        name: "envoy.transport_sockets.tls",
        typed_config: {
          "@type": TYPE_URL.downstreamTlsContext,
          common_tls_context: {
            tls_params: { tls_minimum_protocol_version: "TLSv1_2", cipher_suites: ciphers },
            tls_certificate_sds_secret_configs: [{ name: h.secret, sds_config: ADS }],
            alpn_protocols: ["h2", "http/1.1"],
          },
        },
      },
    })),
    listener_filters: [
      { name: "envoy.filters.listener.tls_inspector", typed_config: { "@type": TYPE_URL.tlsInspector } },
    ],
  };
}

export function secretResource(name: string, certificate: string, privateKey: string): Secret {
  return {
    "@type": TYPE_URL.secret,
    name,
    tls_certificate: {
      certificate_chain: { inline_string: certificate },
      private_key: { inline_string: privateKey },
    },
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
