// The EdgeRoute API (net.10xdev.io) as TypeScript types. The JSON Schemas in
// schema.ts describe the same shapes for the CRD and for ajv; the two are kept
// together by tests that validate generated objects against the schemas.

export const GROUP = "net.10xdev.io";
export const KIND = "EdgeRoute";
export const PLURAL = "edgeroutes";
export const SINGULAR = "edgeroute";
export const SHORT_NAMES = ["er"] as const;
export const CRD_NAME = `${PLURAL}.${GROUP}`;
export const VERSIONS = ["v1", "v2"] as const;
export type Version = (typeof VERSIONS)[number];
export const API_VERSION_V1 = `${GROUP}/v1`;
export const API_VERSION_V2 = `${GROUP}/v2`;

/** The finalizer that holds a route until the data plane no longer serves it. */
export const FINALIZER = `${GROUP}/deprogram`;
/**
 * Set by `edge-operator finalizer release` in the same write that removes the
 * finalizer: the mark that tells the mutating webhook the removal is on purpose.
 */
export const FINALIZER_RELEASED_ANNOTATION = `${GROUP}/finalizer-released`;
/** Carries the whole v2 spec on a v1 object whose v2 form says more than v1 can. */
export const V2_SPEC_ANNOTATION = `${GROUP}/v2-spec`;

export interface ObjectMeta {
  readonly name?: string;
  readonly generateName?: string;
  readonly namespace?: string;
  readonly uid?: string;
  readonly resourceVersion?: string;
  readonly generation?: number;
  readonly creationTimestamp?: string;
  readonly deletionTimestamp?: string;
  readonly deletionGracePeriodSeconds?: number;
  readonly labels?: Readonly<Record<string, string>>;
  readonly annotations?: Readonly<Record<string, string>>;
  readonly finalizers?: readonly string[];
  readonly ownerReferences?: readonly unknown[];
  readonly managedFields?: readonly unknown[];
  readonly [key: string]: unknown;
}

/** metav1.Condition */
export interface Condition {
  readonly type: string;
  readonly status: "True" | "False" | "Unknown";
  readonly reason: string;
  readonly message: string;
  readonly observedGeneration?: number;
  readonly lastTransitionTime: string;
}

export interface EdgeRouteStatus {
  readonly observedGeneration?: number;
  readonly conditions?: readonly Condition[];
}

export interface EdgeRouteSpecV1 {
  /** DNS-1123 subdomain or a wildcard `*.example.com`; absent means any host. */
  readonly host?: string;
  readonly pathPrefix: string;
  /** A Service in the route's namespace (DNS-1035 label). */
  readonly service: string;
  readonly port: number;
  readonly timeoutSeconds?: number;
}

export type PathMatchType = "PathPrefix" | "Exact" | "RegularExpression";

export interface PathMatch {
  readonly type?: PathMatchType;
  readonly value: string;
}

/** Gateway API's HTTPHeaderMatch / HTTPQueryParamMatch type; RegularExpression is RE2 syntax. */
export type ValueMatchType = "Exact" | "RegularExpression";

export interface HeaderMatch {
  /** Defaults to Exact. */
  readonly type?: ValueMatchType;
  readonly name: string;
  readonly value: string;
}

export interface QueryParamMatch {
  /** Defaults to Exact. */
  readonly type?: ValueMatchType;
  readonly name: string;
  readonly value: string;
}

export type HttpMethod =
  "GET" | "HEAD" | "POST" | "PUT" | "DELETE" | "CONNECT" | "OPTIONS" | "TRACE" | "PATCH";

export interface RouteMatch {
  readonly path: PathMatch;
  readonly headers?: readonly HeaderMatch[];
  readonly queryParams?: readonly QueryParamMatch[];
  readonly method?: HttpMethod;
}

/** Gateway API's HTTPHeader. */
export interface HeaderValue {
  readonly name: string;
  readonly value: string;
}

/** Gateway API's HTTPHeaderFilter. */
export interface HeaderModifier {
  readonly set?: readonly HeaderValue[];
  readonly add?: readonly HeaderValue[];
  readonly remove?: readonly string[];
}

/** Gateway API's HTTPPathModifier. */
export type PathModifier =
  | { readonly type: "ReplaceFullPath"; readonly replaceFullPath: string }
  | { readonly type: "ReplacePrefixMatch"; readonly replacePrefixMatch: string };

/** Gateway API's HTTPRequestRedirectFilter. */
export interface RequestRedirect {
  readonly scheme?: "http" | "https";
  readonly hostname?: string;
  readonly path?: PathModifier;
  readonly port?: number;
  /** Defaults to 302, as in Gateway API. */
  readonly statusCode?: 301 | 302 | 303 | 307 | 308;
}

