import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { createApp, type AppOptions } from "../server/app.js";
import { callerCheck, METRICS_PATH, tokenReviewAuth } from "../server/caller-auth.js";
import { MAX_CONNECTIONS, MAX_CONNECTIONS_PER_PEER, startHttpsServer } from "../server/https.js";
import type { Logger } from "../observability/logger.js";
import { createRegistry, createServerMetrics } from "../observability/metrics.js";
import { MiB } from "../server/json-handler.js";
import {
  ACK_LEASE_PREFIX_ENV,
  ACK_LEASE_SECONDS_ENV,
  ACK_LEASE_SLOTS_ENV,
} from "../dataplane/xds/ack-records-lease.js";
import { certFlagOptions, certFlagsHelp, parseCertFlags, serveTls } from "./serve-tls.js";
import type { ManagedCertOptions } from "../certs/managed-serving.js";
import { parseSecretRef } from "../certs/secret-store.js";
import { DATA_PLANES, type DataPlaneKind } from "../wiring/data-plane.js";
import { assembleServe, type ServeConfig, type ServeDeps } from "../wiring/serve-parts.js";
import { kubeClient } from "../kube/client.js";
import { kubeClientMetrics, type KubeCallObserver } from "../kube/client-metrics.js";
import { parseDuration } from "./duration-flag.js";
import { UsageError, type Command } from "./command.js";
import { clusterFlagsHelp, clusterFlagOptions, optionalClusterAccess } from "./cluster-flags.js";
import { listenAddress, readableFile, tlsPairFiles } from "./flag-files.js";
import { CLUSTER_ENV, helpFooter } from "./help-footer.js";

