// One source for the shape of both versions: these schemas are written into the
// CRD's openAPIV3Schema (so they must stay structural: a type on every node, no
// $ref, no additionalProperties beside properties) and compiled by ajv in the
// validating webhook.

import type { RetryCondition } from "./types.js";

export interface Schema {
  type?: "object" | "array" | "string" | "integer" | "number" | "boolean";
  description?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  enum?: readonly (string | number)[];
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
  format?: string;
  /** Applied by the apiserver when the field is absent (structural schema defaulting). */
  default?: string | number;
  "x-kubernetes-validations"?: {
    rule: string;
    message: string;
    fieldPath?: string;
    /** How the apiserver words the error (`Forbidden:` …); FieldValueInvalid when absent. */
    reason?: "FieldValueInvalid" | "FieldValueForbidden" | "FieldValueRequired" | "FieldValueDuplicate";
  }[];
  "x-kubernetes-list-type"?: "atomic" | "set" | "map";
  "x-kubernetes-list-map-keys"?: string[];
  "x-kubernetes-preserve-unknown-fields"?: boolean;
}

export const LIMITS = {
  hostLength: 253,
  pathLength: 1024,
  nameLength: 63,
  hostnames: 16,
  rules: 16,
  matches: 8,
  headers: 16,
  backends: 8,
  maxWeight: 1_000_000,
  maxTimeoutSeconds: 3600,
  headerNameLength: 256,
  headerValueLength: 4096,
  secretNameLength: 253,
  queryParams: 16,
  queryParamValueLength: 1024,
  filters: 16,
  headerEdits: 16,
  retryCodes: 16,
  retryConditions: 9,
  maxRetryAttempts: 10,
  maxMirrorPercent: 100,
  /** Envoy refuses a regular expression whose RE2 program is larger (re2.max_program_size.error_level). */
  maxRegexProgramSize: 100,
  /**
   * What one route may weigh in what a proxy receives, and one host's routes
   * together: bytes of their route entries as JSON, which is never less than
   * the protobuf a client reads. gRPC clients refuse a message over 4 MiB
   * (grpc.max_receive_message_length) and then take no update at all, so a
   * host, which goes whole in its route configuration, stays well under it.
   */
  maxRouteBytes: 64 * 1024,
  maxHostBytes: 1024 * 1024,
} as const;

const DNS1123_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
/** A lowercase DNS-1123 subdomain, or one leading wildcard label (`*.example.com`). */
export const HOSTNAME_PATTERN = `^(\\*\\.)?${DNS1123_LABEL}(\\.${DNS1123_LABEL})*$`;
/** A DNS-1123 subdomain: what a Secret name must be. */
export const DNS1123_SUBDOMAIN_PATTERN = `^${DNS1123_LABEL}(\\.${DNS1123_LABEL})*$`;
/** A DNS-1035 label: what a Service name must be. */
export const DNS1035_LABEL_PATTERN = "^[a-z]([-a-z0-9]*[a-z0-9])?$";
/** The Gateway API's duration format (GEP-2257): `1h`, `15s`, `1m30s`, `500ms`. */
export const DURATION_PATTERN = "^([0-9]{1,5}(h|m|s|ms)){1,4}$";
/** RFC 7230 token: what an HTTP header name is. */
export const HEADER_NAME_PATTERN = "^[A-Za-z0-9!#$%&'*+\\-.^_`|~]+$";

const hostname: Schema = {
  type: "string",
  description:
    "A host, matched against the request's Host header (HTTP/1) or :authority (HTTP/2, gRPC) without its port: a lowercase DNS-1123 subdomain (shop.example.com), or a wildcard whose first label is * (*.example.com matches a.example.com and a.b.example.com, not example.com). At most 253 characters.",
  maxLength: LIMITS.hostLength,
  pattern: HOSTNAME_PATTERN,
};
const path: Schema = {
  type: "string",
  description:
    "An absolute path: starts with '/', at most 1024 characters, without '?' or '#' (the query is never matched). The webhook also refuses '//', '/./', '/../', an encoded slash (%2F), whitespace and control characters.",
  minLength: 1,
  maxLength: LIMITS.pathLength,
  pattern: "^/",
};
const serviceName: Schema = {
  type: "string",
  description:
    "The name of a Service in the route's namespace (a DNS-1035 label: lowercase letters, digits and '-', starting with a letter, at most 63 characters); routes cannot reach other namespaces. Until the Service exists with the given port the route is Accepted=False/ServiceNotFound, and it recovers by itself when the Service appears.",
  minLength: 1,
  maxLength: LIMITS.nameLength,
  pattern: DNS1035_LABEL_PATTERN,
};
const port: Schema = {
  type: "integer",
  description:
    "A port of the Service as the Service declares it (spec.ports[].port, not the pod's targetPort), 1 to 65535. Traffic goes to the ready endpoints behind that port.",
  minimum: 1,
  maximum: 65535,
};

