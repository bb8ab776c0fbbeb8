// The in-cluster certificate lifecycle of `serve --cert-secret`: load or create
// the pair in the Secret, inject the CA bundle, then check periodically, renew
// when due and hand a changed pair to the live server (hot reload, no restart).
// Every replica runs the same loop; the Secret makes them agree.

import type { KubeClient } from "../kube/client.js";
import type { KeyPair } from "./pki.js";
import { injectCaBundle, type InjectResult, type InjectTargets } from "./ca-injector.js";
import {
  ensureCertSecret,
  type CertSecretOptions,
  type SecretRef,
  type StoredMaterial,
} from "./secret-store.js";
import type { ServingIdentity } from "./serving.js";

export interface ManagedCertOptions {
  secret: SecretRef;
  identity: ServingIdentity;
  /** Where to inject the CA bundle; none when absent. */
  inject?: InjectTargets;
  renewBeforeDays: number;
  checkIntervalMs: number;
  now?: () => Date;
  /** The Secret's owner (see CertSecretOptions.owner). */
  owner?: CertSecretOptions["owner"];
}

export interface CheckOutcome {
  stored: StoredMaterial;
  injected: InjectResult[];
  /** True when the serving pair differs from the one served before this check. */
  changed: boolean;
}

export interface ManagedCerts {
  /** The serving pair in use. */
  readonly pair: KeyPair;
  /** PEM bundle of the CA(s) clients should trust. */
  readonly caBundle: string;
  /** One round: ensure the Secret (renewing when due), inject the bundle, report a change. */
  check(): Promise<CheckOutcome>;
  /** Runs check() every interval and calls onChange with a new pair; errors go to onError and the loop goes on. */
  start(
    onChange: (pair: KeyPair) => void,
    onError: (err: unknown) => void,
    onCheck?: (o: CheckOutcome) => void,
  ): void;
  stop(): void;
}

export async function startManagedCerts(kube: KubeClient, opts: ManagedCertOptions): Promise<ManagedCerts> {
  let current: StoredMaterial | undefined;
  let timer: NodeJS.Timeout | undefined;
  let running = false;

  const check = async (): Promise<CheckOutcome> => {
    const stored = await ensureCertSecret(kube, {
      secret: opts.secret,
      identity: opts.identity,
      renewBeforeDays: opts.renewBeforeDays,
      ...(opts.now ? { now: opts.now } : {}),
      ...(opts.owner ? { owner: opts.owner } : {}),
    });
    // Inject before the caller reloads: after a CA rotation the callers must trust the new CA first.
    const bundle = Buffer.from(stored.material.caBundle).toString("base64");
    const injected = opts.inject ? await injectCaBundle(kube, bundle, opts.inject) : [];
    const changed = current !== undefined && current.material.serving.cert !== stored.material.serving.cert;
    current = stored;
    return { stored, injected, changed };
  };

  await check();

  return {
    get pair() {
      return (current as StoredMaterial).material.serving;
    },
    get caBundle() {
      return (current as StoredMaterial).material.caBundle;
    },
    check,
    start(onChange, onError, onCheck) {
      if (timer) return;
      timer = setInterval(() => {
        if (running) return; // a slow apiserver: never overlap two checks
        running = true;
        check()
          .then((o) => {
            onCheck?.(o);
            if (o.changed) onChange(o.stored.material.serving);
          }, onError)
          .finally(() => (running = false));
      }, opts.checkIntervalMs);
      timer.unref();
    },
    stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
    },
  };
}
