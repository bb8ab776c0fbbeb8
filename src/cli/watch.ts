import { X509Certificate, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { podNamespace } from "../kube/service-account.js";
import os from "node:os";
import { parseArgs } from "node:util";
import { parseListen } from "../server/https.js";
import { createRegistry } from "../observability/metrics.js";
import { kubeClient } from "../kube/client.js";
import { kubeClientMetrics } from "../kube/client-metrics.js";
import type { ClusterAccess } from "../kube/kubeconfig.js";
import type { Logger } from "../observability/logger.js";
import { reconcileClient, tokenSource, type ReconcileClient } from "../watcher/reconcile-client.js";
import { ReloadingFile } from "../watcher/reloading-file.js";
import { assembleWatch, type WatchConfig } from "../wiring/watch-parts.js";
import { UsageError, type Command } from "./command.js";
import { clusterFlagsHelp, clusterFlagOptions, requiredClusterAccess } from "./cluster-flags.js";
import { CLUSTER_ENV, helpFooter } from "./help-footer.js";
import { fileReason } from "../kube/file-reason.js";
import { parseDuration } from "./duration-flag.js";

const help = `Usage: edge-operator watch --reconcile-url URL [options]

Watches EdgeRoutes (v2), Services and EndpointSlices and calls POST /reconcile
for each key that needs it: a route key (namespace/name) or the snapshot key.
Leader-elected on a Lease: a standby keeps its caches warm and takes over when
the leader stops renewing.

Options:
  --reconcile-url URL         where POST /reconcile is served (required)
${clusterFlagsHelp(30)}
  --token-file FILE           bearer token for /reconcile (default: the service
                              account token if mounted, else the kubeconfig user's)
  --reconcile-ca FILE         PEM CA bundle to verify /reconcile's certificate
                              (followed as it changes, as is --token-file)
  --lease-namespace NS        namespace of the Lease (default: the pod's, else default)
  --lease-name NAME           name of the Lease (default edge-operator-watcher)
  --lease-duration DURATION   how long a silent leader keeps the lease (default 15s)
  --no-leader-elect           always lead (a single replica)
  --identity ID               this replica's name in the Lease (default: the host
                              name, _ and 8 random hex digits)
  --concurrency N             route keys reconciled at once (default 4)
  --qps Q, --burst B          overall limit on retries (default 50, 300)
  --route-key-qps Q, --route-key-burst B  route keys queued per second and at
                              once (default 10, 20); past them a change is left
                              to the snapshot key (0 qps: no limit)
  --resync DURATION           reconcile the snapshot key (every route) this often;
                              0 = never (default 5m)
  --snapshot-hold-off DURATION  the snapshot build's quiet spell: a change after
                              this long without one is built at once; sooner
                              ones wait until changes have been quiet this long
                              (default 200ms; 0: every change at once)
  --snapshot-max-hold-off DURATION  longest a held change waits under steady
                              churn (default 1s)
  --watch-timeout DURATION    server-side watch timeout, jittered (default 5m)
  --metrics-listen HOST:PORT  plain-HTTP /metrics, /healthz (liveness) and
                              /readyz (caches synced) (default: off); with no
                              HOST (:PORT), on $POD_IP only (the chart sets it
                              from the pod's status.podIP), else on 127.0.0.1
  --unhealthy-after DURATION  /healthz fails once 5 or more calls in a row to
                              /reconcile got no reply (refused, TLS, timeout)
                              for this long; any reply ends the run (default 2m)
  -h, --help                  this text

Durations: 300ms, 15s, 5m, 1h, 1m30s.
${helpFooter([
  ...CLUSTER_ENV,
  { name: "POD_IP", what: "the pod's IP (downward API): where --metrics-listen :PORT listens" },
])}`;

/** watch's flags: what the parts are made from (WatchConfig), and how the cluster and /reconcile are reached. */
export interface WatchOptions extends WatchConfig {
  kubeconfig?: string;
  context?: string;
  tokenFile?: string;
  reconcileCa?: string;
}

function positive(flag: string, text: string, integer: boolean): number {
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n))) {
    throw new UsageError(
      `${flag}: must be a positive ${integer ? "integer" : "number"}, got ${JSON.stringify(text)}`,
    );
  }
  return n;
}