const tls: Schema = {
  type: "object",
  description:
    "Terminates HTTPS for some or all of spec.hostnames with the certificate of one Secret. Needs spec.hostnames: a route for any host (no hostnames) cannot have TLS. Plain HTTP to these hosts is redirected to https with a 301 unless plainHTTP is Allow.",
  required: ["secretName"],
  properties: {
    secretName: {
      type: "string",
      description:
        "The Secret with the certificate and key (tls.crt, tls.key): of type kubernetes.io/tls, in the route's namespace; its name is a DNS-1123 subdomain of at most 253 characters. Until it exists and holds a valid certificate for the hosts, the route reports ResolvedRefs=False and those hosts are not served over HTTPS.",
      minLength: 1,
      maxLength: LIMITS.secretNameLength,
      pattern: DNS1123_SUBDOMAIN_PATTERN,
    },
    hostnames: {
      type: "array",
      description:
        "The hosts served over HTTPS, each one of spec.hostnames as written there, each at most once, 1 to 16. Defaults to all of spec.hostnames. The hosts of spec.hostnames left out are served over plain HTTP only.",
      minItems: 1,
      maxItems: LIMITS.hostnames,
      "x-kubernetes-list-type": "set",
      // A copy: one object in two places would be a YAML anchor in the chart's CRD.
      items: {
        ...hostname,
        description:
          "One of spec.hostnames (at most 253 characters), written exactly as there: a wildcard is named as the wildcard (*.example.com in spec.hostnames does not let this name a.example.com, nor the reverse). A top-level wildcard such as *.com is refused, as no TLS client matches a certificate to it.",
      },
    },
    plainHTTP: {
      type: "string",
      description:
        "What plain HTTP to the TLS hosts does: Redirect (the default) answers 301 to the same URL on https; Allow serves the route over plain HTTP as well.",
      // No schema default: absent means Redirect, and a stored spec stays as it was written.
      enum: ["Redirect", "Allow"],
    },
  },
};

export const specV1Schema: Schema = {
  type: "object",
  description:
    "The desired route, in v1's shape: requests for one host (or any host) whose path starts with pathPrefix go to one port of one Service in the route's namespace. v1 is served beside v2 and converts to it losslessly; a v2 route that says more than v1 can (several hostnames, rules, matches or backends, header matches, Exact paths, TLS, sub-second timeouts) shows here as its first rule's first match and backend, and the rest is kept in the net.10xdev.io/v2-spec annotation.",
  required: ["pathPrefix", "service", "port"],
  properties: {
    host: {
      ...hostname,
      description:
        "The host to match, against the request's Host header (or :authority) without its port: a lowercase DNS-1123 subdomain, or a wildcard whose first label is * (*.example.com matches a.example.com and a.b.example.com, not example.com). Absent: any host. At most 253 characters. Becomes spec.hostnames[0] in v2.",
    },
    pathPrefix: {
      ...path,
      description:
        "The path prefix to match, on whole segments: /api matches /api, /api/ and /api/orders, never /apis; a trailing slash does not change that, and / matches every path. Starts with '/', at most 1024 characters, without '?', '#', '//', '/./', '/../' or an encoded slash. Becomes a PathPrefix match in v2.",
    },
    service: {
      ...serviceName,
      description:
        "The Service that receives the traffic, in the route's namespace (a DNS-1035 label, at most 63 characters). Until it exists with spec.port the route is Accepted=False/ServiceNotFound; it recovers by itself when the Service appears.",
    },
    port: {
      ...port,
      description:
        "The Service's port as the Service declares it (spec.ports[].port, not the pod's targetPort), 1 to 65535.",
    },
    timeoutSeconds: {
      type: "integer",
      description:
        "How long a request may take until its response is complete, in whole seconds, 1 to 3600 (Envoy's route timeout; a proxyless gRPC client's call deadline). Absent: the data plane's own default (15 s in Envoy; none for gRPC clients). Becomes the rule's timeout in v2.",
      minimum: 1,
      maximum: LIMITS.maxTimeoutSeconds,
    },
  },
};

const pathMatch: Schema = {
  type: "object",
  description:
    "How the request's path must match, without its query string. Matches of type Exact are tried before PathPrefix, and longer prefixes before shorter ones, whatever the order of the rules.",
  required: ["value"],
  properties: {
    type: {
      type: "string",
      enum: ["PathPrefix", "Exact", "RegularExpression"],
      description:
        "PathPrefix (the default) matches whole path segments: /api matches /api, /api/ and /api/orders, never /apis, and / matches every path. Exact matches the path exactly as written, trailing slash included. RegularExpression matches the whole path against value as a regular expression in RE2 syntax (Envoy's and gRPC's engine: no lookaround, no backreferences), with an RE2 program size of at most 100; admission checks it with a real RE2.",
      // The apiserver applies it, so no webhook call is needed for it.
      default: "PathPrefix",
    },
    value: {
      ...path,
      description:
        "The path or prefix to match: starts with '/', at most 1024 characters, without '?' or '#' (the query is never matched). The webhook also refuses '//', '/./', '/../', an encoded slash (%2F), whitespace and control characters. A prefix's trailing slash is ignored: /api/ means /api. With type RegularExpression: a regular expression (RE2 syntax) that also starts with '/', matched against the whole path.",
    },
  },
};

