// The watcher: informers feed keys into the work queue; while this replica
// leads, workers take keys and call POST /reconcile. A standby keeps its
// informers and queue warm but never calls; the moment it leads, it works
// through everything it has seen.

import type { Logger } from "../observability/logger.js";
import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import { PLURAL } from "../api/types.js";
import { Informer } from "../kube/informer.js";
import { CallHealth, type CallHealthOptions, type Health } from "./call-health.js";
import type { KubeClient } from "../kube/client.js";
import { SNAPSHOT_KEY, type Seen } from "../reconcile/protocol.js";
import { LeaderElector } from "../kube/lease.js";
import { createQueueMetrics } from "./queue-metrics.js";
import { keyEvents, type KeyEvents } from "./key-events.js";
import { TokenBucket } from "../kube/token-bucket.js";
import type { ReconcileClient } from "./reconcile-client.js";
import { keyOf } from "../api/object-key.js";
import { edgeRoutesPath, ENDPOINT_SLICES_PATH, SERVICES_PATH } from "../kube/paths.js";
import { serviceOfEndpointSlice } from "../routing/service-endpoints.js";
import { WorkQueue, type Lane, type WorkQueueOptions } from "./work-queue.js";

export interface WatcherOptions {
  kube: KubeClient;
  reconcile: ReconcileClient;
  log: Logger;
  registry?: Registry;
  /** Workers for route keys; the snapshot key has one of its own. */
  concurrency?: number;
  queue?: Omit<WorkQueueOptions, "metrics">;
  /**
   * The snapshot key, which judges every route, is enqueued this often (default
   * 5 min; 0: never). Route keys are not: each would find what the snapshot finds.
   */
  resyncMs?: number;
  /**
   * Route keys queued per second, and at once (default 10, 20): past them a
   * change is left to the snapshot key, so a burst costs a few snapshot calls,
   * not a call per change. 0 qps: no limit.
   */
  routeKeys?: { qps: number; burst: number };
  /** Without it this replica always leads. */
  leaderElection?: { namespace: string; name: string; identity: string; leaseDurationMs?: number };
  watchTimeoutSeconds?: number;
  /** On a graceful stop, how long calls in flight may finish before they are cut (default 10 s). */
  drainMs?: number;
  /** When calls that get no reply make this replica unhealthy. */
  health?: CallHealthOptions;
}

export interface RunningWatcher {
  readonly queue: WorkQueue;
  isLeader(): boolean;
  /** Every informer has listed once: the caches are warm (readiness, leader or not). */
  synced(): boolean;
  /** Whether /reconcile has been reachable (liveness). */
  health(): Health;
  stop(): Promise<void>;
}

export interface WatcherMetrics {
  calls: Counter<"lane" | "outcome">;
  callSeconds: Histogram<"lane">;
  leader: Gauge;
  folded: Counter;
}

export function watcherMetrics(registry: Registry): WatcherMetrics {
  const registers = [registry];
  return {
    calls: new Counter({
      name: "edge_operator_watcher_reconcile_calls_total",
      help: "Calls to POST /reconcile, by lane and outcome (done, requeue, failed, aborted).",
      labelNames: ["lane", "outcome"],
      registers,
    }),
    callSeconds: new Histogram({
      name: "edge_operator_watcher_reconcile_call_seconds",
      help: "Time a call to POST /reconcile took.",
      labelNames: ["lane"],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    }),
    leader: new Gauge({
      name: "edge_operator_watcher_leader",
      help: "1 while this watcher leads.",
      registers,
    }),
    folded: new Counter({
      name: "edge_operator_watcher_route_keys_folded_total",
      help: "Route keys not queued, past the route-key budget: the snapshot key settles them.",
      registers,
    }),
  };
}

/**
 * The watcher, in named phases: the event handlers that turn changes into
 * keys, the informers that feed them, the workers that call /reconcile while
 * this replica leads, and the leader election that starts and stops them.
 */
