// Assembles what /reconcile needs from the serve command's flags: the cluster
// client, the data plane, the caller check, and the debug surface that tests
// and the demo read (memory: the snapshot held; xds: the clients and their ACKs).

import { setTimeout as sleep } from "node:timers/promises";
import { errorReply, type JsonHandler } from "./json-handler.js";
import type { Logger } from "../observability/logger.js";
import type { Registry } from "../observability/metrics.js";
import { createReconcileMetrics } from "../reconcile/reconcile-metrics.js";
import { kubeClient } from "../kube/client.js";
import type { ClusterAccess } from "../kube/kubeconfig.js";
import type { DataPlane } from "../dataplane/dataplane.js";
import { MemoryDataPlane } from "../dataplane/memory.js";
import type { XdsDataPlane } from "../dataplane/xds/xds-dataplane.js";
import type { AdsTls } from "../dataplane/xds/ads-tls.js";
import { callerCheck, tokenReviewAuth, type CallerAuth } from "./caller-auth.js";
import { kubeEventRecorder } from "../reconcile/events.js";
import { reconcileHandler } from "./reconcile-handler.js";
import { Reconciler } from "../reconcile/reconciler.js";
import { ClusterState } from "../reconcile/cluster-state.js";
import { cachedView } from "../reconcile/cluster-reader.js";
import { SnapshotPipeline } from "../reconcile/snapshot-pipeline.js";
import { reconcileOnStandingChange } from "../reconcile/standing-trigger.js";
import { SNAPSHOT_KEY } from "../reconcile/protocol.js";
import { statusWritePace } from "../reconcile/status-pace.js";
import { ConflictIndex } from "../webhooks/conflicts.js";
import type { KubeClient } from "../kube/client.js";

export const DATA_PLANES = ["memory", "envoy-configmap", "xds"] as const;
export type DataPlaneKind = (typeof DATA_PLANES)[number];

/** Longest the snapshot key waits out an admission burst before it runs anyway. */
const SNAPSHOT_MAX_DEFER_MS = 5_000;

export interface ReconcileSetupOptions {
  dataPlane: DataPlaneKind;
  /** envoy-configmap: where the ConfigMap lives. */
  configMapNamespace: string;
  configMapName: string;
  deprogramTimeoutMs: number;
  /** xds: where the ADS server listens, and its TLS key pair (absent: plaintext). */
  xds?: {
    readonly host: string;
    readonly port: number;
    readonly tls?: AdsTls;
    /** A second, plaintext port on the same server, for gRPC's own xDS clients. */
    readonly plaintext?: { readonly host: string; readonly port: number };
    readonly ackTimeoutMs?: number;
    readonly forgetUnreachableAfterMs?: number;
  };
  /** GET /debug/xds, /debug/dataplane*: off unless asked for (serve --debug-routes). */
  debugRoutes?: boolean;
  /** Told how to stop what this started (the ADS server), for a graceful stop. */
  onClose?: (close: () => void | Promise<void>) => void;
  /** Told how to hand a renewed serving key pair (and, with mutual TLS, client CA) to the ADS port's TLS. */
  onTlsReload?: (reload: (pair: { cert: string; key: string }, clientCa?: string) => void) => void;
  /** The server's cache (serverCache); absent: one of its own. */
  cache?: ClusterState;
  /**
   * Whether admission is in a burst (absent: never). While it is, the snapshot
   * key waits, its status writes are paced, and the xds sink's own builds
   * space out (docs/architecture.md, "Admission first").
   */
  admissionBusy?: () => boolean;
  /** How long /reconcile waits for the cache to reach what the caller saw before it answers 503 (default 10 s). */
  seenWaitMs?: number;
}

/** One EdgeRoute watch per process: the reconcile's cache and the admission conflict index share it. */
export interface ServerCache {
  readonly state: ClusterState;
  readonly conflicts: ConflictIndex;
}

/** Starts the server's watch-fed cache; `onClose` is told how to stop it. */
export function serverCache(
  kube: KubeClient,
  deps: ReconcileDeps,
  onClose?: (close: () => void) => void,
): ServerCache {
  const conflicts = new ConflictIndex(undefined, { log: deps.log });
  const state = new ClusterState({
    client: kube,
    log: deps.log,
    registry: deps.registry,
    onRouteEvent: (type, obj) => conflicts.apply(type, obj),
  });
  const stop = new AbortController();
  state.start(stop.signal);
  onClose?.(() => stop.abort());
  return { state, conflicts };
}