const headerName: Schema = {
  type: "string",
  description:
    "The header's name, matched without regard to case (X-Canary and x-canary are the same header): an HTTP token of letters, digits and !#$%&'*+-.^_`|~, 1 to 256 characters.",
  minLength: 1,
  maxLength: LIMITS.headerNameLength,
  pattern: HEADER_NAME_PATTERN,
};

const REGEX_RULES =
  "RE2 syntax (Envoy's and gRPC's engine: no lookaround, no backreferences), matched against the whole value, with an RE2 program size of at most 100 (Envoy refuses larger ones); admission checks it with a real RE2.";

const valueMatchType = (what: string): Schema => ({
  type: "string",
  enum: ["Exact", "RegularExpression"],
  description: `How value is matched against the ${what}: Exact (the default) compares it exactly and with regard to case; RegularExpression matches it as ${REGEX_RULES}`,
  default: "Exact",
});

const headerMatch: Schema = {
  type: "object",
  description:
    "A header the request must carry with a value that matches: exactly (the default) or by a regular expression (Gateway API's HTTPHeaderMatch).",
  required: ["name", "value"],
  properties: {
    type: valueMatchType("header's value"),
    name: headerName,
    value: {
      type: "string",
      description:
        "The value the header must have (type Exact, matched with regard to case) or a regular expression its whole value must match (type RegularExpression), at most 4096 characters.",
      maxLength: LIMITS.headerValueLength,
    },
  },
};

const queryParamMatch: Schema = {
  type: "object",
  description:
    "A query parameter the request's URL must carry with a value that matches (Gateway API's HTTPQueryParamMatch). When the URL repeats the parameter, its first value is the one matched.",
  required: ["name", "value"],
  properties: {
    type: valueMatchType("parameter's value"),
    name: {
      type: "string",
      description:
        "The parameter's name, matched exactly and with regard to case: 1 to 256 characters of letters, digits and !#$%&'*+-.^_`|~.",
      minLength: 1,
      maxLength: LIMITS.headerNameLength,
      pattern: HEADER_NAME_PATTERN,
    },
    value: {
      type: "string",
      description:
        "The value the parameter must have (type Exact) or a regular expression its whole value must match (type RegularExpression), 1 to 1024 characters.",
      minLength: 1,
      maxLength: LIMITS.queryParamValueLength,
    },
  },
};

const backend: Schema = {
  type: "object",
  description: "A port of a Service in the route's namespace, and its share of the rule's traffic.",
  required: ["name", "port"],
  properties: {
    name: {
      ...serviceName,
      description:
        "The Service's name, in the route's namespace (a DNS-1035 label, at most 63 characters); routes cannot reach other namespaces. Until every backend's Service exists with its port the route is Accepted=False/ServiceNotFound; it recovers by itself when they appear.",
    },
    port,
    weight: {
      type: "integer",
      description:
        "This backend's share of the rule's requests, relative to the other backends' weights: 90 and 10 send 90% and 10%. Defaults to 1; 0 sends it nothing (at least one backend of a rule must weigh more than 0). At most 1000000.",
      default: 1,
      minimum: 0,
      maximum: LIMITS.maxWeight,
    },
  },
};

/** What admission says, in the CRD's CEL rules and in the webhook alike. */
/** Gateway API's HTTPMethod values. */
export const HTTP_METHODS = ["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"];
/** The redirect statuses Gateway API and Envoy's RedirectResponseCode both have. */
export const REDIRECT_STATUS_CODES = [301, 302, 303, 307, 308];

/** Why Envoy would refuse a header filter that modifies this header; undefined when it would not. */
export function headerEditProblem(name: string): string | undefined {
  if (name.startsWith(":")) return FILTER_MESSAGES.pseudoHeader;
  if (name.toLowerCase() === "host") return FILTER_MESSAGES.hostHeader;
  return undefined;
}

