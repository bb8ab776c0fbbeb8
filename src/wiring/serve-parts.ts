// What `edge-operator serve` runs, assembled in one place and returned as one
// handle: the handlers the HTTPS server hosts, how to hand them a renewed key
// pair, and how to stop what they started. In order: the watch-fed cache (one
// EdgeRoute watch, shared by the reconcile and /validate's conflict warnings),
// the webhooks (counted for admission pressure), the data plane, the snapshot
// pipeline (the xds sink's serve loop and the snapshot reconcile's build), the
// reconciler and its triggers, and the debug routes when asked for.

import type { buildSnapshot } from "../translate/snapshot.js";
import { readFileSync } from "node:fs";
import type { ManagedCertOptions } from "../certs/managed-serving.js";
import { ackIdentityFromEnv } from "../dataplane/xds/ack-records-lease.js";
import { kubeClient } from "../kube/client.js";
import { kubeClientMetrics } from "../kube/client-metrics.js";
import type { ClusterAccess } from "../kube/kubeconfig.js";
import type { Logger } from "../observability/logger.js";
import type { ServerMetrics } from "../observability/metrics.js";
import { CertificateExpiry } from "../reconcile/certificate-expiry.js";
import { ClusterCache } from "../reconcile/cluster-cache.js";
import { kubeEventRecorder } from "../reconcile/events.js";
import { SNAPSHOT_KEY } from "../reconcile/protocol.js";
import { createReconcileMetrics } from "../reconcile/reconcile-metrics.js";
import { Reconciler } from "../reconcile/reconciler.js";
import { SnapshotPipeline } from "../reconcile/snapshot-pipeline.js";
import { reconcileOnStandingChange } from "../reconcile/standing-trigger.js";
import { statusWritePace } from "../reconcile/status-pace.js";
import { admissionHandlers } from "../server/admission-handlers.js";
import { AdmissionPressure, countedIn } from "../server/admission-pressure.js";
import { tokenReviewAuth } from "../server/caller-auth.js";
import { conversionHandler } from "../server/conversion-review.js";
import { memoryDebugHandlers, xdsDebugHandler } from "../server/debug-handlers.js";
import { parseListen } from "../server/https.js";
import type { JsonHandler } from "../server/json-handler.js";
import { reconcileHandler } from "../server/reconcile-handler.js";
import type { TlsSecretExists } from "../webhooks/admission.js";
import { ConflictIndex } from "../webhooks/conflicts.js";
import { openDataPlane, type DataPlaneKind } from "./data-plane.js";

/** Longest the snapshot key waits out an admission burst before it runs anyway. */
const SNAPSHOT_MAX_DEFER_MS = 5_000;
/** How long /reconcile waits for the cache to reach what the caller saw before it answers 503. */
const SEEN_WAIT_MS = 10_000;
/** How often certificates are looked at again without a change (one crosses into the warning window by time alone). */
const EXPIRY_CHECK_MS = 3_600_000;

/** What the parts are made from: serve's flags, as parsed. */
export interface ServeConfig {
  tlsCert: string;
  tlsKey: string;
  convertBodyLimit: number;
  dataPlane: DataPlaneKind;
  dataPlaneNamespace: string;
  dataPlaneConfigMap: string;
  deprogramTimeoutMs: number;
  /** --tls-expiry-warning: a referenced certificate this close to its notAfter is warned about. */
  tlsExpiryWarningMs?: number;
  xdsListen: string;
  xdsPlaintext: boolean;
  /** --xds-plaintext-listen: a second ADS port, plaintext. */
  xdsPlaintextListen?: string;
  /** --xds-client-ca: PEM file; the client CA of mutual TLS on the ADS port. */
  xdsClientCaFile?: string;
  /** --xds-client-auth: mutual TLS on the TLS ADS port, or none. */
  xdsClientAuth: "required" | "none";
  xdsAckTimeoutMs: number;
  /** --xds-push-interval: least time between two builds the serve loop pushes. */
  xdsPushIntervalMs: number;
  /** --xds-busy-push-interval: the same while admission is busy. */
  xdsBusyPushIntervalMs: number;
  xdsForgetUnreachableAfterMs: number;
  /** Not --xds-serve-refused: a route a client refuses is found and held back (reconcile/culprit-search.ts). */
  xdsHoldRefused: boolean;
  debugRoutes: boolean;
  /** --cert-secret: the key pair lives in a Secret instead of files. */
  certs?: ManagedCertOptions;
  /** --client-ca: PEM file of the CA that signs the apiserver's client certificate. */
  clientCaFile?: string;
}

