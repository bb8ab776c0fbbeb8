// The proxies' client pair for mutual TLS on the ADS port, kept in a Secret of
// its own beside the serving one: kubernetes.io/tls with tls.crt and tls.key
// (CN `envoy`, client auth only, issued by the operator's CA) and ca.crt, the
// CA bundle, so a proxy that mounts this one Secret can check the server too.
// Never the CA key: Envoy reads this Secret. Created and renewed as the
// serving Secret is (secret-store.ts): create, on 409 read the winner's; PUT
// with the resourceVersion read, on 409 read again and decide again.

import type { V1OwnerReference, V1Secret } from "@kubernetes/client-node";
import type { KubeClient } from "../kube/client.js";
import { isConflict, isNotFound } from "../kube/errors.js";
import {
  describeCertificate,
  isIssuedBy,
  issueCertificate,
  keyMatchesCertificate,
  splitPemBundle,
  type KeyPair,
} from "./pki.js";
import { RENEW_BEFORE_DAYS } from "./renewal.js";
import {
  ATTEMPTS,
  b64,
  readSecret,
  secretPath,
  secretsPath,
  TIMEOUT_MS,
  tlsSecret,
  unb64,
  type SecretRef,
} from "./secret-store.js";
import { SERVING_DAYS } from "./serving.js";

/** The subject CN of the chart's Envoy: it is known as `envoy/<node id>` (node-identity.ts). */
export const ENVOY_CLIENT_NAME = "envoy";

const DAY_MS = 24 * 60 * 60 * 1000;

export interface ClientPairMaterial {
  pair: KeyPair;
  /** What a proxy trusts for the server: the operator's CA bundle. */
  caBundle: string;
}

export type ClientPairDecision =
  | { action: "keep" }
  /** The pair is good; only ca.crt is behind the bundle (a CA rotation began or an old CA expired). */
  | { action: "bundle" }
  | { action: "issue"; reason: string };

/** What to do with the stored client pair, given the CA that must have signed it. Pure: replicas agree. */
export function clientPairDecision(
  stored: ClientPairMaterial | undefined,
  want: { ca: KeyPair; caBundle: string; commonName: string },
  policy: {
    now: Date;
    renewBeforeDays?: number;
    /**
     * After a CA rotation, how long a pair from an older CA still in the bundle
     * is kept: every replica must have loaded the new CA as its client CA
     * first (each at its next check), or a proxy with a pair from the new CA
     * would be refused by a replica that has not. Default 0.
     */
    rotationGraceMs?: number;
  },
): ClientPairDecision {
  if (!stored) return { action: "issue", reason: "no client pair stored" };
  let leaf;
  try {
    leaf = describeCertificate(stored.pair.cert);
  } catch {
    return { action: "issue", reason: "the client certificate is unreadable" };
  }
  if (!isIssuedBy(want.ca.cert, stored.pair.cert)) {
    const caAge = policy.now.getTime() - describeCertificate(want.ca.cert).notBefore.getTime();
    const byOlder = splitPemBundle(want.caBundle).some((pem) => isIssuedBy(pem, stored.pair.cert));
    if (!byOlder || caAge >= (policy.rotationGraceMs ?? 0))
      return { action: "issue", reason: "the client certificate was not issued by the current CA" };
  }
  if (!keyMatchesCertificate(stored.pair.cert, stored.pair.key))
    return { action: "issue", reason: "the client key does not match its certificate" };
  if (leaf.commonName !== want.commonName)
    return { action: "issue", reason: `the client certificate is for ${JSON.stringify(leaf.commonName)}` };
  const before = (policy.renewBeforeDays ?? RENEW_BEFORE_DAYS) * DAY_MS;
  const now = policy.now.getTime();
  if (leaf.notAfter.getTime() - now < before || leaf.notBefore.getTime() > now)
    return { action: "issue", reason: `the client certificate expires on ${leaf.notAfter.toISOString()}` };
  return stored.caBundle === want.caBundle ? { action: "keep" } : { action: "bundle" };
}