export const FILTER_MESSAGES = {
  pseudoHeader:
    "Envoy refuses to modify pseudo-headers (':'-prefixed names): a URLRewrite changes the path and host",
  hostHeader: "Envoy refuses to modify host with a header filter: a URLRewrite's hostname changes it",
  typeField:
    "must set the one field its type names (requestHeaderModifier, responseHeaderModifier, requestRedirect, urlRewrite or requestMirror), and no other",
  once: "RequestHeaderModifier, ResponseHeaderModifier, RequestRedirect and URLRewrite may each appear once in a rule",
  redirectAndRewrite:
    "a RequestRedirect and a URLRewrite cannot be in the same rule: a redirected request is not forwarded, so nothing is rewritten",
  redirectWithBackends:
    "must be empty in a rule with a RequestRedirect filter: the redirect answers every request itself",
  noRuleWithBackends:
    "at least one rule needs a backend: a route that only redirects cannot be shown in v1, which names one Service",
  noBackends: "a rule needs at least one backend, unless a RequestRedirect filter answers its requests",
  prefixOnly:
    "ReplacePrefixMatch needs every match of the rule to be a PathPrefix: it replaces the prefix the request matched",
  timeoutTwice: "must be the same as the rule's timeout when both are set: they are the same timeout",
  backendRequestOverRequest: "must not be longer than timeouts.request",
  backendRequestOverTimeout: "must not be longer than the rule's timeout",
} as const;

const preciseHostname: Schema = {
  type: "string",
  description:
    "A lowercase DNS-1123 subdomain without a wildcard (shop.example.com), at most 253 characters.",
  maxLength: LIMITS.hostLength,
  pattern: DNS1123_SUBDOMAIN_PATTERN,
};

const headerEditName = (what: string): Schema => ({
  ...headerName,
  "x-kubernetes-validations": [
    { rule: "!self.startsWith(':')", message: FILTER_MESSAGES.pseudoHeader, reason: "FieldValueForbidden" },
    {
      rule: "self.lowerAscii() != 'host'",
      message: FILTER_MESSAGES.hostHeader,
      reason: "FieldValueForbidden",
    },
  ],
  description: `The name of the header to ${what}, without regard to case: an HTTP token of letters, digits and !#$%&'*+-.^_\`|~, 1 to 256 characters. Envoy refuses to modify pseudo-headers (:authority, :path, ...) and host: admission refuses them (a URLRewrite changes the host).`,
});

const headerValues = (verb: string, what: string): Schema => ({
  type: "array",
  description: `Headers to ${verb}, at most 16, each name once (without regard to case) across set, add and remove. ${what}`,
  maxItems: LIMITS.headerEdits,
  "x-kubernetes-list-type": "map",
  "x-kubernetes-list-map-keys": ["name"],
  items: {
    type: "object",
    description: "A header's name and value (Gateway API's HTTPHeader).",
    required: ["name", "value"],
    properties: {
      name: headerEditName(verb),
      value: {
        type: "string",
        description: "The header's value, 1 to 4096 characters, without CR, LF or NUL (Envoy refuses them).",
        minLength: 1,
        maxLength: LIMITS.headerValueLength,
      },
    },
  },
});

const headerModifier = (of: string): Schema => ({
  type: "object",
  description: `Edits to the ${of}'s headers (Gateway API's HTTPHeaderFilter): set replaces a header's value (or adds it), add appends a value to what is there, remove drops it. A header may be named in only one of them, once.`,
  properties: {
    set: headerValues("set", "Replaces any value the header has, or adds it."),
    add: headerValues("add", "Appends to any value the header has (a second line of the same name)."),
    remove: {
      type: "array",
      description:
        "Names of headers to remove, matched without regard to case, at most 16, each once, none also in set or add.",
      maxItems: LIMITS.headerEdits,
      "x-kubernetes-list-type": "set",
      items: headerEditName("remove"),
    },
  },
});

const pathModifier = (what: string): Schema => ({
  type: "object",
  description: `How the ${what} path is made (Gateway API's HTTPPathModifier): type names the one field that is set.`,
  required: ["type"],
  "x-kubernetes-validations": [
    {
      rule: "self.type == 'ReplaceFullPath' ? has(self.replaceFullPath) && !has(self.replacePrefixMatch) : has(self.replacePrefixMatch) && !has(self.replaceFullPath)",
      message:
        "must set the one field its type names: replaceFullPath for ReplaceFullPath, replacePrefixMatch for ReplacePrefixMatch",
    },
  ],
  properties: {
    type: {
      type: "string",
      description:
        "ReplaceFullPath: the path becomes replaceFullPath. ReplacePrefixMatch: the part of the path the rule's PathPrefix matched becomes replacePrefixMatch, the rest is kept (/api/orders matched by /api with /v2 gives /v2/orders); only in a rule whose matches are all PathPrefix.",
      enum: ["ReplaceFullPath", "ReplacePrefixMatch"],
    },
    replaceFullPath: {
      ...path,
      description:
        "The whole new path (with type ReplaceFullPath): starts with '/', at most 1024 characters, without '?', '#', '//', '/./', '/../', an encoded slash, whitespace or control characters.",
    },
    replacePrefixMatch: {
      ...path,
      description:
        "What replaces the matched prefix (with type ReplacePrefixMatch): starts with '/', at most 1024 characters, without '?', '#', '//', '/./', '/../', an encoded slash, whitespace or control characters.",
    },
  },
});

