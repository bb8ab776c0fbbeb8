// Writes the CA bundle into the clients that call the server: every webhook of
// the Mutating and Validating webhook configurations, and the CRD's conversion
// webhook. A JSON Patch with a resourceVersion test, so a concurrent writer is
// never overwritten; nothing is written when the bundle is already in place.

import type { KubeClient } from "../kube/client.js";
import { isNotFound, isStale } from "../kube/errors.js";

export interface InjectTargets {
  mutatingWebhookConfigurations?: readonly string[];
  validatingWebhookConfigurations?: readonly string[];
  customResourceDefinitions?: readonly string[];
}

export type JsonPatchOp =
  { op: "test"; path: string; value: unknown } | { op: "add" | "replace"; path: string; value: unknown };

interface WithClientConfig {
  name?: string;
  clientConfig?: { caBundle?: string };
}

interface Patchable {
  metadata?: { name?: string; resourceVersion?: string };
  webhooks?: readonly WithClientConfig[];
  spec?: { conversion?: { strategy?: string; webhook?: { clientConfig?: { caBundle?: string } } } };
}

function guarded(obj: Patchable, ops: JsonPatchOp[]): JsonPatchOp[] {
  if (ops.length === 0) return [];
  return [
    { op: "test", path: "/metadata/resourceVersion", value: obj.metadata?.resourceVersion ?? "" },
    ...ops,
  ];
}

/** The patch that sets caBundle on every webhook of a webhook configuration; empty when all are set. */
export function webhookCaPatch(obj: Patchable, caBundle: string): JsonPatchOp[] {
  const ops: JsonPatchOp[] = [];
  (obj.webhooks ?? []).forEach((w, i) => {
    if (w.clientConfig?.caBundle === caBundle) return;
    // The name test pins the index: a reordered list fails the patch instead of patching the wrong webhook.
    ops.push({ op: "test", path: `/webhooks/${i}/name`, value: w.name ?? "" });
    ops.push({ op: "add", path: `/webhooks/${i}/clientConfig/caBundle`, value: caBundle });
  });
  return guarded(obj, ops);
}

/** The patch that sets the CRD's conversion webhook caBundle; empty when set or when there is no conversion webhook. */
export function crdCaPatch(obj: Patchable, caBundle: string): JsonPatchOp[] {
  const webhook = obj.spec?.conversion?.webhook;
  if (obj.spec?.conversion?.strategy !== "Webhook" || !webhook?.clientConfig) return [];
  if (webhook.clientConfig.caBundle === caBundle) return [];
  return guarded(obj, [
    { op: "add", path: "/spec/conversion/webhook/clientConfig/caBundle", value: caBundle },
  ]);
}

export interface InjectResult {
  kind: "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration" | "CustomResourceDefinition";
  name: string;
  outcome: "patched" | "unchanged" | "missing";
}

const ATTEMPTS = 5;
/** Per request: a hung apiserver fails this check, and the next one tries again. */
const TIMEOUT_MS = 15_000;

const PATHS: Record<InjectResult["kind"], string> = {
  MutatingWebhookConfiguration: "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
  ValidatingWebhookConfiguration: "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
  CustomResourceDefinition: "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
};

async function injectOne(
  kube: KubeClient,
  kind: InjectResult["kind"],
  name: string,
  makeOps: (obj: Patchable) => JsonPatchOp[],
): Promise<InjectResult> {
  const path = `${PATHS[kind]}/${encodeURIComponent(name)}`;
  for (let attempt = 0; ; attempt++) {
    let obj: Patchable;
    try {
      obj = await kube.json<Patchable>("GET", path, { timeoutMs: TIMEOUT_MS });
    } catch (err) {
      // Not there yet (helm creates it after the server may start): the periodic check comes back.
      if (isNotFound(err)) return { kind, name, outcome: "missing" };
      throw err;
    }
    const ops = makeOps(obj);
    if (ops.length === 0) return { kind, name, outcome: "unchanged" };
    try {
      await kube.json("PATCH", path, {
        body: ops,
        contentType: "application/json-patch+json",
        timeoutMs: TIMEOUT_MS,
      });
      return { kind, name, outcome: "patched" };
    } catch (err) {
      // A failed test op (someone wrote in between) is 422 or 409: read again.
      if (isStale(err) && attempt + 1 < ATTEMPTS) continue;
      throw err;
    }
  }
}

/** Injects a base64 PEM bundle into every named target; idempotent. */
export async function injectCaBundle(
  kube: KubeClient,
  caBundleB64: string,
  targets: InjectTargets,
): Promise<InjectResult[]> {
  const webhook = (o: Patchable) => webhookCaPatch(o, caBundleB64);
  const crd = (o: Patchable) => crdCaPatch(o, caBundleB64);
  const results: InjectResult[] = [];
  for (const name of targets.mutatingWebhookConfigurations ?? [])
    results.push(await injectOne(kube, "MutatingWebhookConfiguration", name, webhook));
  for (const name of targets.validatingWebhookConfigurations ?? [])
    results.push(await injectOne(kube, "ValidatingWebhookConfiguration", name, webhook));
  for (const name of targets.customResourceDefinitions ?? [])
    results.push(await injectOne(kube, "CustomResourceDefinition", name, crd));
  return results;
}
