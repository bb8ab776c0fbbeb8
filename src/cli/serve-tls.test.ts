import { describe, expect, it } from "vitest";
import { parseServeArgs } from "./serve.js";
import { parseCertFlags } from "./serve-tls.js";

describe("serve's certificate flags", () => {
  it("turn --cert-secret and --inject-ca into managed certificates for the Service and the named targets", () => {
    const o = parseServeArgs([
      "--cert-secret",
      "edge-system/edge-operator-tls",
      "--cert-service",
      "edge-operator",
      "--inject-ca",
      "--webhook-config-name",
      "edge-operator",
    ]);
    if (o === "help") throw new Error("help");
    expect(o.certs).toEqual({
      secret: { namespace: "edge-system", name: "edge-operator-tls" },
      identity: { service: "edge-operator", namespace: "edge-system", dnsNames: [], ips: [] },
      inject: {
        mutatingWebhookConfigurations: ["edge-operator-mutate"],
        validatingWebhookConfigurations: ["edge-operator-validate"],
        customResourceDefinitions: ["edgeroutes.net.10xdev.io"],
      },
      renewBeforeDays: 90,
      checkIntervalMs: 3_600_000,
    });
  });

  it("are absent without --cert-secret, and then the files are required", () => {
    expect(parseCertFlags({})).toBeUndefined();
    expect(() => parseServeArgs([])).toThrow("--tls-cert and --tls-key are required (or --cert-secret)");
  });

  it.each([
    [{ "cert-secret": "no-slash" }, '--cert-secret: expected NAMESPACE/NAME, got "no-slash"'],
    [{ "inject-ca": true }, "--inject-ca needs --cert-secret"],
    [{ "cert-secret": "a/b", "crd-name": ["x"] }, "--webhook-config-name and --crd-name need --inject-ca"],
    [{ "cert-secret": "a/b", "cert-check-interval": "0" }, "--cert-check-interval must be a positive number"],
  ])("refuse %j with a clear reason", (values, message) => {
    expect(() => parseCertFlags(values)).toThrow(message);
  });
});