function nonNegative(flag: string, text: string): number {
  const n = Number(text);
  if (!Number.isFinite(n) || n < 0) {
    throw new UsageError(`${flag}: must be a number, 0 or more, got ${JSON.stringify(text)}`);
  }
  return n;
}

function defaultLeaseNamespace(): string {
  try {
    return podNamespace() ?? "default";
  } catch {
    // fall through
  }
  return "default";
}

export function parseWatchArgs(argv: string[]): WatchOptions | "help" {
  const { values } = parseArgs({
    args: argv,
    options: {
      "reconcile-url": { type: "string" },
      ...clusterFlagOptions,
      "token-file": { type: "string" },
      "reconcile-ca": { type: "string" },
      "lease-namespace": { type: "string" },
      "lease-name": { type: "string", default: "edge-operator-watcher" },
      "lease-duration": { type: "string", default: "15s" },
      "no-leader-elect": { type: "boolean", default: false },
      identity: { type: "string" },
      concurrency: { type: "string", default: "4" },
      qps: { type: "string", default: "50" },
      burst: { type: "string", default: "300" },
      "route-key-qps": { type: "string", default: "10" },
      "route-key-burst": { type: "string", default: "20" },
      resync: { type: "string", default: "5m" },
      "snapshot-hold-off": { type: "string", default: "200ms" },
      "snapshot-max-hold-off": { type: "string", default: "1s" },
      "watch-timeout": { type: "string", default: "5m" },
      "metrics-listen": { type: "string" },
      "unhealthy-after": { type: "string", default: "2m" },
      help: { type: "boolean", short: "h" },
    },
    strict: true,
  });
  if (values.help) return "help";
  const url = values["reconcile-url"];
  if (!url) throw new UsageError("--reconcile-url is required");
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError(`--reconcile-url: not a URL: ${JSON.stringify(url)}`);
  }
  if (parsed.protocol !== "https:" && parsed.protocol !== "http:") {
    throw new UsageError(`--reconcile-url: must be http:// or https://, got ${JSON.stringify(url)}`);
  }
  const leaseDurationMs = parseDuration("--lease-duration", values["lease-duration"]);
  if (leaseDurationMs < 3000) throw new UsageError("--lease-duration: must be at least 3s");
  const watchTimeoutMs = parseDuration("--watch-timeout", values["watch-timeout"]);
  if (watchTimeoutMs < 1000) throw new UsageError("--watch-timeout: must be at least 1s");
  if (values["metrics-listen"]) {
    try {
      parseListen(values["metrics-listen"]);
    } catch {
      throw new UsageError(
        `--metrics-listen: must be HOST:PORT, got ${JSON.stringify(values["metrics-listen"])}`,
      );
    }
  }
  const unhealthyAfterMs = parseDuration("--unhealthy-after", values["unhealthy-after"]);
  if (unhealthyAfterMs < 1000) throw new UsageError("--unhealthy-after: must be at least 1s");
  const identity = values.identity ?? `${os.hostname()}_${randomBytes(4).toString("hex")}`;
  if (!identity.trim()) throw new UsageError("--identity: must not be empty");
  return {
    reconcileUrl: url,
    ...(values.kubeconfig ? { kubeconfig: values.kubeconfig } : {}),
    ...(values.context ? { context: values.context } : {}),
    ...(values["token-file"] ? { tokenFile: values["token-file"] } : {}),
    ...(values["reconcile-ca"] ? { reconcileCa: values["reconcile-ca"] } : {}),
    leaderElect: !values["no-leader-elect"],
    leaseNamespace: values["lease-namespace"] ?? defaultLeaseNamespace(),
    leaseName: values["lease-name"],
    leaseDurationMs,
    identity,
    concurrency: positive("--concurrency", values.concurrency, true),
    qps: positive("--qps", values.qps, false),
    burst: positive("--burst", values.burst, true),
    routeKeyQps: nonNegative("--route-key-qps", values["route-key-qps"]),
    routeKeyBurst: positive("--route-key-burst", values["route-key-burst"], true),
    resyncMs: parseDuration("--resync", values.resync),
    snapshotHoldOffMs: parseDuration("--snapshot-hold-off", values["snapshot-hold-off"]),
    snapshotMaxHoldOffMs: parseDuration("--snapshot-max-hold-off", values["snapshot-max-hold-off"]),
    watchTimeoutSeconds: Math.round(watchTimeoutMs / 1000),
    ...(values["metrics-listen"] ? { metricsListen: values["metrics-listen"] } : {}),
    unhealthyAfterMs,
  };
}

