// Where `serve` gets its key pair: files (--tls-cert/--tls-key, reloaded when
// they change) or a Secret it manages (--cert-secret). Kept here so that
// serve.ts only spreads the options into its parser and asks for the TLS source.

import { CRD_NAME } from "../api/types.js";
import { MUTATING_WEBHOOK, VALIDATING_WEBHOOK, registrationName } from "../api/webhook-registration.js";
import { UsageError } from "./command.js";
import type { HttpsServerOptions, RunningServer } from "../server/https.js";
import { kubeClient, type KubeClient } from "../kube/client.js";
import { optionalClusterAccess } from "./cluster-flags.js";
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
            mutatingWebhookConfigurations: webhooks.map((n) => registrationName(n, MUTATING_WEBHOOK.suffix)),
            validatingWebhookConfigurations: webhooks.map((n) =>
              registrationName(n, VALIDATING_WEBHOOK.suffix),
            ),
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
  /** Managed certificates only: the operator's CA bundle now (it follows a CA rotation). */
  readonly caBundle?: () => string;
  /** Starts the renewal loop against the live server (managed certificates only). */
  attach(server: RunningServer): void;
  stop(): void;
}

/**
 * The Service the certificate names, as the Secret's owner: deleting the
 * Service (`helm uninstall`) then deletes the Secret the server made. Without
 * it (out of cluster, or no such Service) the Secret simply has no owner.
 */
async function serviceOwner(
  kube: KubeClient,
  certs: ManagedCertOptions,
  logger: Logger,
): Promise<ManagedCertOptions["owner"] | undefined> {
  const name = certs.identity.service?.split(".")[0];
  if (!name) return undefined;
  const namespace = certs.secret.namespace;
  try {
    const svc = await kube.json<{ metadata?: { uid?: string } }>(
      "GET",
      `/api/v1/namespaces/${encodeURIComponent(namespace)}/services/${encodeURIComponent(name)}`,
      { timeoutMs: 10_000 },
    );
    const uid = svc.metadata?.uid;
    return uid ? { apiVersion: "v1", kind: "Service", name, uid } : undefined;
  } catch (err) {
    logger.warn(
      { err, service: `${namespace}/${name}` },
      "the Service is not readable: the Secret gets no owner",
    );
    return undefined;
  }
}

/** The TLS source for serve: managed in a Secret when `certs` is given, else the files. */
export async function serveTls(
  opts: {
    tlsCert: string;
    tlsKey: string;
    certs?: ManagedCertOptions;
    kubeconfig?: string;
    context?: string;
  },
  logger: Logger,
): Promise<ServeTls> {
  if (!opts.certs)
    return { tls: { certFile: opts.tlsCert, keyFile: opts.tlsKey }, attach: () => {}, stop: () => {} };
  const access = optionalClusterAccess(opts);
  if (!access)
    throw new UsageError(
      "--cert-secret needs cluster access: --kubeconfig, $KUBECONFIG, ~/.kube/config or in-cluster",
    );
  const secret = `${opts.certs.secret.namespace}/${opts.certs.secret.name}`;
  const kube = kubeClient(access);
  const owner = await serviceOwner(kube, opts.certs, logger);
  const managed = await startManagedCerts(kube, owner ? { ...opts.certs, owner } : opts.certs);
  logger.info({ secret }, "serving certificate loaded from the Secret");
  const clientSecret = opts.certs.client
    ? `${opts.certs.client.secret.namespace}/${opts.certs.client.secret.name}`
    : undefined;
  if (clientSecret) logger.info({ secret: clientSecret }, "the proxies' ADS client pair is in the Secret");
  return {
    tls: managed.pair,
    caBundle: () => managed.caBundle,
    attach(server) {
      managed.start(
        (pair) => {
          // The HTTPS server's reload hands the pair on to the ADS port, with the bundle now current.
          server.reload(pair);
          logger.info({ secret }, "serving certificate or CA bundle renewed and reloaded");
        },
        (err) => logger.warn({ err, secret }, "certificate check failed; will retry"),
        (o) => {
          const patched = o.injected.filter((i) => i.outcome === "patched");
          if (patched.length > 0) logger.info({ patched }, "CA bundle injected");
          if (o.client && o.client.action !== "loaded")
            logger.info(
              { secret: clientSecret, action: o.client.action, reason: o.client.reason },
              "the proxies' ADS client pair written",
            );
        },
      );
    },
    stop: () => managed.stop(),
  };
}