export function startWatcher(opts: WatcherOptions): RunningWatcher {
  const metrics = opts.registry ? watcherMetrics(opts.registry) : undefined;
  const queue = new WorkQueue({
    ...opts.queue,
    ...(opts.registry ? { metrics: createQueueMetrics(opts.registry) } : {}),
  });
  const rk = opts.routeKeys ?? { qps: 10, burst: 20 };
  const informers = startInformers(
    opts,
    keyEvents(queue, {
      ...(rk.qps > 0 ? { budget: new TokenBucket(rk.qps, rk.burst) } : {}),
      ...(metrics ? { onFolded: () => metrics.folded.inc() } : {}),
    }),
  );
  const [routes, services, slices] = informers as [Informer, Informer, Informer];
  // What this watcher has seen, sent with every call: the server answers from a cache at least this new.
  // Objects' resourceVersions, not a list's: a list's is the store's revision, which a cache
  // that has seen every object of the kind may not reach until the next event or bookmark.
  const seen = (): Seen => {
    const out: { -readonly [K in keyof Seen]: string } = {};
    const put = (part: keyof Seen, rv: string): void => {
      if (rv !== "") out[part] = rv;
    };
    put("routes", routes.newestObjectResourceVersion());
    put("services", services.newestObjectResourceVersion());
    put("endpointslices", slices.newestObjectResourceVersion());
    return out;
  };
  // A new leader trusts nothing done before it, and a resync looks again at
  // everything: both are the snapshot key, which reads and judges every route.
  // One key per route here was 50,000 calls at 50,000 routes (BENCHMARKS.md).
  const resyncAll = (): void => queue.add(SNAPSHOT_KEY);
  const reachability = new CallHealth(opts.health);
  const workers = reconcileWorkers(opts, queue, metrics, reachability, resyncAll, seen);
  const elector = electLeader(opts, workers);
  const resyncMs = opts.resyncMs ?? 300_000;
  const resync = resyncMs > 0 ? setInterval(resyncAll, resyncMs) : undefined;

  return {
    queue,
    isLeader: () => workers.running(),
    synced: () => informers.every((i) => i.hasSynced()),
    health: () => reachability.health(),
    async stop() {
      clearInterval(resync);
      // Finish what is in flight before giving the lease up, so the successor
      // never runs a key this replica is still running.
      await workers.stop(opts.drainMs ?? 10_000);
      await elector?.stop();
      queue.shutDown();
      await Promise.all(informers.map((i) => i.stop()));
      opts.reconcile.close();
    },
  };
}

/**
 * EdgeRoutes, Services and EndpointSlices, listed and watched from now on,
 * leader or not. Until an informer has listed once, its events are what
 * existed before this watcher: `listing`.
 */
function startInformers(opts: WatcherOptions, events: KeyEvents): Informer[] {
  const common = { client: opts.kube, log: opts.log, watchTimeoutSeconds: opts.watchTimeoutSeconds };
  const routes: Informer = new Informer({
    ...common,
    name: PLURAL,
    path: edgeRoutesPath(),
    onEvent: (t, o) => events.onRoute(t, o, !routes.hasSynced()),
  });
  const services: Informer = new Informer({
    ...common,
    name: "services",
    path: SERVICES_PATH,
    onEvent: (_t, o) => events.onService(keyOf(o), !services.hasSynced()),
  });
  const slices: Informer = new Informer({
    ...common,
    name: "endpointslices",
    path: ENDPOINT_SLICES_PATH,
    onEvent: (_t, o) => events.onService(serviceOfEndpointSlice(o), !slices.hasSynced()),
  });
  const informers = [routes, services, slices];
  for (const inf of informers) inf.start();
  return informers;
}

interface Workers {
  /** Starts the workers (and queues every key: a new leader trusts nothing done before it). */
  start(): void;
  /** Stops work: at once (leadership lost), or letting calls in flight finish for up to `drainMs`. */
  stop(drainMs: number): Promise<void>;
  running(): boolean;
}

