import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { createApp } from "../server/app.js";
import { parseListen, startHttpsServer } from "../server/https.js";
import type { Logger } from "../observability/logger.js";
import { createRegistry, createServerMetrics, type ServerMetrics } from "../observability/metrics.js";
import { MiB, type JsonHandler } from "../server/json-handler.js";
import { conversionHandler } from "../server/conversion-review.js";
import { loadKubeConfig } from "../kube/load-kubeconfig.js";
import { admissionHandlers } from "../server/admission-handlers.js";
import { certFlagOptions, certFlagsHelp, parseCertFlags, serveTls } from "./serve-tls.js";
import type { ManagedCertOptions } from "../certs/managed-serving.js";
import {
  DATA_PLANES,
  reconcileHandlers,
  serverCache,
  type DataPlaneKind,
} from "../server/reconcile-setup.js";
import { kubeClient } from "../kube/client.js";
import { parseDuration } from "./duration-flag.js";
import { UsageError, type Command } from "./command.js";

const help = `Usage: edge-operator serve --tls-cert FILE --tls-key FILE [options]

Serves /convert, /validate, /mutate and /reconcile over HTTPS, with /healthz,
/readyz and /metrics. The webhooks need no cluster; /reconcile does.

Options:
  --listen HOST:PORT        address to listen on (default 0.0.0.0:9443)
  --tls-cert FILE           PEM certificate chain (reloaded when the file changes)
  --tls-key FILE            PEM private key
  --convert-body-limit MIB  largest ConversionReview accepted, in MiB (default 64)
  --kubeconfig FILE         cluster access for /reconcile and conflict warnings
                            (default: $KUBECONFIG, then in-cluster)
  --dataplane KIND          memory | envoy-configmap | xds (default memory)
  --dataplane-namespace NS  envoy-configmap: the ConfigMap's namespace (default
                            $POD_NAMESPACE, else default)
  --dataplane-configmap N   envoy-configmap: the ConfigMap's name (default edge-envoy-xds)
  --xds-listen HOST:PORT    xds: where the ADS server (gRPC) listens (default
                            127.0.0.1:18000)
  --xds-plaintext           xds: no TLS on the ADS port (gRPC's own xDS client
                            cannot trust a private CA); bind it to loopback or
                            a pod-local address. Without it the ADS port uses
                            --tls-cert/--tls-key (read at start)
  --xds-ack-timeout DUR     xds: how long a push waits for every connected
                            client's ACK before it says Pending (default 10s)
  --deprogram-timeout DUR   how long a deleted route waits for the data plane
                            before it says DeprogramStuck (default 2m)
  --client-ca FILE          PEM CA bundle: /validate and /mutate answer only
                            callers with a client certificate it signed (the
                            apiserver, configured as in docs/install.md); the
                            apiserver cannot present one to /convert
  --shutdown-delay DUR      on SIGTERM, keep serving this long (readiness
                            already failing, every answer Connection: close)
                            before the listener closes (default 0; the chart: 5s)
  -h, --help                this text
${certFlagsHelp}`;

