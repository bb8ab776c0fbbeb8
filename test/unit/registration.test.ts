import { describe, expect, it } from "vitest";
import {
  finalizerPolicy,
  mutatingWebhookConfiguration,
  validatingWebhookConfiguration,
} from "../harness/registration.js";

describe("webhook registration", () => {
  it("registers /validate by URL with its CA, for both versions, one webhook for CREATE and one for UPDATE", () => {
    const rule = (operation: "CREATE" | "UPDATE") => ({
      apiGroups: ["net.10xdev.io"],
      apiVersions: ["v1", "v2"],
      operations: [operation],
      resources: ["edgeroutes"],
      scope: "Namespaced",
    });
    const common = {
      clientConfig: { url: "https://127.0.0.1:9443/validate", caBundle: "Q0E=" },
      matchPolicy: "Equivalent",
      failurePolicy: "Fail",
      sideEffects: "None",
      timeoutSeconds: 5,
      admissionReviewVersions: ["v1"],
    };
    expect(
      validatingWebhookConfiguration({ client: { url: "https://127.0.0.1:9443/", caBundle: "Q0E=" } }),
    ).toEqual({
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingWebhookConfiguration",
      metadata: { name: "edge-operator-validate" },
      webhooks: [
        { name: "validate.edgeroutes.net.10xdev.io", ...common, rules: [rule("CREATE")] },
        { name: "update.validate.edgeroutes.net.10xdev.io", ...common, rules: [rule("UPDATE")] },
      ],
    });
  });

  it("registers /mutate through a Service, with a namespace selector", () => {
    const config = mutatingWebhookConfiguration({
      name: "edge",
      client: { service: { name: "edge-operator", namespace: "edge-system", port: 443 } },
      namespaceSelector: { matchLabels: { edge: "on" } },
      labels: { app: "edge-operator" },
    });
    expect(config.metadata).toEqual({ name: "edge-mutate", labels: { app: "edge-operator" } });
    expect(config.webhooks[0]).toMatchObject({
      name: "mutate.edgeroutes.net.10xdev.io",
      clientConfig: {
        service: { name: "edge-operator", namespace: "edge-system", path: "/mutate", port: 443 },
      },
      namespaceSelector: { matchLabels: { edge: "on" } },
      reinvocationPolicy: "IfNeeded",
      failurePolicy: "Fail",
      sideEffects: "None",
    });
  });

  it("lets the operator's own spec-preserving updates skip both webhooks, and only those", () => {
    const operatorUsers = ["system:serviceaccount:edge-system:edge-server"];
    const client = { url: "https://127.0.0.1:9443", caBundle: "Q0E=" };
    for (const config of [
      mutatingWebhookConfiguration({ client, operatorUsers }),
      validatingWebhookConfiguration({ client, operatorUsers }),
    ]) {
      // Creates are never the operator's: their webhook evaluates no condition for it.
      expect(config.webhooks[0]?.matchConditions ?? []).not.toContainEqual(
        expect.objectContaining({ name: "not-the-operators-own-metadata-update" }),
      );
      expect(config.webhooks[1]?.matchConditions?.[0]).toEqual({
        name: "not-the-operators-own-metadata-update",
        expression:
          "!(request.operation == 'UPDATE' && request.userInfo.username in ['system:serviceaccount:edge-system:edge-server'] && object.spec == oldObject.spec)",
      });
    }
    for (const w of validatingWebhookConfiguration({ client }).webhooks)
      expect(w.matchConditions).toBeUndefined();
  });

  it("calls /mutate only for a missing finalizer or a v1 route's v2 spec annotation, on creates only with the finalizer policy", () => {
    const client = { url: "https://127.0.0.1:9443", caBundle: "Q0E=" };
    const needed = {
      name: "lacks-the-finalizer-or-carries-a-v2-spec",
      expression:
        "!has(object.metadata.finalizers) || !('net.10xdev.io/deprogram' in object.metadata.finalizers) || (object.apiVersion == 'net.10xdev.io/v1' && has(object.metadata.annotations) && 'net.10xdev.io/v2-spec' in object.metadata.annotations)",
    };
    const [create, update] = mutatingWebhookConfiguration({ client }).webhooks;
    expect(create?.rules[0]?.operations).toEqual(["CREATE"]);
    expect(create?.matchConditions).toBeUndefined();
    expect(update?.rules[0]?.operations).toEqual(["UPDATE"]);
    expect(update?.matchConditions).toEqual([needed]);
    const withPolicy = mutatingWebhookConfiguration({ client, finalizerPolicy: true }).webhooks;
    expect(withPolicy.map((w) => w.matchConditions)).toEqual([[needed], [needed]]);
  });

  it("adds the finalizer on create in the apiserver, in the webhooks' namespaces, for both versions", () => {
    const namespaceSelector = {
      matchExpressions: [
        { key: "kubernetes.io/metadata.name", operator: "NotIn" as const, values: ["kube-system"] },
      ],
    };
    const [policy, binding] = finalizerPolicy({
      client: { url: "https://127.0.0.1:9443" },
      name: "edge",
      namespaceSelector,
    });
    expect(policy.metadata.name).toBe("edge-finalizer");
    expect(binding.spec).toEqual({ policyName: "edge-finalizer" });
    expect(policy.spec.matchConstraints).toEqual({
      resourceRules: [
        {
          apiGroups: ["net.10xdev.io"],
          apiVersions: ["v1", "v2"],
          operations: ["CREATE"],
          resources: ["edgeroutes"],
          scope: "Namespaced",
        },
      ],
      matchPolicy: "Equivalent",
      namespaceSelector,
    });
    expect(policy.spec.failurePolicy).toBe("Fail");
    expect(policy.spec.mutations[0]?.jsonPatch.expression).toContain(
      "'net.10xdev.io/deprogram' in object.metadata.finalizers ? []",
    );
  });
});