const FILTER_TYPES = [
  "RequestHeaderModifier",
  "ResponseHeaderModifier",
  "RequestRedirect",
  "URLRewrite",
  "RequestMirror",
] as const;

/** The field each filter type sets: Gateway API's names. */
export const FILTER_FIELDS: Readonly<Record<(typeof FILTER_TYPES)[number], string>> = {
  RequestHeaderModifier: "requestHeaderModifier",
  ResponseHeaderModifier: "responseHeaderModifier",
  RequestRedirect: "requestRedirect",
  URLRewrite: "urlRewrite",
  RequestMirror: "requestMirror",
};

/** The filter types a rule may hold once (Gateway API's rule). */
export const SINGLE_FILTER_TYPES = [
  "RequestHeaderModifier",
  "ResponseHeaderModifier",
  "RequestRedirect",
  "URLRewrite",
] as const;

const filter: Schema = {
  type: "object",
  description:
    "One filter (Gateway API's HTTPRouteFilter): type names the one field that is set. Filters apply in the order written.",
  required: ["type"],
  "x-kubernetes-validations": [
    {
      rule: FILTER_TYPES.map((t) => `(self.type == '${t}') == has(self.${FILTER_FIELDS[t]})`).join(" && "),
      message: FILTER_MESSAGES.typeField,
    },
  ],
  properties: {
    type: {
      type: "string",
      description:
        "Which filter this is, and the field that holds it: RequestHeaderModifier (requestHeaderModifier), ResponseHeaderModifier (responseHeaderModifier), RequestRedirect (requestRedirect), URLRewrite (urlRewrite), RequestMirror (requestMirror).",
      enum: FILTER_TYPES,
    },
    requestHeaderModifier: headerModifier("request sent to the backend"),
    responseHeaderModifier: headerModifier("response sent to the client"),
    requestRedirect: {
      type: "object",
      description:
        "Answers the request with a redirect instead of forwarding it (Gateway API's HTTPRequestRedirectFilter): the same URL with the parts given here replaced. A rule with a redirect has no backends, and no URLRewrite.",
      properties: {
        scheme: {
          type: "string",
          description:
            "The scheme of the new URL: http or https. Absent: the request's. With https and no port, the port is 443 (80 for http).",
          enum: ["http", "https"],
        },
        hostname: {
          ...preciseHostname,
          description: `The host of the new URL. Absent: the request's. ${preciseHostname.description}`,
        },
        path: pathModifier("new URL's"),
        port: {
          ...port,
          description:
            "The port of the new URL, 1 to 65535. Absent: the request's port, or the scheme's well-known port when scheme is set.",
        },
        statusCode: {
          type: "integer",
          description: "The redirect's HTTP status: 301, 302 (the default), 303, 307 or 308.",
          enum: REDIRECT_STATUS_CODES,
          default: 302,
        },
      },
    },
    urlRewrite: {
      type: "object",
      description:
        "Rewrites the request before it goes to the backend (Gateway API's HTTPURLRewriteFilter): its host (Host or :authority) and path.",
      properties: {
        hostname: {
          ...preciseHostname,
          description: `The host the backend sees. ${preciseHostname.description}`,
        },
        path: pathModifier("forwarded request's"),
      },
    },
    requestMirror: {
      type: "object",
      description:
        "Also sends a copy of the request to another Service, whose responses are dropped (Gateway API's HTTPRequestMirrorFilter). Envoy applies it; proxyless gRPC clients do not.",
      required: ["backend"],
      properties: {
        backend: {
          type: "object",
          description: "A port of a Service in the route's namespace that receives the copies.",
          required: ["name", "port"],
          properties: { name: serviceName, port },
        },
        percent: {
          type: "integer",
          description: "The share of requests mirrored, 0 to 100. Absent: every request (100).",
          minimum: 0,
          maximum: LIMITS.maxMirrorPercent,
        },
      },
    },
  },
};

const duration = (text: string): Schema => ({
  type: "string",
  description: `${text} A Gateway API duration of 1 to 4 parts with the units h, m, s and ms (15s, 1m30s, 500ms), at most 1h.`,
  pattern: DURATION_PATTERN,
});