const help = `Usage: edge-operator serve --tls-cert FILE --tls-key FILE [options]

Serves /convert, /validate, /mutate and /reconcile over HTTPS, with /healthz,
/readyz and /metrics. The webhooks need no cluster; /reconcile, the caches
and the conflict warnings need cluster access (--kubeconfig, --context).

Options:
  --listen HOST:PORT        address to listen on (default 0.0.0.0:9443)
  --tls-cert FILE           PEM certificate chain (reloaded when the file changes)
  --tls-key FILE            PEM private key
  --convert-body-limit MIB  largest ConversionReview accepted, in MiB (default 64)
${clusterFlagsHelp()}
  --dataplane KIND          memory | envoy-configmap | xds (default memory)
  --dataplane-namespace NS  envoy-configmap: the ConfigMap's namespace (default
                            $POD_NAMESPACE, else default)
  --dataplane-configmap N   envoy-configmap: the ConfigMap's name (default edge-envoy-xds)
  --xds-listen HOST:PORT    xds: where the ADS server (gRPC) listens (default
                            127.0.0.1:18000), with TLS: the serving key pair
                            (files or --cert-secret), reloaded with it
  --xds-plaintext           xds: no TLS on --xds-listen (gRPC's own xDS client
                            cannot trust a private CA); bind it to loopback or
                            a pod-local address
  --xds-plaintext-listen HOST:PORT
                            xds: a second ADS port without TLS, beside the TLS
                            one, for proxyless gRPC clients; anyone who reaches
                            it reads every route and counts as a data plane
  --xds-client-auth MODE    xds: required | none. required: the TLS ADS port
                            takes only clients with a certificate the client CA
                            signed (mutual TLS); the default when a client CA is
                            known: --xds-client-ca, or with --cert-secret the
                            operator's own CA (its bundle, followed across a CA
                            rotation). none: any client (the default otherwise)
  --xds-client-ca FILE      xds: PEM CA bundle that signs the proxies' client
                            certificates, in place of the operator's CA
                            (re-read when the serving pair is reloaded)
  --xds-client-cert-secret NAME
                            xds, with --cert-secret: also keep a client pair for
                            the proxies (CN envoy, from the operator's CA) in
                            this Secret of --cert-secret's namespace (tls.crt,
                            tls.key, ca.crt): created, renewed with the CA
  --xds-ack-timeout DUR     xds: how long a push waits for every connected
                            client's ACK before it says Pending (default 10s)
  --xds-push-interval DUR   xds: least time between two builds of the snapshot
                            the clients are served: the first change after
                            this long without one is built and pushed at once,
                            later ones fold into the next build (default 100ms)
  --xds-busy-push-interval DUR
                            xds: the same while admission is busy (50 webhook
                            calls a second or more), so that builds leave the
                            event loop to the webhooks; a change then waits at
                            most this plus one build (default 1s)
  --xds-forget-unreachable-after DUR
                            xds: how long a client whose connection went
                            silent (no FIN: a partition, a lost node) still
                            counts as holding what it held, so that a deleted
                            route it may serve keeps its finalizer (default 10m;
                            seen on the plaintext port only)
  --xds-serve-refused       xds: do not hold back a route a client refuses; the
                            snapshot then stays refused, and every other
                            change with it, until the route changes (by
                            default the server finds the route and holds it
                            back: docs/tenancy.md)
  --deprogram-timeout DUR   how long a deleted route waits for the data plane
                            before it says DeprogramStuck (default 2m)
  --tls-expiry-warning DUR  a certificate in a TLS Secret a route references
                            that expires within this is reported: a Warning
                            event CertificateExpiring on each such route (the
                            metric edge_operator_tls_certificate_expiry_timestamp_seconds
                            has every notAfter) (default 336h, 14 days)
  --client-ca FILE          PEM CA bundle: /validate and /mutate answer only
                            callers with a client certificate it signed (the
                            apiserver, configured as in docs/install.md); the
                            apiserver cannot present one to /convert
  --debug-routes            serve GET /debug/xds (xds) and /debug/dataplane,
                            POST /debug/dataplane/fail-next (memory), to the
                            callers /reconcile takes; for tests and the demo
  --metrics-auth            /metrics answers only a bearer token the apiserver
                            accepts (TokenReview) whose user RBAC lets \`get\`
                            the non-resource URL /metrics (SubjectAccessReview);
                            needs cluster access. The chart sets it (metrics.auth)
  --max-connections N       HTTPS connections held at once, by all callers
                            (default 1024; about 32 KiB of memory each); at the
                            cap a new one takes the place of one that sent no
                            request, or of an idle one of the busiest address
  --max-connections-per-peer N
                            HTTPS connections one remote address may hold at
                            once (default 256); past it, new ones are closed
  --shutdown-delay DUR      on SIGTERM, keep serving this long (readiness
                            already failing, every answer Connection: close)
                            before the listener closes (default 0; the chart: 5s)
  -h, --help                this text
${certFlagsHelp}${helpFooter([
  ...CLUSTER_ENV,
  {
    name: "POD_NAMESPACE",
    what: "the pod's namespace (downward API): --dataplane-namespace's default, and where the ACK records are",
  },
  {
    name: "POD_NAME",
    what: "the pod's name (downward API): with POD_NAMESPACE, xds writes its clients' ACK record Lease",
  },
  { name: "POD_UID", what: "the pod's uid (downward API): the ACK record's owner, so it goes with the pod" },
  { name: ACK_LEASE_PREFIX_ENV, what: "the ACK record Leases' name prefix (default edge-operator-xds)" },
  {
    name: ACK_LEASE_SECONDS_ENV,
    what: "how long an ACK record counts without a renewal, 1..3600 (default 15)",
  },
  {
    name: ACK_LEASE_SLOTS_ENV,
    what: "the chart's pre-made ACK record Leases (PREFIX-0 .. PREFIX-(N-1)): each replica claims a free one instead of making its own (unset: one Lease per pod, named after it)",
  },
])}`;

/** serve's flags: what the parts are made from (ServeConfig), and the listener's own. */
export interface ServeOptions extends ServeConfig {
  listen: string;
  kubeconfig?: string;
  /** --context: the kubeconfig context. */
  context?: string;
  shutdownDelayMs: number;
  /** --max-connections: HTTPS connections held at once. */
  maxConnections: number;
  /** --max-connections-per-peer: HTTPS connections one remote address may hold. */
  maxConnectionsPerPeer: number;
  /** --metrics-auth: /metrics behind TokenReview + SubjectAccessReview. */
  metricsAuth: boolean;
}

