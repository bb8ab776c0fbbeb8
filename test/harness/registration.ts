// How the apiserver is told to call /mutate and /validate: one
// MutatingWebhookConfiguration and one ValidatingWebhookConfiguration for
// edgeroutes.net.10xdev.io, and (opt-in, webhook.finalizerPolicy) the
// MutatingAdmissionPolicy that adds the finalizer on create inside the
// apiserver. The chart renders the same objects; its tests compare against
// these builders.

import {
  API_VERSION_V1,
  FINALIZER,
  GROUP,
  PLURAL,
  V2_SPEC_ANNOTATION,
  VERSIONS,
} from "../../src/api/types.js";

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
  /**
   * The operator's own users (its server's ServiceAccount, as
   * `system:serviceaccount:NS:NAME`): their updates that leave the spec as it
   * was (finalizer release, its annotation) skip both webhooks, so that a
   * finalizer can be released while the server is down.
   */
  operatorUsers?: readonly string[];
}

export interface MatchCondition {
  name: string;
  expression: string;
}

export const OPERATOR_METADATA_UPDATE_CONDITION = "not-the-operators-own-metadata-update";

/**
 * The webhook is called unless the request is an UPDATE by one of `users` that
 * leaves the spec unchanged. Admission has nothing to say about such an
 * update (mutate acts on create and on the spec; validate checks the spec),
 * and with failurePolicy Fail and the server down, calling it would hold
 * every finalizer for as long as the server is down.
 */
export function operatorMatchConditions(users: readonly string[]): MatchCondition[] {
  if (users.length === 0) return [];
  const list = users.map((u) => `'${u.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`).join(", ");
  return [
    {
      name: OPERATOR_METADATA_UPDATE_CONDITION,
      expression: `!(request.operation == 'UPDATE' && request.userInfo.username in [${list}] && object.spec == oldObject.spec)`,
    },
  ];
}

/**
 * /mutate is called only when it has something to do: the finalizer is
 * missing (a create where the finalizer policy is not installed, an update
 * that dropped it), or a v1 object carries the v2 spec annotation (kept fresh
 * on edit). The v2 defaults are the CRD schema's, applied by the apiserver
 * before any webhook. Every other call would answer "no patch" and cost a
 * round trip.
 */
export function mutateNeededCondition(): MatchCondition {
  return {
    name: "lacks-the-finalizer-or-carries-a-v2-spec",
    expression:
      `!has(object.metadata.finalizers) || !('${FINALIZER}' in object.metadata.finalizers)` +
      ` || (object.apiVersion == '${API_VERSION_V1}' && has(object.metadata.annotations)` +
      ` && '${V2_SPEC_ANNOTATION}' in object.metadata.annotations)`,
  };
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
  matchConditions?: MatchCondition[];
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
  const conditions = [
    ...operatorMatchConditions(opts.operatorUsers ?? []),
    ...(path === "/mutate" ? [mutateNeededCondition()] : []),
  ];
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
    ...(conditions.length ? { matchConditions: conditions } : {}),
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

export interface AdmissionPolicy<K extends string, S> {
  apiVersion: "admissionregistration.k8s.io/v1";
  kind: K;
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: S;
}

export interface FinalizerPolicySpec {
  matchConstraints: {
    resourceRules: (Omit<RuleWithOperations, "operations"> & { operations: "CREATE"[] })[];
    matchPolicy: "Equivalent";
    namespaceSelector?: LabelSelector;
  };
  failurePolicy: "Fail";
  reinvocationPolicy: "Never";
  mutations: { patchType: "JSONPatch"; jsonPatch: { expression: string } }[];
}

/**
 * The finalizer on create, added by the apiserver itself (CEL, no webhook
 * call): a MutatingAdmissionPolicy runs before the mutating webhooks, so the
 * webhook's match condition then finds the finalizer and skips the call. The
 * rest of /mutate's work (updates that drop the finalizer, the v1 spec
 * annotation) stays with the webhook, which also adds the finalizer on any
 * cluster without the policy.
 */
export function finalizerPolicy(
  opts: RegistrationOptions,
): [
  AdmissionPolicy<"MutatingAdmissionPolicy", FinalizerPolicySpec>,
  AdmissionPolicy<"MutatingAdmissionPolicyBinding", { policyName: string }>,
] {
  const name = `${opts.name ?? DEFAULT_REGISTRATION_NAME}-finalizer`;
  return [
    {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "MutatingAdmissionPolicy",
      metadata: metadata(name, opts),
      spec: {
        matchConstraints: {
          resourceRules: [
            {
              apiGroups: [GROUP],
              apiVersions: [...VERSIONS],
              operations: ["CREATE"],
              resources: [PLURAL],
              scope: "Namespaced",
            },
          ],
          matchPolicy: "Equivalent",
          ...(opts.namespaceSelector ? { namespaceSelector: opts.namespaceSelector } : {}),
        },
        failurePolicy: "Fail",
        reinvocationPolicy: "Never",
        mutations: [
          {
            patchType: "JSONPatch",
            jsonPatch: {
              // One expression, no match condition: each CEL evaluation copies the object.
              expression:
                `!has(object.metadata.finalizers)` +
                ` ? [JSONPatch{op: "add", path: "/metadata/finalizers", value: ["${FINALIZER}"]}]` +
                ` : '${FINALIZER}' in object.metadata.finalizers ? []` +
                ` : [JSONPatch{op: "add", path: "/metadata/finalizers/-", value: "${FINALIZER}"}]`,
            },
          },
        ],
      },
    },
    {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "MutatingAdmissionPolicyBinding",
      metadata: metadata(name, opts),
      spec: { policyName: name },
    },
  ];
}