/** Gateway API's HTTPURLRewriteFilter. */
export interface UrlRewrite {
  readonly hostname?: string;
  readonly path?: PathModifier;
}

/** Gateway API's HTTPRequestMirrorFilter: a Service in the route's namespace. */
export interface RequestMirror {
  readonly backend: { readonly name: string; readonly port: number };
  /** Share of requests mirrored, 0-100; defaults to 100. */
  readonly percent?: number;
}

/** Gateway API's HTTPRouteFilter: `type` names the one field that is set. */
export type RouteFilter =
  | { readonly type: "RequestHeaderModifier"; readonly requestHeaderModifier: HeaderModifier }
  | { readonly type: "ResponseHeaderModifier"; readonly responseHeaderModifier: HeaderModifier }
  | { readonly type: "RequestRedirect"; readonly requestRedirect: RequestRedirect }
  | { readonly type: "URLRewrite"; readonly urlRewrite: UrlRewrite }
  | { readonly type: "RequestMirror"; readonly requestMirror: RequestMirror };

/** Gateway API's HTTPRouteTimeouts (Gateway API durations). */
export interface RouteTimeouts {
  /** The whole request, retries included; the same as the rule's `timeout` (which stays for v2 objects written before). */
  readonly request?: string;
  /** Each attempt to a backend (the per-try timeout); at most `request`. */
  readonly backendRequest?: string;
}

/** What a retry is for: HTTP status classes Envoy reads, and the gRPC status names gRPC's client reads. */
export type RetryCondition =
  | "5xx"
  | "GatewayError"
  | "Reset"
  | "ConnectFailure"
  | "Cancelled"
  | "DeadlineExceeded"
  | "Internal"
  | "ResourceExhausted"
  | "Unavailable";

/** Gateway API's HTTPRouteRetry (experimental, GEP-1731), plus the conditions Envoy and gRPC need named. */
export interface RetryPolicy {
  /** Retries after the first attempt. */
  readonly attempts?: number;
  /** HTTP status codes (500-599) to retry on. */
  readonly codes?: readonly number[];
  /** What else to retry on: failures by class and gRPC statuses. */
  readonly conditions?: readonly RetryCondition[];
  /** Base interval between attempts (a Gateway API duration). */
  readonly backoff?: string;
}

export interface Backend {
  readonly name: string;
  readonly port: number;
  readonly weight?: number;
}

export interface RouteRule {
  readonly matches: readonly RouteMatch[];
  /** Empty only with a RequestRedirect filter, which sends no request to a backend. */
  readonly backends: readonly Backend[];
  /** A Gateway API duration such as `15s` or `1m30s`: the request timeout (timeouts.request says the same). */
  readonly timeout?: string;
  readonly filters?: readonly RouteFilter[];
  readonly timeouts?: RouteTimeouts;
  readonly retry?: RetryPolicy;
}

/** What plain HTTP does for a host that TLS serves: redirect to HTTPS (301), or serve it too. */
export type PlainHttpPolicy = "Redirect" | "Allow";

/** TLS termination for some or all of a route's hostnames. */
export interface RouteTls {
  /** A `kubernetes.io/tls` Secret in the route's namespace (a DNS-1123 subdomain). */
  readonly secretName: string;
  /** Which of the route's hostnames it serves over HTTPS; absent: all of them. */
  readonly hostnames?: readonly string[];
  /** Defaults to Redirect. */
  readonly plainHTTP?: PlainHttpPolicy;
}

export interface EdgeRouteSpecV2 {
  readonly hostnames?: readonly string[];
  readonly rules: readonly RouteRule[];
  readonly tls?: RouteTls;
}

interface EdgeRouteBase<V extends string, S> {
  readonly apiVersion: V;
  readonly kind: typeof KIND;
  readonly metadata: ObjectMeta;
  readonly spec: S;
  readonly status?: EdgeRouteStatus;
}

export type EdgeRouteV1 = EdgeRouteBase<typeof API_VERSION_V1, EdgeRouteSpecV1>;
export type EdgeRouteV2 = EdgeRouteBase<typeof API_VERSION_V2, EdgeRouteSpecV2>;
export type EdgeRoute = EdgeRouteV1 | EdgeRouteV2;

export function isVersion(v: unknown): v is Version {
  return typeof v === "string" && (VERSIONS as readonly string[]).includes(v);
}

/** `net.10xdev.io/v2` → `v2`; anything else → undefined. */
export function versionOf(apiVersion: unknown): Version | undefined {
  if (typeof apiVersion !== "string" || !apiVersion.startsWith(`${GROUP}/`)) return undefined;
  const v = apiVersion.slice(GROUP.length + 1);
  return isVersion(v) ? v : undefined;
}
