// The in-cluster certificate lifecycle of `serve --cert-secret`: load or create
// the pair in the Secret, inject the CA bundle, then check periodically, renew
// when due and hand a changed pair to the live server (hot reload, no restart).
// Every replica runs the same loop; the Secret makes them agree. With a client
// Secret it also keeps the proxies' pair for mutual TLS on the ADS port
// (client-secret.ts), issued by the serving Secret's CA of the same check.

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
import { ensureClientSecret, type StoredClientPair } from "./client-secret.js";

export interface ManagedCertOptions {
  secret: SecretRef;
  identity: ServingIdentity;
  /** Where to inject the CA bundle; none when absent. */
  inject?: InjectTargets;
  renewBeforeDays: number;
  checkIntervalMs: number;
  /**
   * After a check that found an injection target missing (helm creates the
   * webhook registrations after the server may start) or that failed: the
   * first retry's delay, doubled each time up to retryMaxMs. Defaults 1 s and 60 s.
   */
  retryMinMs?: number;
  retryMaxMs?: number;
  now?: () => Date;
  /** The Secret's owner (see CertSecretOptions.owner); the client Secret's too. */
  owner?: CertSecretOptions["owner"];
  /** Also keep a client pair for the proxies in this Secret (same namespace), CN commonName (default `envoy`). */
  client?: { secret: SecretRef; commonName?: string };
}

export interface CheckOutcome {
  stored: StoredMaterial;
  injected: InjectResult[];
  /** The proxies' client pair, when asked for (ManagedCertOptions.client). */
  client?: StoredClientPair;
  /** True when the serving pair or the CA bundle differs from the one served before this check. */
  changed: boolean;
}

export interface ManagedCerts {
  /** The serving pair in use. */
  readonly pair: KeyPair;
  /** PEM bundle of the CA(s) clients should trust; the ADS port's client CA by default (serve.ts). */
  readonly caBundle: string;
  /** One round: ensure the Secret (renewing when due), inject the bundle, report a change. */
  check(): Promise<CheckOutcome>;
  /**
   * Runs check() every interval, and sooner (with backoff) while a target is
   * missing or a check fails; calls onChange with a new pair or bundle;
   * errors go to onError and the loop goes on.
   */
  start(
    onChange: (pair: KeyPair, caBundle: string) => void,
    onError: (err: unknown) => void,
    onCheck?: (o: CheckOutcome) => void,
  ): void;
  stop(): void;
}

export async function startManagedCerts(kube: KubeClient, opts: ManagedCertOptions): Promise<ManagedCerts> {
  let current: StoredMaterial | undefined;
  let timer: NodeJS.Timeout | undefined;
  /** Undefined until start(); true once stopped. */
  let stopped: boolean | undefined;

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
    // After the bundle is injected, before anyone reloads: a proxy's renewed pair is
    // already trusted, since the bundle the ADS port takes holds its CA.
    const client = opts.client
      ? await ensureClientSecret(kube, {
          secret: opts.client.secret,
          ca: stored.material.ca,
          caBundle: stored.material.caBundle,
          renewBeforeDays: opts.renewBeforeDays,
          // Two checks' time, plus the CA's 5-minute backdating: every replica has taken the new CA by then.
          rotationGraceMs: 2 * opts.checkIntervalMs + 5 * 60_000,
          ...(opts.client.commonName ? { commonName: opts.client.commonName } : {}),
          ...(opts.now ? { now: opts.now } : {}),
          ...(opts.owner ? { owner: opts.owner } : {}),
        })
      : undefined;
    const changed =
      current !== undefined &&
      (current.material.serving.cert !== stored.material.serving.cert ||
        current.material.caBundle !== stored.material.caBundle);
    current = stored;
    return { stored, injected, changed, ...(client ? { client } : {}) };
  };

  const initialMissing = (await check()).injected.some((r) => r.outcome === "missing");

  return {
    get pair() {
      return (current as StoredMaterial).material.serving;
    },
    get caBundle() {
      return (current as StoredMaterial).material.caBundle;
    },
    check,
    start(onChange, onError, onCheck) {
      if (timer || stopped === false) return;
      stopped = false;
      const retryMin = opts.retryMinMs ?? 1000;
      const retryMax = opts.retryMaxMs ?? 60_000;
      let retry = 0;
      // One check at a time: the next is scheduled when this one ends.
      const schedule = (ms: number): void => {
        if (stopped) return;
        timer = setTimeout(run, ms);
        timer.unref();
      };
      const backoff = (): number => Math.min(retryMax, retryMin * 2 ** retry++);
      const run = (): void => {
        check().then(
          (o) => {
            onCheck?.(o);
            if (o.changed) onChange(o.stored.material.serving, o.stored.material.caBundle);
            if (o.injected.some((r) => r.outcome === "missing")) return schedule(backoff());
            retry = 0;
            schedule(opts.checkIntervalMs);
          },
          (err: unknown) => {
            onError(err);
            schedule(Math.min(backoff(), opts.checkIntervalMs));
          },
        );
      };
      // The first check ran before start: if it found a target missing, come back soon.
      schedule(initialMissing ? backoff() : opts.checkIntervalMs);
    },
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
    },
  };
}
