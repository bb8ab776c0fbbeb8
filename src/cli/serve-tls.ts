// Where `serve` gets its key pair: files (--tls-cert/--tls-key, reloaded when
// they change) or a Secret it manages (--cert-secret). Kept here so that
// serve.ts only spreads the options into its parser and asks for the TLS source.

import { CRD_NAME } from "../api/types.js";
import { UsageError } from "./command.js";
import type { HttpsServerOptions, RunningServer } from "../server/https.js";
import { kubeClient } from "../kube/client.js";
import { loadKubeConfig } from "../kube/load-kubeconfig.js";
import type { Logger } from "../observability/logger.js";
import { startManagedCerts, type ManagedCertOptions } from "../certs/managed-serving.js";
import { RENEW_BEFORE_DAYS } from "../certs/renewal.js";
import { parseSecretRef } from "../certs/secret-store.js";

export const certFlagOptions = {
  "cert-secret": { type: "string" },
  "cert-service": { type: "string" },
  "cert-dns": { type: "string", multiple: true },
  "cert-ip": { type: "string", multiple: true },
  "cert-renew-before-days": { type: "string" },
  "cert-check-interval": { type: "string" },
  "inject-ca": { type: "boolean" },
  "webhook-config-name": { type: "string", multiple: true },
  "crd-name": { type: "string", multiple: true },
} as const;

export interface CertFlagValues {
  "cert-secret"?: string;
  "cert-service"?: string;
  "cert-dns"?: string[];
  "cert-ip"?: string[];
  "cert-renew-before-days"?: string;
  "cert-check-interval"?: string;
  "inject-ca"?: boolean;
  "webhook-config-name"?: string[];
  "crd-name"?: string[];
}

export const certFlagsHelp = `
In-cluster certificates (instead of --tls-cert/--tls-key):
  --cert-secret NS/NAME        keep the CA and serving pair in this Secret: created
                               once, renewed before expiry, hot-reloaded
  --cert-service SVC           the Service in NS the certificate names (SVC, SVC.NS,
                               SVC.NS.svc, SVC.NS.svc.cluster.local)
  --cert-dns NAME, --cert-ip IP  extra names (repeatable)
  --cert-renew-before-days N   renew when fewer days remain (default ${RENEW_BEFORE_DAYS})
  --cert-check-interval SECS   how often to check the Secret (default 3600)
  --inject-ca                  write the CA bundle into the webhook configurations
                               and the CRD's conversion webhook
  --webhook-config-name NAME   the webhook registration's name: injects NAME-mutate
                               (Mutating) and NAME-validate (Validating), as
                               the chart names them (repeatable)
  --crd-name NAME              the CRD whose conversion webhook to inject (repeatable;
                               default ${CRD_NAME})
`;

function positive(flag: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0)
    throw new UsageError(`--${flag} must be a positive number, got ${JSON.stringify(text)}`);
  return n;
}

/** The managed-certificate options, or undefined when --cert-secret is absent. */
export function parseCertFlags(v: CertFlagValues): ManagedCertOptions | undefined {
  const others = (
    ["cert-service", "cert-dns", "cert-ip", "inject-ca", "webhook-config-name", "crd-name"] as const
  ).filter((k) => v[k] !== undefined);
  if (v["cert-secret"] === undefined) {
    if (others.length > 0) throw new UsageError(`--${others[0]} needs --cert-secret`);
    return undefined;
  }
  let secret;
  try {
    secret = parseSecretRef(v["cert-secret"]);
  } catch (err) {
    throw new UsageError(`--cert-secret: ${(err as Error).message}`);
  }
  if (!v["inject-ca"] && (v["webhook-config-name"] || v["crd-name"])) {
    throw new UsageError("--webhook-config-name and --crd-name need --inject-ca");
  }
  const webhooks = v["webhook-config-name"] ?? [];
  return {
    secret,
    identity: {
      ...(v["cert-service"] ? { service: v["cert-service"], namespace: secret.namespace } : {}),
      dnsNames: v["cert-dns"] ?? [],
      ips: v["cert-ip"] ?? [],
    },
    ...(v["inject-ca"]
      ? {
          inject: {
            mutatingWebhookConfigurations: webhooks.map((n) => `${n}-mutate`),
            validatingWebhookConfigurations: webhooks.map((n) => `${n}-validate`),
            customResourceDefinitions: v["crd-name"] ?? [CRD_NAME],
          },
        }
      : {}),
    renewBeforeDays: positive("cert-renew-before-days", v["cert-renew-before-days"], RENEW_BEFORE_DAYS),
    checkIntervalMs: positive("cert-check-interval", v["cert-check-interval"], 3600) * 1000,
  };
}

export interface ServeTls {
  readonly tls: HttpsServerOptions["tls"];
  /** Starts the renewal loop against the live server (managed certificates only). */
  attach(server: RunningServer): void;
  stop(): void;
}

/** The TLS source for serve: managed in a Secret when `certs` is given, else the files. */
export async function serveTls(
  opts: {
    tlsCert: string;
    tlsKey: string;
    certs?: ManagedCertOptions;
    kubeconfig?: string;
  },
  logger: Logger,
): Promise<ServeTls> {
  if (!opts.certs)
    return { tls: { certFile: opts.tlsCert, keyFile: opts.tlsKey }, attach: () => {}, stop: () => {} };
  const access = loadKubeConfig(opts.kubeconfig);
  if (!access)
    throw new UsageError("--cert-secret needs cluster access: --kubeconfig, $KUBECONFIG or in-cluster");
  const secret = `${opts.certs.secret.namespace}/${opts.certs.secret.name}`;
  const managed = await startManagedCerts(kubeClient(access), opts.certs);
  logger.info({ secret }, "serving certificate loaded from the Secret");
  return {
    tls: managed.pair,
    attach(server) {
      managed.start(
        (pair) => {
          server.reload(pair);
          logger.info({ secret }, "serving certificate renewed and reloaded");
        },
        (err) => logger.warn({ err, secret }, "certificate check failed; will retry"),
        (o) => {
          const patched = o.injected.filter((i) => i.outcome === "patched");
          if (patched.length > 0) logger.info({ patched }, "CA bundle injected");
        },
      );
    },
    stop: () => managed.stop(),
  };
}