function readFileOr(flag: string, file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch (err) {
    throw new UsageError(`${flag} ${file}: ${fileReason(err)}`);
  }
}

/** Why a CA bundle cannot be used, or undefined: every certificate in it must parse (a file caught half-written does not). */
export function caBundleProblem(text: string): string | undefined {
  const blocks = text.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) return "holds no PEM certificate";
  for (const [i, block] of blocks.entries()) {
    try {
      new X509Certificate(block);
    } catch (err) {
      return `certificate ${i + 1} does not parse: ${(err as Error).message}`;
    }
  }
  return undefined;
}

/**
 * The client for POST /reconcile, its token and CA checked before anything
 * starts; both files are followed as they change (a rotated CA from the next call).
 */
function reconcileCaller(opts: WatchOptions, access: ClusterAccess, logger: Logger): ReconcileClient {
  if (opts.tokenFile && !readFileOr("--token-file", opts.tokenFile).trim())
    throw new UsageError(`--token-file: ${opts.tokenFile} is empty`);
  let ca: ReloadingFile | undefined;
  if (opts.reconcileCa) {
    const problem = caBundleProblem(readFileOr("--reconcile-ca", opts.reconcileCa));
    if (problem) throw new UsageError(`--reconcile-ca: ${opts.reconcileCa} ${problem}`);
    ca = new ReloadingFile(opts.reconcileCa, {
      check: caBundleProblem,
      onChange: (e) => {
        if (e.taken) logger.info({ file: e.path }, "--reconcile-ca changed: using it from the next call");
        else
          logger.warn(
            { file: e.path, reason: e.reason },
            "--reconcile-ca changed but cannot be used: keeping the last one",
          );
      },
    });
  }
  return reconcileClient({
    url: opts.reconcileUrl,
    token: tokenSource(opts.tokenFile, access.token),
    ...(ca ? { ca: () => ca.current() } : {}),
    maxSockets: opts.concurrency + 1,
  });
}

/** Resolves at SIGTERM or SIGINT. */
function untilSignal(logger: Logger): Promise<void> {
  return new Promise<void>((resolve) => {
    const onSignal = (sig: NodeJS.Signals) => {
      logger.info({ sig }, "stopping: finishing calls in flight, releasing the lease");
      resolve();
    };
    process.once("SIGTERM", onSignal);
    process.once("SIGINT", onSignal);
  });
}

export const watchCommand: Command = {
  help,
  async run(argv, logger) {
    const opts = parseWatchArgs(argv);
    if (opts === "help") {
      process.stdout.write(help);
      return 0;
    }
    const access = requiredClusterAccess(opts);
    const registry = createRegistry();
    const parts = await assembleWatch(opts, {
      log: logger,
      registry,
      kube: kubeClient(access, { metrics: kubeClientMetrics(registry) }),
      reconcile: reconcileCaller(opts, access, logger),
    });
    await untilSignal(logger);
    await parts.stop();
    logger.info("stopped");
    return 0;
  },
};
