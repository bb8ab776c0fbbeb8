// What `edge-operator watch` runs, assembled in one place and returned as one
// handle: the metrics and health listener (first, so a port in use fails the
// command before any watch starts) and the watcher (informers, work queue,
// leader lease) calling /reconcile through the client it is given.

import http from "node:http";
import type { AddressInfo } from "node:net";
import type { KubeClient } from "../kube/client.js";
import type { Logger } from "../observability/logger.js";
import type { Registry } from "../observability/metrics.js";
import { parseListen } from "../server/https.js";
import type { ReconcileClient } from "../watcher/reconcile-client.js";
import { startWatcher, type RunningWatcher } from "../watcher/watcher.js";

/** What the parts are made from: watch's flags, as parsed. */
export interface WatchConfig {
  reconcileUrl: string;
  leaderElect: boolean;
  leaseNamespace: string;
  leaseName: string;
  leaseDurationMs: number;
  identity: string;
  concurrency: number;
  qps: number;
  burst: number;
  routeKeyQps: number;
  routeKeyBurst: number;
  resyncMs: number;
  snapshotHoldOffMs: number;
  snapshotMaxHoldOffMs: number;
  watchTimeoutSeconds: number;
  metricsListen?: string;
  unhealthyAfterMs: number;
}

export interface WatchDeps {
  log: Logger;
  registry: Registry;
  kube: KubeClient;
  /** POST /reconcile, its token and CA already checked. */
  reconcile: ReconcileClient;
}

/** What watch runs, as one handle. */
export interface WatchParts {
  readonly watcher: RunningWatcher;
  /** Finishes the calls in flight, releases the lease, closes the listener. */
  stop(): Promise<void>;
}

export async function assembleWatch(config: WatchConfig, deps: WatchDeps): Promise<WatchParts> {
  const { log, registry } = deps;
  let watcher: RunningWatcher | undefined = undefined;
  const metricsServer = config.metricsListen
    ? await startMetricsServer(config.metricsListen, registry, config.identity, () => watcher, log)
    : undefined;
  const running = startWatcher({
    kube: deps.kube,
    reconcile: deps.reconcile,
    log,
    registry,
    concurrency: config.concurrency,
    queue: {
      qps: config.qps,
      burst: config.burst,
      snapshotHoldOffMs: config.snapshotHoldOffMs,
      snapshotMaxHoldOffMs: config.snapshotMaxHoldOffMs,
    },
    routeKeys: { qps: config.routeKeyQps, burst: config.routeKeyBurst },
    resyncMs: config.resyncMs,
    health: { windowMs: config.unhealthyAfterMs },
    watchTimeoutSeconds: config.watchTimeoutSeconds,
    ...(config.leaderElect
      ? {
          leaderElection: {
            namespace: config.leaseNamespace,
            name: config.leaseName,
            identity: config.identity,
            leaseDurationMs: config.leaseDurationMs,
          },
        }
      : {}),
  });
  watcher = running;
  log.info(
    { identity: config.identity, reconcileUrl: config.reconcileUrl, leaderElect: config.leaderElect },
    "watching",
  );
  return {
    watcher: running,
    stop: async () => {
      await running.stop();
      await new Promise<void>((resolve) =>
        metricsServer ? metricsServer.close(() => resolve()) : resolve(),
      );
    },
  };
}

/**
 * Where --metrics-listen binds. No host: the pod's own address, where the
 * kubelet's probes and a scraper dial it, and not every interface; outside a
 * pod (no POD_IP), loopback.
 */
export function metricsAddress(listen: string, env: NodeJS.ProcessEnv): { host: string; port: number } {
  const at = parseListen(listen);
  if (!listen.startsWith(":")) return at;
  return { host: env.POD_IP || "127.0.0.1", port: at.port };
}

/**
 * GET /metrics, /healthz and /readyz on --metrics-listen; `watcher` is read per
 * request (it starts after). Liveness: /reconcile reachable. Readiness: caches
 * synced, leader or not, so a rollout waits for a replica that could take over warm.
 */
async function startMetricsServer(
  listen: string,
  registry: Registry,
  identity: string,
  watcher: () => RunningWatcher | undefined,
  logger: Logger,
): Promise<http.Server> {
  const { host, port } = metricsAddress(listen, process.env);
  // One rendering shared by the callers that ask while it is made.
  let rendering: Promise<string> | undefined;
  const server = http.createServer((req, res) => {
    const path = (req.url ?? "").split("?")[0];
    if (path === "/metrics") {
      rendering ??= registry.metrics().finally(() => (rendering = undefined));
      rendering.then(
        (text) => res.writeHead(200, { "content-type": registry.contentType }).end(text),
        (err: Error) => res.writeHead(500).end(err.message),
      );
    } else if (path === "/healthz" || path === "/readyz") {
      const w = watcher();
      const health = w?.health() ?? { healthy: true };
      const synced = w?.synced() ?? false;
      const ok = path === "/healthz" ? health.healthy : synced;
      const body = {
        ok,
        leader: w?.isLeader() ?? false,
        synced,
        queueDepth: w?.queue.len() ?? 0,
        identity,
        ...(health.healthy
          ? {}
          : {
              unhealthy: `${health.failures} calls in a row to /reconcile got no reply over ${Math.round(health.forMs / 1000)} s; last: ${health.lastError}`,
            }),
      };
      res.writeHead(ok ? 200 : 503, { "content-type": "application/json" }).end(JSON.stringify(body));
    } else {
      res.writeHead(404, { "content-type": "application/json" }).end('{"error":"not found"}');
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject).listen(port, host, resolve);
  });
  const addr = server.address() as AddressInfo;
  logger.info({ metrics: `http://${addr.address}:${addr.port}` }, "metrics listening");
  return server;
}
