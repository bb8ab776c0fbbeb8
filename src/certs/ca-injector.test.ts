import { applyPatch, type Operation } from "fast-json-patch";
import { describe, expect, it } from "vitest";
import { buildCrd } from "../api/crd.js";
import { crdCaPatch, webhookCaPatch } from "./ca-injector.js";

const bundle = Buffer.from("-----BEGIN CERTIFICATE-----\n...").toString("base64");

describe("webhookCaPatch", () => {
  const config = {
    metadata: { name: "edge-operator", resourceVersion: "42" },
    webhooks: [
      {
        name: "mutate.net.10xdev.io",
        clientConfig: { service: { name: "s", namespace: "n", path: "/mutate" } },
      },
      { name: "other.net.10xdev.io", clientConfig: { url: "https://x", caBundle: bundle } },
    ],
  };

  it("sets the bundle on every webhook that lacks it, guarded by the resourceVersion and the webhook's name", () => {
    const ops = webhookCaPatch(config, bundle);
    expect(ops).toEqual([
      { op: "test", path: "/metadata/resourceVersion", value: "42" },
      { op: "test", path: "/webhooks/0/name", value: "mutate.net.10xdev.io" },
      { op: "add", path: "/webhooks/0/clientConfig/caBundle", value: bundle },
    ]);
    const patched = applyPatch(structuredClone(config), ops as Operation[]).newDocument;
    expect(patched.webhooks.map((w) => (w.clientConfig as { caBundle?: string }).caBundle)).toEqual([
      bundle,
      bundle,
    ]);
    expect(webhookCaPatch(patched, bundle)).toEqual([]);
  });

  it("fails to apply when the list was reordered in between", () => {
    const ops = webhookCaPatch(config, bundle);
    const reordered = {
      ...structuredClone(config),
      webhooks: [...structuredClone(config.webhooks)].reverse(),
    };
    expect(() => applyPatch(reordered, ops as Operation[], true)).toThrow();
  });
});

describe("crdCaPatch", () => {
  it("sets the conversion webhook's bundle, and leaves a CRD without a conversion webhook alone", () => {
    const crd = {
      ...buildCrd({ conversion: { service: { name: "s", namespace: "n", path: "/convert" } } }),
      metadata: { name: "edgeroutes.net.10xdev.io", resourceVersion: "7" },
    };
    const ops = crdCaPatch(crd, bundle);
    expect(ops).toEqual([
      { op: "test", path: "/metadata/resourceVersion", value: "7" },
      { op: "add", path: "/spec/conversion/webhook/clientConfig/caBundle", value: bundle },
    ]);
    const patched = applyPatch(structuredClone(crd), ops as Operation[]).newDocument;
    expect(patched.spec.conversion?.webhook.clientConfig.caBundle).toBe(bundle);
    expect(crdCaPatch(patched, bundle)).toEqual([]);
    expect(crdCaPatch(buildCrd(), bundle)).toEqual([]);
  });
});