export interface ServeDeps {
  log: Logger;
  metrics: ServerMetrics;
  /** The cluster, or none: the webhooks need none, /reconcile answers 503 without. */
  access: ClusterAccess | undefined;
  /** The serving key pair as loaded at start (the ADS port's TLS uses it too). */
  pair?: { cert: string; key: string };
  /** Managed certificates: the operator's CA bundle, the ADS port's client CA unless --xds-client-ca. */
  caBundle?: () => string;
  /**
   * Runs between a snapshot reconcile's reads and its push. Only fault tests
   * inject one (test/harness/stalling-serve.ts), to hold a reconcile in the
   * window where an older snapshot could land after a newer one.
   */
  beforePush?: (signal: AbortSignal | undefined) => Promise<void>;
  /**
   * The snapshot build (default buildSnapshot). Only the held-route tests
   * inject one (test/harness/poisoning-serve.ts), to make what a client
   * refuses past the guard.
   */
  build?: typeof buildSnapshot;
}

/** What serve runs, as one handle. */
export interface ServeParts {
  readonly handlers: readonly JsonHandler[];
  /** A renewed serving key pair: the ADS port takes it, with its client CA read again. */
  reloadTls(pair: { cert: string; key: string }): void;
  /** Stops what the parts started; awaited, since the xds sink deletes its ACK record on the way out. */
  stop(): Promise<void>;
}

/** The ADS port's client CA now, or undefined without mutual TLS: the file, else the operator's bundle. */
export function xdsClientCa(config: ServeConfig, caBundle?: () => string): string | undefined {
  if (config.dataPlane !== "xds" || config.xdsPlaintext || config.xdsClientAuth !== "required")
    return undefined;
  if (config.xdsClientCaFile) return readFileSync(config.xdsClientCaFile, "utf8");
  if (caBundle) return caBundle();
  throw new Error("mutual TLS on the ADS port without a client CA: give --xds-client-ca or --cert-secret");
}