/** The webhooks the apiserver can call with a client certificate (admission only: see --client-ca). */
export const CLIENT_CERT_PATHS: ReadonlySet<string> = new Set(["/validate", "/mutate"]);

export function parseServeArgs(argv: string[]): ServeOptions | "help" {
  const { values } = parseArgs({
    args: argv,
    options: {
      listen: { type: "string", default: "0.0.0.0:9443" },
      "tls-cert": { type: "string" },
      "tls-key": { type: "string" },
      "convert-body-limit": { type: "string", default: "64" },
      ...clusterFlagOptions,
      dataplane: { type: "string", default: "memory" },
      "dataplane-namespace": { type: "string", default: process.env.POD_NAMESPACE ?? "default" },
      "dataplane-configmap": { type: "string", default: "edge-envoy-xds" },
      "deprogram-timeout": { type: "string", default: "2m" },
      "tls-expiry-warning": { type: "string", default: "336h" },
      "xds-listen": { type: "string", default: "127.0.0.1:18000" },
      "xds-plaintext": { type: "boolean", default: false },
      "xds-plaintext-listen": { type: "string" },
      "xds-client-ca": { type: "string" },
      "xds-client-auth": { type: "string" },
      "xds-client-cert-secret": { type: "string" },
      "debug-routes": { type: "boolean", default: false },
      "xds-ack-timeout": { type: "string", default: "10s" },
      "xds-push-interval": { type: "string", default: "100ms" },
      "xds-busy-push-interval": { type: "string", default: "1s" },
      "xds-forget-unreachable-after": { type: "string", default: "10m" },
      "xds-serve-refused": { type: "boolean", default: false },
      "client-ca": { type: "string" },
      "shutdown-delay": { type: "string", default: "0" },
      "max-connections": { type: "string", default: String(MAX_CONNECTIONS) },
      "max-connections-per-peer": { type: "string", default: String(MAX_CONNECTIONS_PER_PEER) },
      "metrics-auth": { type: "boolean", default: false },
      help: { type: "boolean", short: "h" },
      ...certFlagOptions,
    },
    strict: true,
  });
  if (values.help) return "help";
  const certs = parseCertFlags(values);
  if (!certs && (!values["tls-cert"] || !values["tls-key"])) {
    throw new UsageError("--tls-cert and --tls-key are required (or --cert-secret)");
  }
  const limit = Number(values["convert-body-limit"]);
  if (!Number.isFinite(limit) || limit <= 0)
    throw new UsageError("--convert-body-limit must be a positive number of MiB");
  listenAddress("--listen", values.listen);
  const maxConnections = positiveInteger("--max-connections", values["max-connections"]);
  const maxConnectionsPerPeer = positiveInteger(
    "--max-connections-per-peer",
    values["max-connections-per-peer"],
  );
  if (maxConnectionsPerPeer > maxConnections)
    throw new UsageError(
      `--max-connections-per-peer (${maxConnectionsPerPeer}) must not be more than --max-connections (${maxConnections})`,
    );
  const dataPlane = values.dataplane as DataPlaneKind;
  if (!DATA_PLANES.includes(dataPlane)) {
    throw new UsageError(
      `--dataplane must be one of ${DATA_PLANES.join(", ")}, got ${JSON.stringify(values.dataplane)}`,
    );
  }
  listenAddress("--xds-listen", values["xds-listen"]);
  const plaintextListen = values["xds-plaintext-listen"];
  if (plaintextListen !== undefined && !/^(\[[^\]]+\]|[^:]*):\d{1,5}$/.test(plaintextListen))
    throw new UsageError(`--xds-plaintext-listen must be HOST:PORT, got ${JSON.stringify(plaintextListen)}`);
  if (plaintextListen !== undefined) listenAddress("--xds-plaintext-listen", plaintextListen);
  const xdsOnly = (
    ["xds-plaintext-listen", "xds-client-ca", "xds-client-auth", "xds-client-cert-secret"] as const
  ).find((k) => values[k] !== undefined);
  if (xdsOnly && dataPlane !== "xds") throw new UsageError(`--${xdsOnly} needs --dataplane xds`);
  const auth = values["xds-client-auth"];
  if (auth !== undefined && auth !== "required" && auth !== "none")
    throw new UsageError(`--xds-client-auth must be required or none, got ${JSON.stringify(auth)}`);
  for (const k of ["xds-client-ca", "xds-client-cert-secret"] as const)
    if (values[k] !== undefined && values["xds-plaintext"])
      throw new UsageError(`--${k} needs TLS on the ADS port: drop --xds-plaintext`);
  if (auth === "required" && values["xds-plaintext"])
    throw new UsageError("--xds-client-auth=required needs TLS on the ADS port: drop --xds-plaintext");
  // Mutual TLS whenever a client CA is known: the ADS port serves every route to whoever connects.
  const caKnown = values["xds-client-ca"] !== undefined || certs !== undefined;
  if (auth === "required" && !caKnown)
    throw new UsageError(
      "--xds-client-auth=required needs a client CA: --xds-client-ca FILE, or --cert-secret",
    );
  const xdsClientAuth = auth === "none" || !caKnown || values["xds-plaintext"] ? "none" : "required";
  const clientSecretName = values["xds-client-cert-secret"];
  if (clientSecretName !== undefined && !certs)
    throw new UsageError("--xds-client-cert-secret needs --cert-secret: the pair is issued by its CA");
  let client: ManagedCertOptions["client"];
  if (clientSecretName !== undefined && certs) {
    try {
      client = { secret: parseSecretRef(`${certs.secret.namespace}/${clientSecretName}`) };
    } catch {
      throw new UsageError(
        `--xds-client-cert-secret must be a Secret name (DNS-1123 subdomain), got ${JSON.stringify(clientSecretName)}`,
      );
    }
    if (client.secret.name === certs.secret.name)
      throw new UsageError("--xds-client-cert-secret must differ from --cert-secret: it holds no CA key");
  }
  return {
    dataPlane,
    xdsListen: values["xds-listen"],
    xdsPlaintext: values["xds-plaintext"] ?? false,
    ...(plaintextListen !== undefined ? { xdsPlaintextListen: plaintextListen } : {}),
    ...(values["xds-client-ca"] !== undefined ? { xdsClientCaFile: values["xds-client-ca"] } : {}),
    xdsClientAuth,
    debugRoutes: values["debug-routes"] ?? false,
    xdsHoldRefused: !(values["xds-serve-refused"] ?? false),
    xdsAckTimeoutMs: parseDuration("--xds-ack-timeout", values["xds-ack-timeout"]),
    xdsPushIntervalMs: parseDuration("--xds-push-interval", values["xds-push-interval"]),
    xdsBusyPushIntervalMs: parseDuration("--xds-busy-push-interval", values["xds-busy-push-interval"]),
    xdsForgetUnreachableAfterMs: parseDuration(
      "--xds-forget-unreachable-after",
      values["xds-forget-unreachable-after"],
    ),
    dataPlaneNamespace: values["dataplane-namespace"],
    dataPlaneConfigMap: values["dataplane-configmap"],
    deprogramTimeoutMs: parseDuration("--deprogram-timeout", values["deprogram-timeout"]),
    tlsExpiryWarningMs: parseDuration("--tls-expiry-warning", values["tls-expiry-warning"]),
    shutdownDelayMs: parseDuration("--shutdown-delay", values["shutdown-delay"]),
    maxConnections,
    maxConnectionsPerPeer,
    metricsAuth: values["metrics-auth"] ?? false,
    ...(values["client-ca"] ? { clientCaFile: values["client-ca"] } : {}),
    listen: values.listen,
    tlsCert: values["tls-cert"] ?? "",
    tlsKey: values["tls-key"] ?? "",
    convertBodyLimit: Math.floor(limit * MiB),
    ...(values.kubeconfig ? { kubeconfig: values.kubeconfig } : {}),
    ...(values.context ? { context: values.context } : {}),
    ...(certs ? { certs: client ? { ...certs, client } : certs } : {}),
  };
}

