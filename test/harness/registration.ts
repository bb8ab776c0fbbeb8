// The test control plane's registrations: one MutatingWebhookConfiguration
// and one ValidatingWebhookConfiguration for edgeroutes.net.10xdev.io (each
// with a webhook for creates and one for updates) and (webhook.finalizerPolicy,
// in a cluster by default) the MutatingAdmissionPolicy that adds the finalizer
// on create inside the apiserver. What they say comes from
// src/api/webhook-registration.ts, as the chart's does (npm run gen); this file
// adds only where they are installed: the client, names, selectors, labels.
// test/integration/chart.test.ts compares the chart's against these.

import {
  FINALIZER_POLICY,
  MUTATING_WEBHOOK,
  VALIDATING_WEBHOOK,
  WEBHOOK_TIMEOUT_SECONDS,
  operatorMatchConditions,
  registrationName,
  type AdmissionEntry,
  type AdmissionPath,
  type AdmissionWebhook,
  type MatchCondition,
} from "../../src/api/webhook-registration.js";

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
  /** The finalizer policy is installed too (finalizerPolicy below): /mutate's create webhook then has a match condition. */
  finalizerPolicy?: boolean;
}

export interface ClientConfig {
  url?: string;
  service?: { name: string; namespace: string; path: string; port?: number };
  caBundle?: string;
}

/** A rule the caller may change (bench/write-path.bench.ts retargets the group): a copy of the source's. */
export interface Rule {
  apiGroups: string[];
  apiVersions: string[];
  operations: ("CREATE" | "UPDATE")[];
  resources: string[];
  scope: "Namespaced";
}

export interface Webhook {
  name: string;
  clientConfig: ClientConfig;
  rules: Rule[];
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

export function clientConfig(client: WebhookClient, path: AdmissionPath): ClientConfig {
  const ca = client.caBundle ? { caBundle: client.caBundle } : {};
  if ("url" in client) return { url: `${client.url.replace(/\/+$/, "")}${path}`, ...ca };
  const { name, namespace, port } = client.service;
  return { service: { name, namespace, path, ...(port !== undefined ? { port } : {}) }, ...ca };
}

function webhook(hook: AdmissionWebhook, entry: AdmissionEntry, opts: RegistrationOptions): Webhook {
  const own = entry.operatorCondition ? operatorMatchConditions(opts.operatorUsers ?? []) : [];
  const conditions = [
    ...own,
    ...((opts.finalizerPolicy ? entry.withFinalizerPolicy : undefined) ?? entry.matchConditions),
  ];
  return {
    name: entry.name,
    clientConfig: clientConfig(opts.client, hook.path),
    rules: entry.rules.map((r) => ({
      apiGroups: [...r.apiGroups],
      apiVersions: [...r.apiVersions],
      operations: [...r.operations],
      resources: [...r.resources],
      scope: r.scope,
    })),
    matchPolicy: hook.matchPolicy,
    failurePolicy: hook.failurePolicy,
    sideEffects: hook.sideEffects,
    timeoutSeconds: WEBHOOK_TIMEOUT_SECONDS,
    admissionReviewVersions: [...hook.admissionReviewVersions],
    ...(opts.namespaceSelector ? { namespaceSelector: opts.namespaceSelector } : {}),
    ...(conditions.length ? { matchConditions: conditions } : {}),
    ...(hook.reinvocationPolicy ? { reinvocationPolicy: hook.reinvocationPolicy } : {}),
  };
}

function metadata(name: string, opts: RegistrationOptions): WebhookConfiguration<string>["metadata"] {
  return {
    name,
    ...(opts.labels ? { labels: opts.labels } : {}),
    ...(opts.annotations ? { annotations: opts.annotations } : {}),
  };
}

function configuration<K extends AdmissionWebhook["kind"]>(
  hook: AdmissionWebhook & { readonly kind: K },
  opts: RegistrationOptions,
): WebhookConfiguration<K> {
  return {
    apiVersion: "admissionregistration.k8s.io/v1",
    kind: hook.kind,
    metadata: metadata(registrationName(opts.name ?? DEFAULT_REGISTRATION_NAME, hook.suffix), opts),
    webhooks: hook.entries.map((entry) => webhook(hook, entry, opts)),
  };
}

export function mutatingWebhookConfiguration(
  opts: RegistrationOptions,
): WebhookConfiguration<"MutatingWebhookConfiguration"> {
  return configuration({ ...MUTATING_WEBHOOK, kind: "MutatingWebhookConfiguration" }, opts);
}

export function validatingWebhookConfiguration(
  opts: RegistrationOptions,
): WebhookConfiguration<"ValidatingWebhookConfiguration"> {
  return configuration({ ...VALIDATING_WEBHOOK, kind: "ValidatingWebhookConfiguration" }, opts);
}

export interface AdmissionPolicy<K extends string, S> {
  apiVersion: "admissionregistration.k8s.io/v1";
  kind: K;
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: S;
}

export interface FinalizerPolicySpec {
  matchConstraints: {
    resourceRules: typeof FINALIZER_POLICY.resourceRules;
    matchPolicy: typeof FINALIZER_POLICY.matchPolicy;
    namespaceSelector?: LabelSelector;
  };
  failurePolicy: typeof FINALIZER_POLICY.failurePolicy;
  reinvocationPolicy: typeof FINALIZER_POLICY.reinvocationPolicy;
  mutations: typeof FINALIZER_POLICY.mutations;
}

/** The finalizer policy (FINALIZER_POLICY in src/api/webhook-registration.ts) and its binding. */
export function finalizerPolicy(
  opts: RegistrationOptions,
): [
  AdmissionPolicy<"MutatingAdmissionPolicy", FinalizerPolicySpec>,
  AdmissionPolicy<"MutatingAdmissionPolicyBinding", { policyName: string }>,
] {
  const name = registrationName(opts.name ?? DEFAULT_REGISTRATION_NAME, FINALIZER_POLICY.suffix);
  return [
    {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "MutatingAdmissionPolicy",
      metadata: metadata(name, opts),
      spec: {
        matchConstraints: {
          resourceRules: structuredClone(FINALIZER_POLICY.resourceRules),
          matchPolicy: FINALIZER_POLICY.matchPolicy,
          ...(opts.namespaceSelector ? { namespaceSelector: opts.namespaceSelector } : {}),
        },
        failurePolicy: FINALIZER_POLICY.failurePolicy,
        reinvocationPolicy: FINALIZER_POLICY.reinvocationPolicy,
        mutations: structuredClone(FINALIZER_POLICY.mutations),
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