export async function assembleServe(config: ServeConfig, deps: ServeDeps): Promise<ServeParts> {
  const { log, metrics, access } = deps;
  const registry = metrics.registry;
  const closers: (() => void | Promise<void>)[] = [];
  const reloaders: ((pair: { cert: string; key: string }, clientCa?: string) => void)[] = [];
  const handlers: JsonHandler[] = [];
  const parts: ServeParts = {
    handlers,
    reloadTls(pair) {
      let clientCa: string | undefined;
      try {
        clientCa = xdsClientCa(config, deps.caBundle);
      } catch (err) {
        log.warn({ err }, "the ADS port's client CA could not be re-read; keeping the one it has");
      }
      for (const reload of reloaders) reload(pair, clientCa);
    },
    stop: async () => {
      await Promise.all(closers.map((close) => close()));
    },
  };

  // One watch-fed cache per process, shared by /reconcile and the conflict warnings of /validate.
  const kube = access ? kubeClient(access, { metrics: kubeClientMetrics(registry) }) : undefined;
  const conflicts = kube ? new ConflictIndex(undefined, { log }) : undefined;
  const cache =
    kube && conflicts
      ? new ClusterCache({
          client: kube,
          log,
          registry,
          onRouteEvent: (type, obj) => conflicts.apply(type, obj),
        })
      : undefined;
  // /validate's warning about a TLS Secret that does not exist yet reads the
  // cache's Secret metadata watch (undefined before its first list: no warning).
  const tlsSecretExists: TlsSecretExists | undefined = cache ? cache.tlsSecretExists.bind(cache) : undefined;
  if (cache) {
    const stopCache = new AbortController();
    cache.start(stopCache.signal);
    closers.push(() => stopCache.abort());
  }

  // The reconcile gives way while the apiserver is busy calling these (docs/architecture.md, "Admission first").
  const pressure = new AdmissionPressure();
  const admissionBusy = (): boolean => pressure.busy();
  handlers.push(
    ...[
      conversionHandler(config.convertBodyLimit, metrics),
      ...admissionHandlers(access, {
        log,
        metrics,
        ...(conflicts ? { conflicts } : {}),
        ...(tlsSecretExists ? { tlsSecretExists } : {}),
      }),
    ].map((h) => countedIn(pressure, h, { clientCertRequired: config.clientCaFile !== undefined })),
  );
  if (!kube || !cache) {
    handlers.push(reconcileHandler(undefined, undefined));
    return parts;
  }

  const tls =
    config.dataPlane === "xds" && !config.xdsPlaintext
      ? (deps.pair ?? {
          cert: readFileSync(config.tlsCert, "utf8"),
          key: readFileSync(config.tlsKey, "utf8"),
        })
      : undefined;
  const clientCa = tls ? xdsClientCa(config, deps.caBundle) : undefined;
  // In a pod (POD_NAME, POD_NAMESPACE from the downward API): ACK state shared with the other replicas.
  const ackLeases = ackIdentityFromEnv(process.env);
  const { plane, memory, xds } = await openDataPlane(
    {
      kind: config.dataPlane,
      configMapNamespace: config.dataPlaneNamespace,
      configMapName: config.dataPlaneConfigMap,
      xds: {
        ...parseListen(config.xdsListen),
        ackTimeoutMs: config.xdsAckTimeoutMs,
        forgetUnreachableAfterMs: config.xdsForgetUnreachableAfterMs,
        ...(tls ? { tls: clientCa !== undefined ? { ...tls, clientCa } : tls } : {}),
        ...(config.xdsPlaintextListen ? { plaintext: parseListen(config.xdsPlaintextListen) } : {}),
      },
      ...(ackLeases ? { ackLeases } : {}),
      registry,
    },
    kube,
    log,
  );
  if (xds) {
    closers.push(() => xds.stop());
    if (tls) reloaders.push((pair, ca) => xds.server.reloadTls(pair, ca));
  }

  const reconcileMetrics = createReconcileMetrics(registry);
  // The process's one pipeline: the serve loop's build is the snapshot reconcile's.
  const snapshots = new SnapshotPipeline({
    metrics: reconcileMetrics,
    holdRefused: config.xdsHoldRefused,
    ...(deps.build ? { build: deps.build } : {}),
    // Clusters and route configurations point their clients back at ADS.
    ...(xds ? { snapshot: { configSource: { kind: "ads" as const } } } : {}),
  });
  if (xds) {
    // Every replica serving xDS serves its own cache's snapshot, /reconcile or not.
    closers.push(
      snapshots.serve(cache, xds, {
        log,
        busy: admissionBusy,
        minIntervalMs: config.xdsPushIntervalMs,
        busyIntervalMs: config.xdsBusyPushIntervalMs,
      }),
    );
  }
  const events = kubeEventRecorder(kube, log);
  closers.push(watchCertificateExpiry(cache, events, config, log, registry));
  const reconciler = new Reconciler(kube, plane, events, log, {
    view: cache.view(),
    deprogramTimeoutMs: config.deprogramTimeoutMs,
    metrics: reconcileMetrics,
    snapshots,
    statusPace: statusWritePace(admissionBusy),
    ...(deps.beforePush ? { beforePush: deps.beforePush } : {}),
  });
  const reconcileSnapshot = async (signal: AbortSignal) => {
    if (!(await cache.waitFor({}, SEEN_WAIT_MS, signal)))
      throw new Error("the server's cache has not finished its first list");
    return reconciler.reconcile(SNAPSHOT_KEY, signal);
  };
  if (xds) {
    // A client connecting, leaving or answering late changes no object the watcher sees.
    closers.push(
      reconcileOnStandingChange(xds, reconcileSnapshot, {
        log,
        busy: admissionBusy,
        maxDeferMs: SNAPSHOT_MAX_DEFER_MS,
      }),
    );
  }
  if (xds) {
    // Nor does a route held back for a client's refusal: its status says so once this runs.
    closers.push(
      reconcileOnStandingChange({ onStandingChange: (l) => snapshots.onHoldChange(l) }, reconcileSnapshot, {
        log,
        busy: admissionBusy,
        maxDeferMs: SNAPSHOT_MAX_DEFER_MS,
        cause: "a route was held back for an xDS client's refusal",
      }),
    );
  }
  // Nor does a TLS Secret (the watcher does not read Secrets): a referenced one
  // appearing, renewed or gone changes ResolvedRefs, so this process reconciles.
  closers.push(
    reconcileOnStandingChange(secretChanges(cache), reconcileSnapshot, {
      log,
      busy: admissionBusy,
      maxDeferMs: SNAPSHOT_MAX_DEFER_MS,
      cause: "a referenced TLS Secret changed",
    }),
  );

  const auth = tokenReviewAuth(kube);
  handlers.push(
    reconcileHandler(
      reconciler,
      auth,
      { waitFor: cache.waitFor.bind(cache), seen: () => cache.seen(), boundMs: SEEN_WAIT_MS },
      { busy: admissionBusy, maxMs: SNAPSHOT_MAX_DEFER_MS },
    ),
  );
  if (config.debugRoutes && memory) handlers.push(...memoryDebugHandlers(memory, auth));
  if (config.debugRoutes && xds) handlers.push(xdsDebugHandler(xds, auth));
  return parts;
}