const timeouts: Schema = {
  type: "object",
  description: "The rule's timeouts (Gateway API's HTTPRouteTimeouts).",
  "x-kubernetes-validations": [
    {
      rule: "!has(self.request) || !has(self.backendRequest) || duration(self.request) == duration('0s') || duration(self.backendRequest) <= duration(self.request)",
      message: FILTER_MESSAGES.backendRequestOverRequest,
      fieldPath: ".backendRequest",
    },
  ],
  properties: {
    request: duration(
      "How long a request may take until its response is complete, retries included (Envoy's route timeout; a proxyless gRPC client's call deadline); the same as the rule's timeout, and if both are set they must be equal. 0s: no timeout.",
    ),
    backendRequest: duration(
      "How long each attempt to a backend may take (Envoy's per-try timeout; a proxyless gRPC client applies no per-attempt timeout), at most request (and the rule's timeout).",
    ),
  },
};

export const RETRY_CONDITIONS: readonly RetryCondition[] = [
  "5xx",
  "GatewayError",
  "Reset",
  "ConnectFailure",
  "Cancelled",
  "DeadlineExceeded",
  "Internal",
  "ResourceExhausted",
  "Unavailable",
] as const;

const retry: Schema = {
  type: "object",
  description:
    "Retries of a failed request (Gateway API's HTTPRouteRetry, experimental channel): how many, on what, and how long to wait in between. Each attempt is bounded by timeouts.backendRequest and all of them by the request timeout.",
  properties: {
    attempts: {
      type: "integer",
      description:
        "How many times a request is retried after its first attempt, 0 to 10 (proxyless gRPC clients make at most 5 attempts in all, so at most 4 retries). Absent: 1.",
      minimum: 0,
      maximum: LIMITS.maxRetryAttempts,
    },
    codes: {
      type: "array",
      description: "HTTP status codes to retry on, each 500 to 599, each once, at most 16.",
      maxItems: LIMITS.retryCodes,
      "x-kubernetes-list-type": "set",
      items: {
        type: "integer",
        description: "An HTTP status code from 500 to 599.",
        minimum: 500,
        maximum: 599,
      },
    },
    conditions: {
      type: "array",
      description:
        "The conditions to retry on, each once, at most 9: 5xx (any 5xx response), GatewayError (502, 503, 504), Reset (the backend reset the stream), ConnectFailure (no connection to the backend), and the gRPC statuses Cancelled, DeadlineExceeded, Internal, ResourceExhausted and Unavailable (the ones proxyless gRPC clients retry on; Envoy reads them from grpc-status).",
      maxItems: LIMITS.retryConditions,
      "x-kubernetes-list-type": "set",
      items: {
        type: "string",
        description:
          "One of 5xx, GatewayError, Reset, ConnectFailure, Cancelled, DeadlineExceeded, Internal, ResourceExhausted, Unavailable.",
        enum: RETRY_CONDITIONS,
      },
    },
    backoff: duration(
      "The base interval between attempts, more than 0s (the data plane backs off exponentially from it, with jitter, up to 10 times it). Absent: 25ms.",
    ),
  },
};

