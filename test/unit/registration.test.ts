import { describe, expect, it } from "vitest";
import { mutatingWebhookConfiguration, validatingWebhookConfiguration } from "../harness/registration.js";

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
});
