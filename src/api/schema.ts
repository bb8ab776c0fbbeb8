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
  description: "A DNS-1123 subdomain, or a wildcard with one leading label (*.example.com).",
  maxLength: LIMITS.hostLength,
  pattern: HOSTNAME_PATTERN,
};
const path: Schema = {
  type: "string",
  description: "An absolute path: starts with '/'.",
  minLength: 1,
  maxLength: LIMITS.pathLength,
  pattern: "^/",
};
const serviceName: Schema = {
  type: "string",
  description: "A Service in the route's namespace.",
  minLength: 1,
  maxLength: LIMITS.nameLength,
  pattern: DNS1035_LABEL_PATTERN,
};
const port: Schema = { type: "integer", minimum: 1, maximum: 65535 };

const tls: Schema = {
  type: "object",
  description:
    "Terminates HTTPS for some or all of spec.hostnames with the certificate of one Secret. Needs spec.hostnames: a route for any host (no hostnames) cannot have TLS. Plain HTTP to these hosts is redirected to https with a 301 unless plainHTTP is Allow.",
  required: ["secretName"],
  properties: {
    secretName: {
      type: "string",
      description:
        "The Secret with the certificate and key (tls.crt, tls.key): of type kubernetes.io/tls, in the route's namespace. Until it exists and holds a valid certificate for the hosts, the route reports ResolvedRefs=False and those hosts are not served over HTTPS.",
      minLength: 1,
      maxLength: LIMITS.secretNameLength,
      pattern: DNS1123_SUBDOMAIN_PATTERN,
    },
    hostnames: {
      type: "array",
      description:
        "The hosts served over HTTPS, each one of spec.hostnames as written there. Defaults to all of spec.hostnames.",
      minItems: 1,
      maxItems: LIMITS.hostnames,
      "x-kubernetes-list-type": "set",
      // A copy: one object in two places would be a YAML anchor in the chart's CRD.
      items: { ...hostname },
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
  description: "v1: one host and path prefix routed to one Service port.",
  required: ["pathPrefix", "service", "port"],
  properties: {
    host: { ...hostname, description: "The host to match; absent means any host." },
    pathPrefix: { ...path, description: "The path prefix to match, on whole segments." },
    service: serviceName,
    port: { ...port, description: "The Service port." },
    timeoutSeconds: {
      type: "integer",
      description: "The request timeout in seconds.",
      minimum: 1,
      maximum: LIMITS.maxTimeoutSeconds,
    },
  },
};

export const specV2Schema: Schema = {
  type: "object",
  description: "v2: shaped like the Gateway API's HTTPRoute.",
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
      description: "The hosts to match; empty means any host.",
      maxItems: LIMITS.hostnames,
      items: hostname,
    },
    rules: {
      type: "array",
      minItems: 1,
      maxItems: LIMITS.rules,
      items: {
        type: "object",
        required: ["matches", "backends"],
        properties: {
          matches: {
            type: "array",
            minItems: 1,
            maxItems: LIMITS.matches,
            items: {
              type: "object",
              required: ["path"],
              properties: {
                path: {
                  type: "object",
                  required: ["value"],
                  properties: {
                    type: {
                      type: "string",
                      enum: ["PathPrefix", "Exact"],
                      description: "Defaults to PathPrefix.",
                      // The apiserver applies it, so no webhook call is needed for it.
                      default: "PathPrefix",
                    },
                    value: path,
                  },
                },
                headers: {
                  type: "array",
                  description: "Exact header matches; all must match.",
                  maxItems: LIMITS.headers,
                  items: {
                    type: "object",
                    required: ["name", "value"],
                    properties: {
                      name: {
                        type: "string",
                        minLength: 1,
                        maxLength: LIMITS.headerNameLength,
                        pattern: HEADER_NAME_PATTERN,
                      },
                      value: { type: "string", maxLength: LIMITS.headerValueLength },
                    },
                  },
                },
              },
            },
          },
          backends: {
            type: "array",
            description: "Services in the route's namespace, sharing traffic by weight.",
            minItems: 1,
            maxItems: LIMITS.backends,
            items: {
              type: "object",
              required: ["name", "port"],
              properties: {
                name: serviceName,
                port,
                weight: {
                  type: "integer",
                  description: "Share of traffic; defaults to 1.",
                  default: 1,
                  minimum: 0,
                  maximum: LIMITS.maxWeight,
                },
              },
            },
            "x-kubernetes-validations": [
              {
                rule: "self.exists(b, !has(b.weight) || b.weight > 0)",
                message: "at least one backend must have a weight above 0",
              },
            ],
          },
          timeout: {
            type: "string",
            description: "A Gateway API duration (15s, 1m30s), at most 1h.",
            pattern: DURATION_PATTERN,
          },
        },
      },
    },
    tls,
  },
};

export const statusSchema: Schema = {
  type: "object",
  properties: {
    observedGeneration: { type: "integer", minimum: 0 },
    conditions: {
      type: "array",
      maxItems: 8,
      "x-kubernetes-list-type": "map",
      "x-kubernetes-list-map-keys": ["type"],
      items: {
        type: "object",
        required: ["type", "status", "reason", "message", "lastTransitionTime"],
        properties: {
          type: {
            type: "string",
            maxLength: 316,
            pattern:
              "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
          },
          status: { type: "string", enum: ["True", "False", "Unknown"] },
          reason: {
            type: "string",
            minLength: 1,
            maxLength: 1024,
            pattern: "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
          },
          message: { type: "string", maxLength: 32768 },
          observedGeneration: { type: "integer", minimum: 0 },
          lastTransitionTime: { type: "string", format: "date-time" },
        },
      },
    },
  },
};

export const specSchemas = { v1: specV1Schema, v2: specV2Schema } as const;

/** The whole object's schema for one version, as the CRD carries it. */
export function objectSchema(version: "v1" | "v2"): Schema {
  return {
    type: "object",
    description: "EdgeRoute routes a host and path to a Service through the Envoy data plane.",
    required: ["spec"],
    properties: {
      apiVersion: { type: "string" },
      kind: { type: "string" },
      metadata: { type: "object" },
      spec: specSchemas[version],
      status: statusSchema,
    },
  };
}
