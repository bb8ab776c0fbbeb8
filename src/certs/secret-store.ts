// The CA and serving pair kept in one Secret, so that every replica serves a
// certificate from the same CA. Created once even when replicas start together
// (create; on 409 AlreadyExists read the winner's), renewed with the
// Secret's resourceVersion as a precondition (on 409 Conflict re-read: another
// replica renewed first, and its renewal is the one everyone uses).

import type { V1OwnerReference, V1Secret } from "@kubernetes/client-node";
import type { KubeClient } from "../kube/client.js";
import { isConflict, isNotFound } from "../kube/errors.js";
import { renewalDecision, renewedMaterial, type RenewalDecision } from "./renewal.js";
import type { ServingIdentity, ServingMaterial } from "./serving.js";

export interface SecretRef {
  namespace: string;
  name: string;
}

export interface CertSecretOptions {
  secret: SecretRef;
  identity: ServingIdentity;
  renewBeforeDays?: number;
  now?: () => Date;
  labels?: Record<string, string>;
  /**
   * The object whose deletion takes the Secret with it (the chart's Service):
   * the server makes this Secret, not helm, so without it `helm uninstall`
   * would leave it behind.
   */
  owner?: V1OwnerReference;
}

export interface StoredMaterial {
  material: ServingMaterial;
  resourceVersion: string;
  /** What this call did: only one of several racing callers sees "created". */
  action: "created" | "loaded" | "renewed";
  /** Why a renewal happened, for the log. */
  reason?: string;
}

const KEYS = { caCert: "ca.crt", caKey: "ca.key", cert: "tls.crt", key: "tls.key" } as const;
export const ATTEMPTS = 8;
/** Per request: a hung apiserver fails this check, and the next one tries again. */
export const TIMEOUT_MS = 15_000;

export const b64 = (s: string): string => Buffer.from(s, "utf8").toString("base64");
export const unb64 = (s: string | undefined): string | undefined =>
  s === undefined ? undefined : Buffer.from(s, "base64").toString("utf8");

/** Parses `NAMESPACE/NAME`. */
export function parseSecretRef(text: string): SecretRef {
  const m = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)\/([a-z0-9]([-.a-z0-9]*[a-z0-9])?)$/.exec(text);
  if (!m?.[1] || !m[3]) throw new Error(`expected NAMESPACE/NAME, got ${JSON.stringify(text)}`);
  return { namespace: m[1], name: m[3] };
}

/** The material a Secret holds, or undefined when a key is missing. `ca.crt` is the bundle, current CA first. */
export function materialFromSecret(secret: V1Secret): ServingMaterial | undefined {
  const d = secret.data ?? {};
  const caBundle = unb64(d[KEYS.caCert]);
  const caKey = unb64(d[KEYS.caKey]);
  const cert = unb64(d[KEYS.cert]);
  const key = unb64(d[KEYS.key]);
  if (!caBundle || !caKey || !cert || !key) return undefined;
  const first = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\r?\n?/.exec(caBundle)?.[0];
  if (!first) return undefined;
  return { ca: { cert: first, key: caKey }, caBundle, serving: { cert, key } };
}

export function secretFromMaterial(
  ref: SecretRef,
  m: ServingMaterial,
  labels: Record<string, string> = {},
  resourceVersion?: string,
  ownerReferences?: V1OwnerReference[],
): V1Secret {
  return tlsSecret(
    ref,
    {
      [KEYS.caCert]: b64(m.caBundle),
      [KEYS.caKey]: b64(m.ca.key),
      [KEYS.cert]: b64(m.serving.cert),
      [KEYS.key]: b64(m.serving.key),
    },
    labels,
    resourceVersion,
    ownerReferences,
  );
}

/** A kubernetes.io/tls Secret the operator manages, with its data already base64. */
export function tlsSecret(
  ref: SecretRef,
  data: Record<string, string>,
  labels: Record<string, string> = {},
  resourceVersion?: string,
  ownerReferences?: V1OwnerReference[],
): V1Secret {
  return {
    apiVersion: "v1",
    kind: "Secret",
    type: "kubernetes.io/tls",
    metadata: {
      name: ref.name,
      namespace: ref.namespace,
      labels: { "app.kubernetes.io/managed-by": "edge-operator", ...labels },
      ...(resourceVersion ? { resourceVersion } : {}),
      ...(ownerReferences && ownerReferences.length > 0 ? { ownerReferences } : {}),
    },
    data,
  };
}

export function secretsPath(namespace: string): string {
  return `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets`;
}

export function secretPath(ref: SecretRef): string {
  return `${secretsPath(ref.namespace)}/${encodeURIComponent(ref.name)}`;
}

/** The Secret, or undefined when there is none. */
export async function readSecret(kube: KubeClient, ref: SecretRef): Promise<V1Secret | undefined> {
  try {
    return await kube.json<V1Secret>("GET", secretPath(ref), { timeoutMs: TIMEOUT_MS });
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/**
 * Loads the material from the Secret, creating it when absent and renewing it
 * when the policy says so. Safe to call from any number of replicas at once.
 */
export async function ensureCertSecret(kube: KubeClient, opts: CertSecretOptions): Promise<StoredMaterial> {
  const now = opts.now ?? (() => new Date());
  const policy = () => ({ now: now(), renewBeforeDays: opts.renewBeforeDays });
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const secret = await readSecret(kube, opts.secret);
    if (!secret) {
      const decision = renewalDecision(undefined, opts.identity, policy()) as Extract<
        RenewalDecision,
        { renew: true }
      >;
      const material = renewedMaterial(undefined, decision, opts.identity, now());
      try {
        const created = await kube.json<V1Secret>("POST", secretsPath(opts.secret.namespace), {
          body: secretFromMaterial(opts.secret, material, opts.labels, undefined, opts.owner && [opts.owner]),
          timeoutMs: TIMEOUT_MS,
        });
        return { material, resourceVersion: created.metadata?.resourceVersion ?? "", action: "created" };
      } catch (err) {
        if (isConflict(err)) continue; // another replica won the race: use its Secret
        throw err;
      }
    }
    const current = materialFromSecret(secret);
    const decision = renewalDecision(current, opts.identity, policy());
    const resourceVersion = secret.metadata?.resourceVersion ?? "";
    if (!decision.renew && current) return { material: current, resourceVersion, action: "loaded" };
    if (!decision.renew) continue;
    const material = renewedMaterial(current, decision, opts.identity, now());
    const body = secretFromMaterial(
      opts.secret,
      material,
      { ...secret.metadata?.labels, ...opts.labels },
      resourceVersion,
      opts.owner ? [opts.owner] : secret.metadata?.ownerReferences,
    );
    try {
      const replaced = await kube.json<V1Secret>("PUT", secretPath(opts.secret), {
        body,
        timeoutMs: TIMEOUT_MS,
      });
      return {
        material,
        resourceVersion: replaced.metadata?.resourceVersion ?? "",
        action: "renewed",
        reason: decision.reason,
      };
    } catch (err) {
      // 409: someone renewed (or changed) it since we read it; 404: deleted meanwhile. Read again.
      if (isConflict(err) || isNotFound(err)) continue;
      throw err;
    }
  }
  throw new Error(
    `Secret ${opts.secret.namespace}/${opts.secret.name}: gave up after ${ATTEMPTS} conflicting attempts to create or renew it`,
  );
}