export const specV2Schema: Schema = {
  type: "object",
  description:
    "The desired route, shaped like the Gateway API's HTTPRoute: which hosts it is for, and rules that send requests matching a path (and headers) to weighted Service backends in the route's namespace, optionally over TLS. When two routes claim the same host and match (path and headers), the older (by creationTimestamp, then namespace/name) keeps it: the newer is Accepted=False/Conflicted when all it claims is taken, or Accepted=True with its message naming the matches it lost.",
  required: ["rules"],
  // What the webhook says too, so that a cluster without it (or a dry run that
  // skips it) refuses the same: TLS needs the hosts it is for.
  "x-kubernetes-validations": [
    {
      rule: "!has(self.tls) || (has(self.hostnames) && size(self.hostnames) > 0)",
      // Worded as the webhook words it: "spec.tls: Forbidden: needs spec.hostnames: ...".
      message: "needs spec.hostnames: a route for any host (no hostnames) cannot have TLS",
      fieldPath: ".tls",
      reason: "FieldValueForbidden",
    },
    {
      // Without hostnames the rule above speaks, once.
      rule: "!has(self.tls) || !has(self.tls.hostnames) || !has(self.hostnames) || size(self.hostnames) == 0 || self.tls.hostnames.all(h, h in self.hostnames)",
      message: "each must be one of spec.hostnames",
      fieldPath: ".tls.hostnames",
    },
    {
      // v1 shows a route as one Service: a route that only redirects has none to show.
      rule: "self.rules.exists(r, size(r.backends) > 0)",
      message: FILTER_MESSAGES.noRuleWithBackends,
      fieldPath: ".rules",
      reason: "FieldValueRequired",
    },
  ],
  properties: {
    hostnames: {
      type: "array",
      description:
        "The hosts the route is for, matched against the request's Host header (or :authority) without its port; a request matches if its host is any of them. Empty or absent: any host (and then the route cannot have tls). At most 16. An exact host wins over a wildcard that also covers it.",
      maxItems: LIMITS.hostnames,
      items: hostname,
    },
    rules: {
      type: "array",
      description:
        "What to do with the route's requests, 1 to 16 rules. A request takes the rule with the most specific match across all routes for its host: Exact paths before prefixes, longer prefixes first, then more header matches, then the older route.",
      minItems: 1,
      maxItems: LIMITS.rules,
      items: {
        type: "object",
        description:
          "A rule: requests that satisfy any of its matches pass through its filters and go to its backends, split by weight, within its timeouts and with its retries; or a RequestRedirect filter answers them.",
        required: ["matches", "backends"],
        properties: {
          matches: {
            type: "array",
            description:
              "The requests this rule takes: a request matches the rule if it satisfies any one of these, 1 to 8.",
            minItems: 1,
            maxItems: LIMITS.matches,
            items: {
              type: "object",
              description:
                "A path, and optionally headers, query parameters and a method; a request must satisfy all of them.",
              required: ["path"],
              properties: {
                path: pathMatch,
                headers: {
                  type: "array",
                  description:
                    "Headers the request must carry, each with a matching value; all must match. Absent: headers do not matter. At most 16.",
                  maxItems: LIMITS.headers,
                  items: headerMatch,
                },
                queryParams: {
                  type: "array",
                  description:
                    "Query parameters the request's URL must carry, each with a matching value; all must match. Absent: the query does not matter. At most 16, each name once.",
                  maxItems: LIMITS.queryParams,
                  "x-kubernetes-list-type": "map",
                  "x-kubernetes-list-map-keys": ["name"],
                  items: queryParamMatch,
                },
                method: {
                  type: "string",
                  description:
                    "The request's HTTP method: GET, HEAD, POST, PUT, DELETE, CONNECT, OPTIONS, TRACE or PATCH. Absent: any method.",
                  enum: HTTP_METHODS,
                },
              },
            },
          },
          backends: {
            type: "array",
            description:
              "Where the rule's requests go: ports of Services in the route's namespace, at most 8, sharing the traffic by weight. At least one, and at least one with a weight above 0, unless a RequestRedirect filter answers the rule's requests: then none.",
            maxItems: LIMITS.backends,
            items: backend,
            "x-kubernetes-validations": [
              {
                rule: "size(self) == 0 || self.exists(b, !has(b.weight) || b.weight > 0)",
                message: "at least one backend must have a weight above 0",
              },
            ],
          },
          timeout: {
            type: "string",
            description:
              "How long a request may take until its response is complete (Envoy's route timeout; a proxyless gRPC client's call deadline): a Gateway API duration of 1 to 4 parts with the units h, m, s and ms (15s, 1m30s, 500ms), at most 1h. Absent: the data plane's own default (15 s in Envoy; none for gRPC clients). timeouts.request says the same; set both only to the same value.",
            pattern: DURATION_PATTERN,
          },
          filters: {
            type: "array",
            description:
              "What happens to the rule's requests on the way (Gateway API's filters), at most 16, applied in order: header edits, a redirect, a URL rewrite, mirrors. RequestHeaderModifier, ResponseHeaderModifier, RequestRedirect and URLRewrite each at most once; a RequestRedirect neither with a URLRewrite nor with backends.",
            maxItems: LIMITS.filters,
            items: filter,
          },
          timeouts,
          retry,
        },
        "x-kubernetes-validations": [
          {
            rule: "size(self.backends) > 0 || (has(self.filters) && self.filters.exists(f, f.type == 'RequestRedirect'))",
            message: FILTER_MESSAGES.noBackends,
            fieldPath: ".backends",
            reason: "FieldValueRequired",
          },
          {
            rule: "size(self.backends) == 0 || !has(self.filters) || !self.filters.exists(f, f.type == 'RequestRedirect')",
            message: FILTER_MESSAGES.redirectWithBackends,
            fieldPath: ".backends",
            reason: "FieldValueForbidden",
          },
          {
            rule: `!has(self.filters) || [${SINGLE_FILTER_TYPES.map((t) => `'${t}'`).join(", ")}].all(t, self.filters.filter(f, f.type == t).size() <= 1)`,
            message: FILTER_MESSAGES.once,
            fieldPath: ".filters",
          },
          {
            rule: "!has(self.filters) || !self.filters.exists(f, f.type == 'RequestRedirect') || !self.filters.exists(f, f.type == 'URLRewrite')",
            message: FILTER_MESSAGES.redirectAndRewrite,
            fieldPath: ".filters",
            reason: "FieldValueForbidden",
          },
          {
            rule: "!has(self.filters) || !self.filters.exists(f, (has(f.requestRedirect) && has(f.requestRedirect.path) && f.requestRedirect.path.type == 'ReplacePrefixMatch') || (has(f.urlRewrite) && has(f.urlRewrite.path) && f.urlRewrite.path.type == 'ReplacePrefixMatch')) || self.matches.all(m, !has(m.path.type) || m.path.type == 'PathPrefix')",
            message: FILTER_MESSAGES.prefixOnly,
            fieldPath: ".filters",
          },
          {
            rule: "!has(self.timeout) || !has(self.timeouts) || !has(self.timeouts.request) || duration(self.timeout) == duration(self.timeouts.request)",
            message: FILTER_MESSAGES.timeoutTwice,
            fieldPath: ".timeouts.request",
          },
          {
            rule: "!has(self.timeout) || !has(self.timeouts) || !has(self.timeouts.backendRequest) || duration(self.timeout) == duration('0s') || duration(self.timeouts.backendRequest) <= duration(self.timeout)",
            message: FILTER_MESSAGES.backendRequestOverTimeout,
            fieldPath: ".timeouts.backendRequest",
          },
        ],
      },
    },
    tls,
  },
};