export interface ServeOptions {
  listen: string;
  tlsCert: string;
  tlsKey: string;
  convertBodyLimit: number;
  kubeconfig?: string;
  dataPlane: DataPlaneKind;
  dataPlaneNamespace: string;
  dataPlaneConfigMap: string;
  deprogramTimeoutMs: number;
  xdsListen: string;
  xdsPlaintext: boolean;
  xdsAckTimeoutMs: number;
  /** --cert-secret: the key pair lives in a Secret instead of files. */
  certs?: ManagedCertOptions;
  /** --client-ca: PEM file of the CA that signs the apiserver's client certificate. */
  clientCaFile?: string;
  shutdownDelayMs: number;
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
      kubeconfig: { type: "string" },
      dataplane: { type: "string", default: "memory" },
      "dataplane-namespace": { type: "string", default: process.env.POD_NAMESPACE ?? "default" },
      "dataplane-configmap": { type: "string", default: "edge-envoy-xds" },
      "deprogram-timeout": { type: "string", default: "2m" },
      "xds-listen": { type: "string", default: "127.0.0.1:18000" },
      "xds-plaintext": { type: "boolean", default: false },
      "xds-ack-timeout": { type: "string", default: "10s" },
      "client-ca": { type: "string" },
      "shutdown-delay": { type: "string", default: "0" },
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
  parseListen(values.listen);
  const dataPlane = values.dataplane as DataPlaneKind;
  if (!DATA_PLANES.includes(dataPlane)) {
    throw new UsageError(
      `--dataplane must be one of ${DATA_PLANES.join(", ")}, got ${JSON.stringify(values.dataplane)}`,
    );
  }
  parseListen(values["xds-listen"]);
  if (dataPlane === "xds" && !values["xds-plaintext"] && certs)
    throw new UsageError(
      "--dataplane xds takes its TLS key pair from --tls-cert/--tls-key files; with --cert-secret use --xds-plaintext",
    );
  return {
    dataPlane,
    xdsListen: values["xds-listen"],
    xdsPlaintext: values["xds-plaintext"] ?? false,
    xdsAckTimeoutMs: parseDuration("--xds-ack-timeout", values["xds-ack-timeout"]),
    dataPlaneNamespace: values["dataplane-namespace"],
    dataPlaneConfigMap: values["dataplane-configmap"],
    deprogramTimeoutMs: parseDuration("--deprogram-timeout", values["deprogram-timeout"]),
    shutdownDelayMs: parseDuration("--shutdown-delay", values["shutdown-delay"]),
    ...(values["client-ca"] ? { clientCaFile: values["client-ca"] } : {}),
    listen: values.listen,
    tlsCert: values["tls-cert"] ?? "",
    tlsKey: values["tls-key"] ?? "",
    convertBodyLimit: Math.floor(limit * MiB),
    ...(values.kubeconfig ? { kubeconfig: values.kubeconfig } : {}),
    ...(certs ? { certs } : {}),
  };
}

/** The handlers the server hosts, one per path. */
export async function buildHandlers(
  opts: ServeOptions,
  log: Logger,
  metrics: ServerMetrics,
  onClose?: (close: () => void) => void,
): Promise<JsonHandler[]> {
  const access = loadKubeConfig(opts.kubeconfig);
  const xdsAt = parseListen(opts.xdsListen);
  // One watch-fed cache per process, shared by /reconcile and the conflict warnings of /validate.
  const cache = access
    ? serverCache(kubeClient(access), { log, registry: metrics.registry }, onClose)
    : undefined;
  return [
    conversionHandler(opts.convertBodyLimit, metrics),
    ...admissionHandlers(access, { log, metrics, ...(cache ? { conflicts: cache.conflicts } : {}) }),
    ...(await reconcileHandlers(
      access,
      {
        dataPlane: opts.dataPlane,
        configMapNamespace: opts.dataPlaneNamespace,
        configMapName: opts.dataPlaneConfigMap,
        deprogramTimeoutMs: opts.deprogramTimeoutMs,
        xds: {
          ...xdsAt,
          ackTimeoutMs: opts.xdsAckTimeoutMs,
          ...(opts.xdsPlaintext || opts.dataPlane !== "xds"
            ? {}
            : { tls: { cert: readFileSync(opts.tlsCert), key: readFileSync(opts.tlsKey) } }),
        },
        ...(onClose ? { onClose } : {}),
        ...(cache ? { cache: cache.state } : {}),
      },
      { log, registry: metrics.registry },
    )),
  ];
}

export const serveCommand: Command = {
  name: "serve",
  summary: "the HTTPS service: /mutate, /validate, /convert, /reconcile",
  help,
  async run(argv, logger) {
    const opts = parseServeArgs(argv);
    if (opts === "help") {
      process.stdout.write(help);
      return 0;
    }
    const { host, port } = parseListen(opts.listen);
    let tlsLoaded = false;
    const metrics = createServerMetrics(createRegistry());
    const closers: (() => void)[] = [];
    const handlers = await buildHandlers(opts, logger, metrics, (close) => closers.push(close));
    const clientCa = opts.clientCaFile ? readFileSync(opts.clientCaFile, "utf8") : undefined;
    const app = createApp({
      handlers,
      ready: () => tlsLoaded,
      log: logger,
      metrics,
      ...(clientCa ? { clientCertPaths: CLIENT_CERT_PATHS } : {}),
    });
    const tls = await serveTls(opts, logger);
    const running = await startHttpsServer(app, {
      host,
      port,
      tls: tls.tls,
      log: logger,
      shutdownDelayMs: opts.shutdownDelayMs,
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
    for (const close of closers) close();
    await running.stop();
    logger.info("stopped");
    return 0;
  },
};
