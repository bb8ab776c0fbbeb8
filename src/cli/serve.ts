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
import { DATA_PLANES, reconcileHandlers, type DataPlaneKind } from "../server/reconcile-setup.js";
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
  --dataplane KIND          memory | envoy-configmap (default memory)
  --dataplane-namespace NS  envoy-configmap: the ConfigMap's namespace (default
                            $POD_NAMESPACE, else default)
  --dataplane-configmap N   envoy-configmap: the ConfigMap's name (default edge-envoy-xds)
  --deprogram-timeout DUR   how long a deleted route waits for the data plane
                            before it says DeprogramStuck (default 2m)
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
  /** --cert-secret: the key pair lives in a Secret instead of files. */
  certs?: ManagedCertOptions;
}

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
  return {
    dataPlane,
    dataPlaneNamespace: values["dataplane-namespace"],
    dataPlaneConfigMap: values["dataplane-configmap"],
    deprogramTimeoutMs: parseDuration("--deprogram-timeout", values["deprogram-timeout"]),
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
): Promise<JsonHandler[]> {
  const access = loadKubeConfig(opts.kubeconfig);
  return [
    conversionHandler(opts.convertBodyLimit, metrics),
    ...admissionHandlers(access, { log, metrics }),
    ...(await reconcileHandlers(
      access,
      {
        dataPlane: opts.dataPlane,
        configMapNamespace: opts.dataPlaneNamespace,
        configMapName: opts.dataPlaneConfigMap,
        deprogramTimeoutMs: opts.deprogramTimeoutMs,
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
    const handlers = await buildHandlers(opts, logger, metrics);
    const app = createApp({ handlers, ready: () => tlsLoaded, log: logger, metrics });
    const tls = await serveTls(opts, logger);
    const running = await startHttpsServer(app, { host, port, tls: tls.tls, log: logger });
    tls.attach(running);
    tlsLoaded = true;
    logger.info({ address: running.address }, "serving");

    await new Promise<void>((resolve) => {
      const onSignal = (sig: NodeJS.Signals) => {
        logger.info({ sig }, "stopping: finishing in-flight requests");
        tlsLoaded = false;
        resolve();
      };
      process.once("SIGTERM", onSignal);
      process.once("SIGINT", onSignal);
    });
    tls.stop();
    await running.stop();
    logger.info("stopped");
    return 0;
  },
};