export interface ReconcileDeps {
  log: Logger;
  /** The reconcile registers its metrics here. */
  registry: Registry;
}

export async function reconcileHandlers(
  access: ClusterAccess | undefined,
  opts: ReconcileSetupOptions,
  deps: ReconcileDeps,
): Promise<JsonHandler[]> {
  const { log: logger } = deps;
  if (!access) return [reconcileHandler(undefined, undefined)];
  const kube = kubeClient(access);
  const cache = opts.cache ?? serverCache(kube, deps, opts.onClose).state;
  let dataPlane: DataPlane;
  const memory = opts.dataPlane === "memory" ? new MemoryDataPlane() : undefined;
  let xds: XdsDataPlane | undefined;
  if (memory) {
    dataPlane = memory;
  } else if (opts.dataPlane === "xds") {
    // Loaded only for this sink: gRPC stays out of the other sinks' memory.
    const { XdsDataPlane } = await import("../dataplane/xds/xds-dataplane.js");
    const { ackIdentityFromEnv } = await import("../dataplane/xds/ack-records-lease.js");
    const where = opts.xds ?? { host: "127.0.0.1", port: 18000 };
    // In a pod (POD_NAME, POD_NAMESPACE): ACK state shared with the other replicas through Leases.
    const identity = ackIdentityFromEnv(process.env);
    xds = new XdsDataPlane({
      log: logger,
      ...(identity ? { acks: { client: kube, identity } } : {}),
      ...(where.tls ? { tls: where.tls } : {}),
      ...(where.ackTimeoutMs !== undefined ? { ackTimeoutMs: where.ackTimeoutMs } : {}),
      ...(where.forgetUnreachableAfterMs !== undefined
        ? { forgetUnreachableAfterMs: where.forgetUnreachableAfterMs }
        : {}),
    });
    const port = await xds.listen(where.host, where.port);
    logger.info(
      {
        host: where.host,
        port,
        tls: where.tls !== undefined,
        mutualTLS: where.tls?.clientCa !== undefined,
        ackLeasePrefix: identity?.prefix,
      },
      "ADS server listening",
    );
    const started = xds;
    opts.onClose?.(() => started.stop());
    if (where.tls) opts.onTlsReload?.((pair, clientCa) => started.server.reloadTls(pair, clientCa));
    if (where.plaintext) {
      const p = await xds.server.listen(where.plaintext.host, where.plaintext.port, true);
      logger.info({ host: where.plaintext.host, port: p, tls: false }, "ADS server listening (plaintext)");
    }
    dataPlane = xds;
  } else {
    const { EnvoyConfigMapDataPlane } = await import("../dataplane/envoy-configmap.js");
    dataPlane = new EnvoyConfigMapDataPlane(kube, {
      namespace: opts.configMapNamespace,
      name: opts.configMapName,
    });
  }
  const auth: CallerAuth = tokenReviewAuth(kube);
  const stallMs = faultStallMs(process.env[FAULT_STALL_ENV]);
  if (stallMs > 0)
    logger.warn({ stallMs }, `${FAULT_STALL_ENV} is set: every snapshot reconcile stalls before its push`);
  const metrics = createReconcileMetrics(deps.registry);
  // The process's one pipeline: the serve loop's build is the snapshot reconcile's.
  const snapshots = new SnapshotPipeline({
    metrics,
    // Clusters and route configurations point their clients back at ADS.
    ...(xds ? { snapshot: { configSource: { kind: "ads" as const } } } : {}),
  });
  if (xds) {
    // Every replica serving xDS serves its own cache's snapshot, /reconcile or not.
    const stop = snapshots.serve(cache, xds, {
      log: logger,
      ...(opts.admissionBusy ? { busy: opts.admissionBusy } : {}),
    });
    opts.onClose?.(stop);
  }
  const reconciler = new Reconciler(kube, dataPlane, kubeEventRecorder(kube, logger), logger, {
    view: cachedView(cache),
    deprogramTimeoutMs: opts.deprogramTimeoutMs,
    metrics,
    snapshots,
    ...(opts.admissionBusy ? { statusPace: statusWritePace(opts.admissionBusy) } : {}),
    ...(stallMs > 0
      ? {
          beforePush: (signal: AbortSignal | undefined) => {
            // The fault suite reads this line to know a reconcile is in the window.
            logger.warn({ stallMs }, FAULT_STALL_LINE);
            return sleep(stallMs, undefined, { signal });
          },
        }
      : {}),
  });
  const seenWait = {
    waitFor: cache.waitFor.bind(cache),
    seen: () => cache.seen(),
    boundMs: opts.seenWaitMs ?? 10_000,
  };
  if (xds) {
    // A client connecting, leaving or answering late changes no object the watcher sees.
    const stop = reconcileOnStandingChange(
      xds,
      async (signal) => {
        if (!(await cache.waitFor({}, seenWait.boundMs, signal)))
          throw new Error("the server's cache has not finished its first list");
        return reconciler.reconcile(SNAPSHOT_KEY, signal);
      },
      {
        log: logger,
        ...(opts.admissionBusy ? { busy: opts.admissionBusy, maxDeferMs: SNAPSHOT_MAX_DEFER_MS } : {}),
      },
    );
    opts.onClose?.(stop);
  }
  const handlers = [
    reconcileHandler(
      reconciler,
      auth,
      seenWait,
      opts.admissionBusy ? { busy: opts.admissionBusy, maxMs: SNAPSHOT_MAX_DEFER_MS } : undefined,
    ),
  ];
  if (opts.debugRoutes && memory) handlers.push(...memoryDebugHandlers(memory, auth));
  if (opts.debugRoutes && xds) handlers.push(xdsDebugHandler(xds, auth));
  return handlers;
}

