// One source for the shape of both versions: these schemas are written into the
// CRD's openAPIV3Schema (so they must stay structural: a type on every node, no
// $ref, no additionalProperties beside properties) and compiled by ajv in the
// validating webhook.

export interface Schema {
  type?: "object" | "array" | "string" | "integer" | "number" | "boolean";
  description?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  enum?: readonly string[];
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
      enum: ["PathPrefix", "Exact"],
      description:
        "PathPrefix (the default) matches whole path segments: /api matches /api, /api/ and /api/orders, never /apis, and / matches every path. Exact matches the path exactly as written, trailing slash included.",
      // The apiserver applies it, so no webhook call is needed for it.
      default: "PathPrefix",
    },
    value: {
      ...path,
      description:
        "The path or prefix to match: starts with '/', at most 1024 characters, without '?' or '#' (the query is never matched). The webhook also refuses '//', '/./', '/../', an encoded slash (%2F), whitespace and control characters. A prefix's trailing slash is ignored: /api/ means /api.",
    },
  },
};

const headerMatch: Schema = {
  type: "object",
  description: "A header the request must carry with exactly this value.",
  required: ["name", "value"],
  properties: {
    name: {
      type: "string",
      description:
        "The header's name, matched without regard to case (X-Canary and x-canary are the same header): an HTTP token of letters, digits and !#$%&'*+-.^_`|~, 1 to 256 characters.",
      minLength: 1,
      maxLength: LIMITS.headerNameLength,
      pattern: HEADER_NAME_PATTERN,
    },
    value: {
      type: "string",
      description:
        "The value the header must have, matched exactly and with regard to case, at most 4096 characters.",
      maxLength: LIMITS.headerValueLength,
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
          "A rule: requests that satisfy any of its matches go to its backends, split by weight, within its timeout.",
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
              description: "A path, and optionally headers; a request must satisfy all of them.",
              required: ["path"],
              properties: {
                path: pathMatch,
                headers: {
                  type: "array",
                  description:
                    "Headers the request must carry, each with its exact value; all must match. Absent: headers do not matter. At most 16.",
                  maxItems: LIMITS.headers,
                  items: headerMatch,
                },
              },
            },
          },
          backends: {
            type: "array",
            description:
              "Where the rule's requests go: ports of Services in the route's namespace, 1 to 8, sharing the traffic by weight. At least one must have a weight above 0.",
            minItems: 1,
            maxItems: LIMITS.backends,
            items: backend,
            "x-kubernetes-validations": [
              {
                rule: "self.exists(b, !has(b.weight) || b.weight > 0)",
                message: "at least one backend must have a weight above 0",
              },
            ],
          },
          timeout: {
            type: "string",
            description:
              "How long a request may take until its response is complete (Envoy's route timeout; a proxyless gRPC client's call deadline): a Gateway API duration of 1 to 4 parts with the units h, m, s and ms (15s, 1m30s, 500ms), at most 1h. Absent: the data plane's own default (15 s in Envoy; none for gRPC clients).",
            pattern: DURATION_PATTERN,
          },
        },
      },
    },
    tls,
  },
};

const CONDITION_TYPES =
  "Accepted: the route is valid, its backends exist and it holds its host and matches (True/Valid; False/ServiceNotFound, Conflicted, Invalid). Programmed: the data plane serves the route as it is now (True/Synced only once the data plane took the push; False/Pending, PushFailed, Rejected with the client's words, NoDataPlane, SnapshotTooLarge, DeprogramStuck). ResolvedRefs, on a route with spec.tls: its Secret exists and holds a valid certificate for the hosts (True/ResolvedRefs; False/SecretNotFound, InvalidCertificate).";

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