export function issueClientPair(ca: KeyPair, commonName: string, now: Date): KeyPair {
  // As long as a serving certificate: the CA is rotated while one still fits in it (renewal.ts).
  return issueCertificate(ca, { commonName, usage: "client", days: SERVING_DAYS, now });
}

export function clientMaterialFromSecret(secret: V1Secret): ClientPairMaterial | undefined {
  const d = secret.data ?? {};
  const [cert, key, caBundle] = [unb64(d["tls.crt"]), unb64(d["tls.key"]), unb64(d["ca.crt"])];
  if (!cert || !key) return undefined;
  return { pair: { cert, key }, caBundle: caBundle ?? "" };
}

export function clientSecretBody(
  ref: SecretRef,
  m: ClientPairMaterial,
  labels: Record<string, string> = {},
  resourceVersion?: string,
  ownerReferences?: V1OwnerReference[],
): V1Secret {
  const data = { "tls.crt": b64(m.pair.cert), "tls.key": b64(m.pair.key), "ca.crt": b64(m.caBundle) };
  return tlsSecret(ref, data, labels, resourceVersion, ownerReferences);
}

export interface ClientSecretOptions {
  secret: SecretRef;
  /** The CA that signs the pair (the serving Secret's current one) and the bundle written beside it. */
  ca: KeyPair;
  caBundle: string;
  commonName?: string;
  renewBeforeDays?: number;
  /** See clientPairDecision. */
  rotationGraceMs?: number;
  now?: () => Date;
  owner?: V1OwnerReference;
}

export interface StoredClientPair {
  material: ClientPairMaterial;
  action: "created" | "loaded" | "renewed" | "bundle";
  reason?: string;
}

/** Loads the client pair, creating or renewing it as clientPairDecision says. Safe from any number of replicas. */
export async function ensureClientSecret(
  kube: KubeClient,
  opts: ClientSecretOptions,
): Promise<StoredClientPair> {
  const now = opts.now ?? (() => new Date());
  const commonName = opts.commonName ?? ENVOY_CLIENT_NAME;
  const want = { ca: opts.ca, caBundle: opts.caBundle, commonName };
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const secret = await readSecret(kube, opts.secret);
    const current = secret ? clientMaterialFromSecret(secret) : undefined;
    const decision = clientPairDecision(current, want, {
      now: now(),
      ...(opts.renewBeforeDays !== undefined ? { renewBeforeDays: opts.renewBeforeDays } : {}),
      ...(opts.rotationGraceMs !== undefined ? { rotationGraceMs: opts.rotationGraceMs } : {}),
    });
    if (decision.action === "keep" && current) return { material: current, action: "loaded" };
    const material: ClientPairMaterial = {
      pair:
        decision.action === "bundle" && current ? current.pair : issueClientPair(opts.ca, commonName, now()),
      caBundle: opts.caBundle,
    };
    try {
      if (!secret) {
        await kube.json<V1Secret>("POST", secretsPath(opts.secret.namespace), {
          body: clientSecretBody(opts.secret, material, {}, undefined, opts.owner && [opts.owner]),
          timeoutMs: TIMEOUT_MS,
        });
        return { material, action: "created" };
      }
      await kube.json<V1Secret>("PUT", secretPath(opts.secret), {
        body: clientSecretBody(
          opts.secret,
          material,
          secret.metadata?.labels,
          secret.metadata?.resourceVersion ?? "",
          opts.owner ? [opts.owner] : secret.metadata?.ownerReferences,
        ),
        timeoutMs: TIMEOUT_MS,
      });
      return decision.action === "issue"
        ? { material, action: "renewed", reason: decision.reason }
        : { material, action: "bundle" };
    } catch (err) {
      // 409: another replica created or renewed it first (or a PUT raced a delete: 404). Read again.
      if (isConflict(err) || isNotFound(err)) continue;
      throw err;
    }
  }
  throw new Error(
    `Secret ${opts.secret.namespace}/${opts.secret.name}: gave up after ${ATTEMPTS} conflicting attempts to create or renew the client pair`,
  );
}
