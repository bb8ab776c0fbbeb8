import { describe, expect, it } from "vitest";
import {
  finalizerPolicy,
  mutatingWebhookConfiguration,
  validatingWebhookConfiguration,
} from "../harness/registration.js";

describe("webhook registration", () => {
  it("registers /validate by URL with its CA, for both versions, CREATE and UPDATE", () => {
    expect(
      validatingWebhookConfiguration({ client: { url: "https://127.0.0.1:9443/", caBundle: "Q0E=" } }),
    ).toEqual({
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingWebhookConfiguration",
      metadata: { name: "edge-operator-validate" },
      webhooks: [
        {
          name: "validate.edgeroutes.net.10xdev.io",
          clientConfig: { url: "https://127.0.0.1:9443/validate", caBundle: "Q0E=" },
          rules: [
            {
              apiGroups: ["net.10xdev.io"],
              apiVersions: ["v1", "v2"],
              operations: ["CREATE", "UPDATE"],
              resources: ["edgeroutes"],
              scope: "Namespaced",
            },
          ],
          matchPolicy: "Equivalent",
          failurePolicy: "Fail",
          sideEffects: "None",
          timeoutSeconds: 5,
          admissionReviewVersions: ["v1"],
        },
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
      expect(config.webhooks[0]?.matchConditions?.[0]).toEqual({
        name: "not-the-operators-own-metadata-update",
        expression:
          "!(request.operation == 'UPDATE' && request.userInfo.username in ['system:serviceaccount:edge-system:edge-server'] && object.spec == oldObject.spec)",
      });
    }
    expect(validatingWebhookConfiguration({ client }).webhooks[0]?.matchConditions).toBeUndefined();
  });

  it("calls /mutate only for a missing finalizer or a v1 route's v2 spec annotation", () => {
    const client = { url: "https://127.0.0.1:9443", caBundle: "Q0E=" };
    expect(mutatingWebhookConfiguration({ client }).webhooks[0]?.matchConditions).toEqual([
      {
        name: "lacks-the-finalizer-or-carries-a-v2-spec",
        expression:
          "!has(object.metadata.finalizers) || !('net.10xdev.io/deprogram' in object.metadata.finalizers) || (object.apiVersion == 'net.10xdev.io/v1' && has(object.metadata.annotations) && 'net.10xdev.io/v2-spec' in object.metadata.annotations)",
      },
    ]);
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