function positiveInteger(flag: string, value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < 1)
    throw new UsageError(`${flag} must be a positive integer, got ${JSON.stringify(value)}`);
  return n;
}

/** The files the flags name, readable before anything starts (the parser takes any path; tests parse made-up ones). */
function checkFiles(opts: ServeOptions): void {
  if (!opts.certs) tlsPairFiles("--tls-cert", opts.tlsCert, "--tls-key", opts.tlsKey);
  if (opts.clientCaFile) readableFile("--client-ca", opts.clientCaFile);
  if (opts.xdsClientCaFile) readableFile("--xds-client-ca", opts.xdsClientCaFile);
}

/** Who may read /metrics with --metrics-auth: `get` on the non-resource URL, checked by the apiserver. */
function metricsCheck(opts: ServeOptions, calls: KubeCallObserver): AppOptions["metricsAuth"] {
  if (!opts.metricsAuth) return undefined;
  const access = optionalClusterAccess(opts);
  if (!access)
    throw new UsageError(
      "--metrics-auth needs cluster access for its TokenReviews: pass --kubeconfig, set KUBECONFIG, write ~/.kube/config, or run in a cluster",
    );
  return callerCheck(
    tokenReviewAuth(kubeClient(access, { metrics: calls }), { access: { path: METRICS_PATH, verb: "get" } }),
  );
}

