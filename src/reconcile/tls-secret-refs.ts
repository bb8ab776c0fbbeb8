// Which TLS Secrets the routes reference, and how one is read: a GET of that
// Secret alone, of which only `tls.crt` and `tls.key` are kept (decoded). The
// watch-fed cache (tls-secret-contents.ts) and the LIST-per-call view
// (cluster-view.ts) read them the same way.
//
// Key material: what is read here goes into a TlsSecret and nowhere else; no
// error or log line made here carries a byte of it.

import type { EdgeRouteV2 } from "../api/types.js";
import { isRecord } from "../api/is-record.js";
import { objectKey } from "../api/object-key.js";
import type { KubeClient } from "../kube/client.js";
import { isNotFound } from "../kube/errors.js";
import { secretPath, TLS_SECRET_TYPE } from "../kube/paths.js";
import type { TlsSecret } from "../translate/tls-secrets.js";

/** `namespace/name` of the Secret a live route's TLS names; undefined for a route without TLS or terminating. */
export function tlsSecretKeyOf(route: EdgeRouteV2): string | undefined {
  const name = route.spec?.tls?.secretName;
  if (typeof name !== "string" || name === "" || route.metadata.deletionTimestamp) return undefined;
  return objectKey(route.metadata.namespace ?? "", name);
}

/** The distinct Secrets the live routes reference, sorted. */
export function referencedTlsSecrets(routes: readonly EdgeRouteV2[]): string[] {
  const keys = new Set<string>();
  for (const r of routes) {
    const key = tlsSecretKeyOf(r);
    if (key !== undefined) keys.add(key);
  }
  return [...keys].sort();
}

function decoded(data: Record<string, unknown>, field: string): string {
  const v = data[field];
  return typeof v === "string" ? Buffer.from(v, "base64").toString("utf8") : "";
}

/**
 * A Secret object as read, reduced to its certificate and key; undefined when
 * it is not a `kubernetes.io/tls` Secret (those count as absent). A missing
 * field is empty text: the translation says the certificate is invalid.
 */
export function tlsSecretOf(obj: unknown): { resourceVersion: string; secret: TlsSecret } | undefined {
  if (!isRecord(obj) || obj.type !== TLS_SECRET_TYPE) return undefined;
  const data = isRecord(obj.data) ? obj.data : {};
  const meta = isRecord(obj.metadata) ? obj.metadata : {};
  return {
    resourceVersion: typeof meta.resourceVersion === "string" ? meta.resourceVersion : "",
    secret: { certificate: decoded(data, "tls.crt"), privateKey: decoded(data, "tls.key") },
  };
}

/** GETs one Secret; undefined when it does not exist or is not a TLS Secret. */
export async function readTlsSecret(
  kube: KubeClient,
  key: string,
  signal?: AbortSignal,
): Promise<{ resourceVersion: string; secret: TlsSecret } | undefined> {
  const slash = key.indexOf("/");
  try {
    const obj = await kube.json<unknown>("GET", secretPath(key.slice(0, slash), key.slice(slash + 1)), {
      timeoutMs: 15_000,
      ...(signal ? { signal } : {}),
    });
    return tlsSecretOf(obj);
  } catch (e) {
    if (isNotFound(e)) return undefined;
    throw e;
  }
}

/** Same certificate and key. */
export function sameTlsSecret(a: TlsSecret | undefined, b: TlsSecret | undefined): boolean {
  return a?.certificate === b?.certificate && a?.privateKey === b?.privateKey;
}