const CONDITION_TYPES =
  "Accepted: the route is valid, its backends exist and it holds its host and matches (True/Valid; False/ServiceNotFound, Conflicted, Invalid, HostFull, Rejected: a data-plane client refused what it adds, so it is held back until its spec changes). Programmed: the data plane serves the route as it is now (True/Synced only once the data plane took the push; False/Pending, PushFailed, Rejected with the client's words, NoDataPlane, SnapshotTooLarge, DeprogramStuck). ResolvedRefs, on a route with spec.tls: its Secret exists and holds a valid certificate for the hosts (True/ResolvedRefs; False/SecretNotFound, InvalidCertificate).";

export const statusSchema: Schema = {
  type: "object",
  description:
    "What the operator last saw of the route, written by it alone (the status subresource): whether it accepted the route and whether the data plane serves it. Compare observedGeneration with metadata.generation to know if it reflects the latest spec.",
  properties: {
    observedGeneration: {
      type: "integer",
      description:
        "The metadata.generation of the spec this status was computed from. Lower than metadata.generation: the operator has not yet reconciled the latest change.",
      minimum: 0,
    },
    conditions: {
      type: "array",
      description: `The route's state as metav1.Conditions, at most one of each type, at most 8. ${CONDITION_TYPES}`,
      maxItems: 8,
      "x-kubernetes-list-type": "map",
      "x-kubernetes-list-map-keys": ["type"],
      items: {
        type: "object",
        description: "One aspect of the route's state (metav1.Condition).",
        required: ["type", "status", "reason", "message", "lastTransitionTime"],
        properties: {
          type: {
            type: "string",
            description: `The condition's type, in CamelCase (or example.com/CamelCase): one of Accepted, Programmed, ResolvedRefs. ${CONDITION_TYPES}`,
            maxLength: 316,
            pattern:
              "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
          },
          status: {
            type: "string",
            description: "True, False or Unknown: whether the condition holds now.",
            enum: ["True", "False", "Unknown"],
          },
          reason: {
            type: "string",
            description:
              "Why the condition has its status, as one CamelCase word a program can test (Valid, Conflicted, Synced, Pending, ...: see conditions).",
            minLength: 1,
            maxLength: 1024,
            pattern: "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
          },
          message: {
            type: "string",
            description:
              "Details for a person: which Service is missing, which route holds the host, what the data-plane client answered. May be empty; at most 32768 characters.",
            maxLength: 32768,
          },
          observedGeneration: {
            type: "integer",
            description:
              "The metadata.generation of the spec this condition was computed from; lower than metadata.generation: the condition may be out of date.",
            minimum: 0,
          },
          lastTransitionTime: {
            type: "string",
            description:
              "When status last changed (RFC 3339); it does not move when only reason or message change.",
            format: "date-time",
          },
        },
      },
    },
  },
};

export const specSchemas = { v1: specV1Schema, v2: specV2Schema } as const;

/** What an EdgeRoute is, in one sentence: the CRD's top-level description, and the chart's Artifact Hub entry. */
export const EDGE_ROUTE_DESCRIPTION =
  "EdgeRoute routes requests for a host and path to Services in its namespace, through the operator's Envoy or proxyless gRPC data plane.";

/** The whole object's schema for one version, as the CRD carries it. */
export function objectSchema(version: "v1" | "v2"): Schema {
  return {
    type: "object",
    description: EDGE_ROUTE_DESCRIPTION,
    required: ["spec"],
    properties: {
      // The apiserver publishes Kubernetes' own words for apiVersion and kind
      // whatever a CRD says; they are written here as it publishes them.
      apiVersion: {
        type: "string",
        description:
          "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources",
      },
      kind: {
        type: "string",
        description:
          "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
      },
      // Nothing but its type: the apiserver refuses more on a CRD's metadata and
      // explains it with ObjectMeta's own descriptions.
      metadata: { type: "object" },
      spec: specSchemas[version],
      status: statusSchema,
    },
  };
}