/** One worker for the snapshot lane and `concurrency` for routes, each calling /reconcile a key at a time. */
function reconcileWorkers(
  opts: WatcherOptions,
  queue: WorkQueue,
  metrics: WatcherMetrics | undefined,
  reachability: CallHealth,
  onStart: () => void,
  seen: () => Seen,
): Workers {
  const { reconcile, log } = opts;
  // Work runs under two signals: `taking` stops workers from taking new keys,
  // `calls` cuts the calls in flight.
  let work: { taking: AbortController; calls: AbortController; workers: Promise<void>[] } | undefined;

  const reconcileOne = async (key: string, lane: Lane, calls: AbortSignal): Promise<void> => {
    const started = Date.now();
    const out = await reconcile.reconcile(key, calls, seen());
    metrics?.callSeconds.observe({ lane }, (Date.now() - started) / 1000);
    if (calls.aborted) {
      // Cut because leadership ended: the key stays due for whoever leads next.
      metrics?.calls.inc({ lane, outcome: "aborted" });
      queue.done(key);
      queue.add(key);
      return;
    }
    metrics?.calls.inc({ lane, outcome: out.kind });
    // What each call did, for `--log-level debug`: the server's own words.
    if (out.kind !== "failed")
      log.debug({ key, outcome: out.kind, did: out.did, ms: Date.now() - started }, "reconciled");
    if (out.kind === "failed" && "unreachable" in out) reachability.unreachable(out.reason);
    else reachability.replied();
    switch (out.kind) {
      case "done":
        queue.forget(key);
        break;
      case "requeue":
        // A cache behind (503 + Retry-After) is no failure of the key: its backoff stays as it was.
        if (out.notFailure) queue.addAfter(key, out.afterMs ?? 0);
        else queue.addRateLimited(key, out.afterMs ?? 0);
        break;
      case "failed":
        log.warn(
          { key, reason: out.reason, retries: queue.numRequeues(key) },
          "reconcile failed; retrying with backoff",
        );
        queue.addRateLimited(key);
        break;
    }
    if (out.kind !== "failed") for (const k of out.enqueue) queue.add(k);
    queue.done(key);
  };

  const worker = async (lane: Lane, taking: AbortSignal, calls: AbortSignal): Promise<void> => {
    for (;;) {
      const key = await queue.get(lane, taking);
      if (key === undefined) return;
      await reconcileOne(key, lane, calls);
    }
  };

  const startWork = (): void => {
    if (work) return;
    metrics?.leader.set(1);
    const taking = new AbortController();
    const calls = new AbortController();
    const n = Math.max(1, opts.concurrency ?? 4);
    const workers = [
      worker("snapshot", taking.signal, calls.signal),
      ...Array.from({ length: n }, () => worker("route", taking.signal, calls.signal)),
    ];
    work = { taking, calls, workers };
    onStart();
  };

  const stopWork = async (drainMs: number): Promise<void> => {
    const w = work;
    if (!w) return;
    work = undefined;
    metrics?.leader.set(0);
    reachability.reset();
    w.taking.abort();
    if (drainMs <= 0) w.calls.abort();
    const all = Promise.all(w.workers);
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([all, new Promise<void>((r) => (timer = setTimeout(r, drainMs)))]);
    clearTimeout(timer);
    w.calls.abort();
    await all;
  };

  return { start: startWork, stop: stopWork, running: () => work !== undefined };
}

/** With leader election, work runs while this replica holds the Lease; without, at once. */
function electLeader(opts: WatcherOptions, workers: Workers): LeaderElector | undefined {
  if (!opts.leaderElection) {
    workers.start();
    return undefined;
  }
  const elector = new LeaderElector({
    client: opts.kube,
    ...opts.leaderElection,
    log: opts.log,
    onStartedLeading: () => workers.start(),
    onStoppedLeading: () => void workers.stop(0),
  });
  elector.start();
  return elector;
}
