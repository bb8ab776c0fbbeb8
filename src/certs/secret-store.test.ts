import { describe, expect, it } from "vitest";
import type { V1Secret } from "@kubernetes/client-node";
import { KubeError, type KubeClient } from "../kube/client.js";
import { ensureCertSecret } from "./secret-store.js";

/** An apiserver holding at most one Secret: enough for the create and renew paths. */
function oneSecretApiserver(): { kube: KubeClient; stored(): V1Secret | undefined } {
  let secret: V1Secret | undefined;
  let rv = 0;
  const kube: KubeClient = {
    async json<T>(method: string, _path: string, opts: { body?: unknown } = {}): Promise<T> {
      if (method === "GET") {
        if (!secret) throw new KubeError(404, "NotFound", "not found");
        return secret as T;
      }
      secret = structuredClone(opts.body as V1Secret);
      secret.metadata = { ...secret.metadata, resourceVersion: String(++rv) };
      return secret as T;
    },
    stream: () => Promise.reject(new Error("no watch here")),
  };
  return { kube, stored: () => secret };
}

const owner = { apiVersion: "v1", kind: "Service", name: "edge-edge-operator", uid: "1234-abcd" };
const secretRef = { namespace: "edge-system", name: "edge-edge-operator-tls" };
const identity = { service: "edge-edge-operator", namespace: "edge-system", dnsNames: [], ips: [] };

describe("the certificate Secret's owner", () => {
  it("is set when the Secret is created, so deleting the Service deletes the Secret", async () => {
    const api = oneSecretApiserver();
    const r = await ensureCertSecret(api.kube, { secret: secretRef, identity, owner });
    expect(r.action).toBe("created");
    expect(api.stored()?.metadata?.ownerReferences).toEqual([owner]);
  });

  it("survives a renewal, which replaces the whole Secret", async () => {
    const api = oneSecretApiserver();
    await ensureCertSecret(api.kube, { secret: secretRef, identity, owner });
    // Far in the future: the certificate is due for renewal.
    const later = new Date(Date.now() + 5 * 365 * 24 * 3600 * 1000);
    const r = await ensureCertSecret(api.kube, { secret: secretRef, identity, now: () => later });
    expect(r.action).toBe("renewed");
    expect(api.stored()?.metadata?.ownerReferences).toEqual([owner]);
  });

  it("is absent when no owner is given (out of cluster)", async () => {
    const api = oneSecretApiserver();
    await ensureCertSecret(api.kube, { secret: secretRef, identity });
    expect(api.stored()?.metadata?.ownerReferences).toBeUndefined();
  });
});