/** What a test may inject into serve (test/harness/stalling-serve.ts, poisoning-serve.ts); the shipped command injects nothing. */
export type ServeInjections = Pick<ServeDeps, "beforePush" | "build">;

export function serveCommandWith(inject: ServeInjections): Command {
  return {
    help,
    run: (argv, logger) => runServe(argv, logger, inject),
  };
}

export const serveCommand: Command = serveCommandWith({});

async function runServe(argv: string[], logger: Logger, inject: ServeInjections): Promise<number> {
  const opts = parseServeArgs(argv);
  if (opts === "help") {
    process.stdout.write(help);
    return 0;
  }
  const { host, port } = listenAddress("--listen", opts.listen);
  checkFiles(opts);
  const access = optionalClusterAccess(opts);
  const metrics = createServerMetrics(createRegistry());
  const calls = kubeClientMetrics(metrics.registry);
  const metricsAuth = metricsCheck(opts, calls);
  let tlsLoaded = false;
  // The key pair first: the ADS port (xds) serves the same one, and follows its reloads.
  const tls = await serveTls(opts, logger, calls);
  const parts = await assembleServe(opts, {
    log: logger,
    metrics,
    access,
    ...("cert" in tls.tls ? { pair: tls.tls } : {}),
    ...(tls.caBundle ? { caBundle: tls.caBundle } : {}),
    ...inject,
  });
  const clientCa = opts.clientCaFile ? readFileSync(opts.clientCaFile, "utf8") : undefined;
  const app = createApp({
    handlers: [...parts.handlers],
    ready: () => tlsLoaded,
    log: logger,
    metrics,
    ...(metricsAuth ? { metricsAuth } : {}),
    ...(clientCa ? { clientCertPaths: CLIENT_CERT_PATHS } : {}),
  });
  const running = await startHttpsServer(app, {
    host,
    port,
    tls: tls.tls,
    log: logger,
    onReload: (pair) => parts.reloadTls(pair),
    shutdownDelayMs: opts.shutdownDelayMs,
    maxConnections: opts.maxConnections,
    maxConnectionsPerPeer: opts.maxConnectionsPerPeer,
    ...(clientCa ? { clientCa } : {}),
  });
  tls.attach(running);
  tlsLoaded = true;
  logger.info({ address: running.address }, "serving");

  await new Promise<void>((resolve) => {
    const onSignal = (sig: NodeJS.Signals) => {
      logger.info(
        { sig, delayMs: opts.shutdownDelayMs },
        "stopping: not ready, serving on through the shutdown delay",
      );
      tlsLoaded = false;
      resolve();
    };
    process.once("SIGTERM", onSignal);
    process.once("SIGINT", onSignal);
  });
  tls.stop();
  await parts.stop();
  await running.stop();
  logger.info("stopped");
  return 0;
}
