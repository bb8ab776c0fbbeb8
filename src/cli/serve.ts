import { parseArgs } from "node:util";
import { createApp } from "../server/app.js";
import { parseListen, startHttpsServer } from "../server/https.js";
import { logger } from "../server/logger.js";
import { MiB, type JsonRoute } from "../server/json-route.js";
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
  -h, --help                this text
`;

export interface ServeOptions {
  listen: string;
  tlsCert: string;
  tlsKey: string;
  convertBodyLimit: number;
  kubeconfig?: string;
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
      help: { type: "boolean", short: "h" },
    },
    strict: true,
  });
  if (values.help) return "help";
  if (!values["tls-cert"] || !values["tls-key"]) throw new UsageError("--tls-cert and --tls-key are required");
  const limit = Number(values["convert-body-limit"]);
  if (!Number.isFinite(limit) || limit <= 0) throw new UsageError("--convert-body-limit must be a positive number of MiB");
  parseListen(values.listen);
  return {
    listen: values.listen,
    tlsCert: values["tls-cert"],
    tlsKey: values["tls-key"],
    convertBodyLimit: Math.floor(limit * MiB),
    ...(values.kubeconfig ? { kubeconfig: values.kubeconfig } : {}),
  };
}

/** The routes the server hosts; each module owns its handler. */
export async function buildRoutes(_opts: ServeOptions): Promise<JsonRoute[]> {
  return [];
}

export const serveCommand: Command = {
  name: "serve",
  summary: "the HTTPS service: /mutate, /validate, /convert, /reconcile",
  help,
  async run(argv) {
    const opts = parseServeArgs(argv);
    if (opts === "help") {
      process.stdout.write(help);
      return 0;
    }
    const { host, port } = parseListen(opts.listen);
    let tlsLoaded = false;
    const routes = await buildRoutes(opts);
    const app = createApp({ routes, ready: () => tlsLoaded });
    const running = await startHttpsServer(app, { host, port, tls: { certFile: opts.tlsCert, keyFile: opts.tlsKey } });
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
    await running.stop();
    logger.info("stopped");
    return 0;
  },
};
