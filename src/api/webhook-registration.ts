// How the apiserver is told to call the operator: the admission webhooks
// (/mutate, /validate), the optional MutatingAdmissionPolicy that adds the
// finalizer on create, and the CRD's conversion webhook (/convert). One
// source, as src/api/crd.ts is for the schema: `npm run gen` writes the
// static parts into the chart (charts/edge-operator/files/webhooks.yaml, read
// by templates/webhooks.yaml and crd.yaml), and test/harness/registration.ts
// builds the test control plane's registrations from it.

import { API_VERSION_V1, FINALIZER, GROUP, PLURAL, V2_SPEC_ANNOTATION, VERSIONS } from "./types.js";

export interface MatchCondition {
  readonly name: string;
  readonly expression: string;
}

export interface RuleWithOperations {
  readonly apiGroups: readonly string[];
  readonly apiVersions: readonly string[];
  readonly operations: readonly ("CREATE" | "UPDATE")[];
  readonly resources: readonly string[];
  readonly scope: "Namespaced";
}

export type AdmissionPath = "/mutate" | "/validate";

/**
 * One webhook of a configuration, called for one operation. A create is
 * called with no match condition to evaluate: each condition makes the
 * apiserver copy the object into CEL's input for every webhook that has one
 * (about 0.14 ms of its CPU per webhook and create, BENCHMARKS.md, "Write
 * path"), and on a create none of them would skip the call.
 */
export interface AdmissionEntry {
  /** Its name inside its configuration: the apiserver's errors and metrics name it. */
  readonly name: string;
  readonly rules: readonly RuleWithOperations[];
  /** Whether the operator's own-update condition (operatorMatchConditions) comes first. */
  readonly operatorCondition: boolean;
  /** Conditions that do not depend on the installation. */
  readonly matchConditions: readonly MatchCondition[];
  /** Instead of matchConditions where the finalizer policy is installed. */
  readonly withFinalizerPolicy?: readonly MatchCondition[];
}

/** One admission webhook configuration, as much of it as does not depend on where it is installed. */
export interface AdmissionWebhook {
  readonly kind: "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration";
  /** The configuration is named `<base>-<suffix>` (the chart's fullname, or edge-operator). */
  readonly suffix: "mutate" | "validate";
  readonly path: AdmissionPath;
  /** Its webhooks: one for creates, one for updates. */
  readonly entries: readonly AdmissionEntry[];
  readonly matchPolicy: "Equivalent";
  readonly failurePolicy: "Fail";
  readonly sideEffects: "None";
  readonly admissionReviewVersions: readonly string[];
  readonly reinvocationPolicy?: "IfNeeded";
}

/** The apiserver's default is 10 s; the chart's `webhook.timeoutSeconds` starts here. */
export const WEBHOOK_TIMEOUT_SECONDS = 5;

// Both versions are listed, so a request in either is sent as it came,
// and Equivalent still catches any other route to the same objects.
function routeWrites(operation: "CREATE" | "UPDATE"): RuleWithOperations {
  return {
    apiGroups: [GROUP],
    apiVersions: [...VERSIONS],
    operations: [operation],
    resources: [PLURAL],
    scope: "Namespaced",
  };
}

export const OPERATOR_METADATA_UPDATE_CONDITION = "not-the-operators-own-metadata-update";

/**
 * The operator's own-update condition with `%s` where the quoted, comma-separated
 * user list goes: the chart fills it in with printf, operatorMatchConditions here.
 */
export const OPERATOR_METADATA_UPDATE_FORMAT =
  "!(request.operation == 'UPDATE' && request.userInfo.username in [%s] && object.spec == oldObject.spec)";

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
      expression: OPERATOR_METADATA_UPDATE_FORMAT.replace("%s", list),
    },
  ];
}

/**
 * /mutate is called only when it has something to do: the finalizer is
 * missing (an update that dropped it; a create, unless the finalizer policy
 * added it), or a v1 object carries the v2 spec annotation (kept fresh on
 * edit). Its create webhook carries this only where the policy is
 * installed. The v2 defaults are the CRD schema's, applied by the apiserver
 * before any webhook. Every other call would answer "no patch" and cost a
 * round trip.
 */
export const MUTATE_NEEDED_CONDITION: MatchCondition = {
  name: "lacks-the-finalizer-or-carries-a-v2-spec",
  expression:
    `!has(object.metadata.finalizers) || !('${FINALIZER}' in object.metadata.finalizers)` +
    ` || (object.apiVersion == '${API_VERSION_V1}' && has(object.metadata.annotations)` +
    ` && '${V2_SPEC_ANNOTATION}' in object.metadata.annotations)`,
};

const ADMISSION_COMMON = {
  matchPolicy: "Equivalent",
  failurePolicy: "Fail",
  sideEffects: "None",
  admissionReviewVersions: ["v1"],
} as const;

export const MUTATING_WEBHOOK: AdmissionWebhook = {
  kind: "MutatingWebhookConfiguration",
  suffix: "mutate",
  path: "/mutate",
  entries: [
    {
      // Without the finalizer policy a create lacks the finalizer (the rare
      // create that brings it is answered with no patch).
      name: `mutate.${PLURAL}.${GROUP}`,
      rules: [routeWrites("CREATE")],
      operatorCondition: false,
      matchConditions: [],
      withFinalizerPolicy: [MUTATE_NEEDED_CONDITION],
    },
    {
      name: `update.mutate.${PLURAL}.${GROUP}`,
      rules: [routeWrites("UPDATE")],
      operatorCondition: true,
      matchConditions: [MUTATE_NEEDED_CONDITION],
    },
  ],
  ...ADMISSION_COMMON,
  // mutate is idempotent, so a second call after another webhook's change is safe.
  reinvocationPolicy: "IfNeeded",
};

export const VALIDATING_WEBHOOK: AdmissionWebhook = {
  kind: "ValidatingWebhookConfiguration",
  suffix: "validate",
  path: "/validate",
  entries: [
    {
      name: `validate.${PLURAL}.${GROUP}`,
      rules: [routeWrites("CREATE")],
      operatorCondition: false,
      matchConditions: [],
    },
    {
      name: `update.validate.${PLURAL}.${GROUP}`,
      rules: [routeWrites("UPDATE")],
      operatorCondition: true,
      matchConditions: [],
    },
  ],
  ...ADMISSION_COMMON,
};

export const ADMISSION_WEBHOOKS: readonly AdmissionWebhook[] = [MUTATING_WEBHOOK, VALIDATING_WEBHOOK];

/** `<base>-mutate`, `<base>-validate`, `<base>-finalizer`: what the CA injector and the chart name them. */
export function registrationName(base: string, suffix: AdmissionWebhook["suffix"] | "finalizer"): string {
  return `${base}-${suffix}`;
}

/**
 * The finalizer on create, added by the apiserver itself (CEL, no webhook
 * call): a MutatingAdmissionPolicy runs before the mutating webhooks, so the
 * webhook's match condition then finds the finalizer and skips the call. The
 * rest of /mutate's work (updates that drop the finalizer, the v1 spec
 * annotation) stays with the webhook, which also adds the finalizer on any
 * cluster without the policy. Its binding is named as the policy.
 */
export const FINALIZER_POLICY = {
  suffix: "finalizer",
  resourceRules: [routeWrites("CREATE")],
  matchPolicy: "Equivalent",
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
} as const;

/** The CRD's conversion webhook (buildCrd in crd.ts, the chart's crd.yaml). */
export const CONVERSION_WEBHOOK = {
  strategy: "Webhook",
  path: "/convert",
  conversionReviewVersions: ["v1"],
} as const;
