// How the apiserver is told to call /mutate and /validate: one
// MutatingWebhookConfiguration and one ValidatingWebhookConfiguration for
// edgeroutes.net.10xdev.io. The chart renders the same objects; its tests
// compare against these builders.

import { GROUP, PLURAL, VERSIONS } from "../../src/api/types.js";

export const MUTATING_WEBHOOK_NAME = `mutate.${PLURAL}.${GROUP}`;
export const VALIDATING_WEBHOOK_NAME = `validate.${PLURAL}.${GROUP}`;

/** Where the apiserver reaches the server: a URL (out of cluster) or a Service. */
export type WebhookClient =
  | { readonly url: string; readonly caBundle?: string }
  | {
      readonly service: { readonly name: string; readonly namespace: string; readonly port?: number };
      readonly caBundle?: string;
    };

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: {
    key: string;
    operator: "In" | "NotIn" | "Exists" | "DoesNotExist";
    values?: string[];
  }[];
}

export interface RegistrationOptions {
  client: WebhookClient;
  /** metadata.name of both configurations is `${name}-mutate` / `${name}-validate`. */
  name?: string;
  namespaceSelector?: LabelSelector;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export interface ClientConfig {
  url?: string;
  service?: { name: string; namespace: string; path: string; port?: number };
  caBundle?: string;
}

export interface RuleWithOperations {
  apiGroups: string[];
  apiVersions: string[];
  operations: ("CREATE" | "UPDATE")[];
  resources: string[];
  scope: "Namespaced";
}

export interface Webhook {
  name: string;
  clientConfig: ClientConfig;
  rules: RuleWithOperations[];
  matchPolicy: "Equivalent";
  failurePolicy: "Fail";
  sideEffects: "None";
  timeoutSeconds: number;
  admissionReviewVersions: string[];
  namespaceSelector?: LabelSelector;
  reinvocationPolicy?: "IfNeeded";
}

export interface WebhookConfiguration<K extends string> {
  apiVersion: "admissionregistration.k8s.io/v1";
  kind: K;
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  webhooks: Webhook[];
}

export const DEFAULT_REGISTRATION_NAME = "edge-operator";

export function clientConfig(client: WebhookClient, path: "/mutate" | "/validate"): ClientConfig {
  const ca = client.caBundle ? { caBundle: client.caBundle } : {};
  if ("url" in client) return { url: `${client.url.replace(/\/+$/, "")}${path}`, ...ca };
  const { name, namespace, port } = client.service;
  return { service: { name, namespace, path, ...(port !== undefined ? { port } : {}) }, ...ca };
}

function webhook(name: string, path: "/mutate" | "/validate", opts: RegistrationOptions): Webhook {
  return {
    name,
    clientConfig: clientConfig(opts.client, path),
    // Both versions are listed, so a request in either is sent as it came,
    // and Equivalent still catches any other route to the same objects.
    rules: [
      {
        apiGroups: [GROUP],
        apiVersions: [...VERSIONS],
        operations: ["CREATE", "UPDATE"],
        resources: [PLURAL],
        scope: "Namespaced",
      },
    ],
    matchPolicy: "Equivalent",
    failurePolicy: "Fail",
    sideEffects: "None",
    timeoutSeconds: 5,
    admissionReviewVersions: ["v1"],
    ...(opts.namespaceSelector ? { namespaceSelector: opts.namespaceSelector } : {}),
  };
}

function metadata(name: string, opts: RegistrationOptions): WebhookConfiguration<string>["metadata"] {
  return {
    name,
    ...(opts.labels ? { labels: opts.labels } : {}),
    ...(opts.annotations ? { annotations: opts.annotations } : {}),
  };
}

export function mutatingWebhookConfiguration(
  opts: RegistrationOptions,
): WebhookConfiguration<"MutatingWebhookConfiguration"> {
  return {
    apiVersion: "admissionregistration.k8s.io/v1",
    kind: "MutatingWebhookConfiguration",
    metadata: metadata(`${opts.name ?? DEFAULT_REGISTRATION_NAME}-mutate`, opts),
    // mutate is idempotent, so a second call after another webhook's change is safe.
    webhooks: [{ ...webhook(MUTATING_WEBHOOK_NAME, "/mutate", opts), reinvocationPolicy: "IfNeeded" }],
  };
}

export function validatingWebhookConfiguration(
  opts: RegistrationOptions,
): WebhookConfiguration<"ValidatingWebhookConfiguration"> {
  return {
    apiVersion: "admissionregistration.k8s.io/v1",
    kind: "ValidatingWebhookConfiguration",
    metadata: metadata(`${opts.name ?? DEFAULT_REGISTRATION_NAME}-validate`, opts),
    webhooks: [webhook(VALIDATING_WEBHOOK_NAME, "/validate", opts)],
  };
}