/** The expiry gauge and warnings, looked at when a referenced Secret's contents change and hourly; returns the stop. */
function watchCertificateExpiry(
  cache: ClusterCache,
  events: ReturnType<typeof kubeEventRecorder>,
  config: ServeConfig,
  log: Logger,
  registry: ServerMetrics["registry"],
): () => void {
  const expiry = new CertificateExpiry({
    events,
    log,
    registry,
    ...(config.tlsExpiryWarningMs !== undefined ? { warnWithinMs: config.tlsExpiryWarningMs } : {}),
  });
  let last: ReturnType<ClusterCache["secrets"]> | undefined;
  let running = false;
  const check = (force: boolean): void => {
    if (running || !cache.synced()) return;
    const secrets = cache.secrets();
    if (!force && secrets === last) return;
    last = secrets;
    running = true;
    const live = cache.routes().filter((r) => !r.metadata.deletionTimestamp);
    expiry
      .check(live, secrets)
      .catch((err: unknown) => log.warn({ err }, "checking certificate expiry failed"))
      .finally(() => (running = false));
  };
  const unsubscribe = cache.onChange(() => check(false));
  const timer = setInterval(() => check(true), EXPIRY_CHECK_MS);
  timer.unref();
  return () => {
    clearInterval(timer);
    unsubscribe();
  };
}

/** Changes of the referenced TLS Secrets' contents, in the shape the standing trigger listens to. */
function secretChanges(cache: ClusterCache): { onStandingChange(listener: () => void): () => void } {
  return {
    onStandingChange(listener) {
      let last = cache.secrets();
      return cache.onChange(() => {
        const now = cache.secrets();
        if (now === last) return;
        last = now;
        listener();
      });
    },
  };
}