/** GET /debug/xds: the xds sink only, same callers as /reconcile: the version served, the verdict, each client. */
function xdsDebugHandler(xds: XdsDataPlane, auth: CallerAuth): JsonHandler {
  return {
    path: "/debug/xds",
    method: "GET",
    limit: 0,
    authorize: callerCheck(auth),
    handle: () => {
      const served = xds.server.current()?.version;
      return {
        status: 200,
        body: {
          version: served,
          verdict: xds.server.verdict(),
          clients: xds.clients(),
          // Every replica's record as read (absent without cluster-shared ACK state).
          ...(xds.records ? { records: xds.records.all() } : {}),
          ...(xds.records && served !== undefined ? { combined: xds.verdictFor(served) } : {}),
        },
      };
    },
  };
}

/**
 * For the fault suite only: a snapshot reconcile waits this long between its
 * reads and its push, the window in which a newer reconcile on another replica
 * can push and release finalizers. Never set in the chart.
 */
export const FAULT_STALL_ENV = "EDGE_OPERATOR_FAULT_STALL_BEFORE_PUSH_MS";
export const FAULT_STALL_LINE = "fault stall: a snapshot reconcile read its inputs and waits before its push";

export function faultStallMs(text: string | undefined): number {
  if (text === undefined || text === "") return 0;
  const ms = Number(text);
  if (!Number.isInteger(ms) || ms < 0 || ms > 600_000)
    throw new Error(
      `${FAULT_STALL_ENV}: must be a whole number of milliseconds from 0 to 600000, got ${JSON.stringify(text)}`,
    );
  return ms;
}

/** GET /debug/dataplane and POST /debug/dataplane/fail-next: the memory sink only, same callers as /reconcile. */
function memoryDebugHandlers(memory: MemoryDataPlane, auth: CallerAuth): JsonHandler[] {
  return [
    {
      path: "/debug/dataplane",
      method: "GET",
      limit: 0,
      authorize: callerCheck(auth),
      handle: () => ({ status: 200, body: memory.state() }),
    },
    {
      path: "/debug/dataplane/fail-next",
      limit: 1024,
      authorize: callerCheck(auth),
      handle: (body) => {
        const n = (body as { count?: unknown } | null)?.count ?? 1;
        if (typeof n !== "number" || !Number.isInteger(n) || n < 0) {
          return errorReply(400, "BadRequest", "count: must be a whole number >= 0");
        }
        memory.failNext(n);
        return { status: 200, body: memory.state() };
      },
    },
  ];
}
