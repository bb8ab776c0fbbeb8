// Reconcile(key): reads the current state every time and converges. Two kinds
// of key keep it fast as routes grow (docs/architecture.md, "The two kinds of key"):
//  - a route key (`namespace/name`) reads one route and its Services and settles
//    ServiceNotFound at once;
//  - the snapshot key lists the live routes and their endpoints, builds the
//    whole snapshot, pushes it if its hash changed, then marks Programmed on the
//    routes it holds and releases the finalizers of terminating routes it no
//    longer holds.
// Nothing is acted on from "what changed"; unchanged state writes nothing.

import { FINALIZER, type EdgeRouteV2, type EdgeRouteStatus } from "../api/types.js";
import type { Logger } from "../observability/logger.js";
import { SNAPSHOT_KEY, parseRouteKey, type ReconcileReply } from "./protocol.js";
import type { KubeClient } from "../kube/client.js";
import { isConflict, isNotFound, isStale } from "../kube/errors.js";
import { edgeRoutePath } from "../kube/paths.js";
import {
  pendingNotAccepted,
  snapshotConditions,
  deprogramming,
  waitsOnClients,
  type PushVerdict,
} from "./acceptance.js";
import { ApiserverView, type ClusterView } from "./cluster-view.js";
import {
  findCondition,
  nextStatus,
  nowRfc3339,
  type ConditionType,
  type DesiredCondition,
} from "./conditions.js";
import type { EventRecorder } from "./events.js";
import { hasFinalizer, releaseFinalizer } from "./finalizer.js";
import { Registry } from "prom-client";
import { createReconcileMetrics, type ReconcileMetrics } from "./reconcile-metrics.js";
import { checkRoute } from "../rules/route-check.js";
import { referencedServices } from "../routing/referenced-services.js";
import { serviceEndpoints, type ServiceEndpoints } from "../routing/service-endpoints.js";
import { objectKey, objectKeyOf, readObjectKeyOf } from "../api/object-key.js";
import type { EndpointsByService, Snapshot, TlsSecrets } from "../translate/snapshot.js";
import { SnapshotPipeline } from "./snapshot-pipeline.js";
import type { DataPlane, RouteStanding } from "../dataplane/dataplane.js";
import type { ReadRevision } from "../dataplane/read-revision.js";
import { eachConcurrently } from "../kube/each-concurrently.js";
import { SaidStatuses } from "./said-statuses.js";
import { WrittenStatuses } from "./written-statuses.js";
import type { StatusWritePace } from "./status-pace.js";

/** What a reconcile answers: the /reconcile reply. */
export type ReconcileResult = ReconcileReply;

export interface ReconcilerOptions {
  /**
   * Where the cluster's state is read: the server's watch-fed cache
   * (ClusterCache.view()). Absent: LISTs and GETs on every reconcile (tests, tools).
   */
  view?: ClusterView;
  /** Where snapshots come from: the process's one pipeline (absent: one of its own, default options). */
  snapshots?: SnapshotPipeline;
  /** How long a terminating route may wait for its deprogramming before it says DeprogramStuck. */
  deprogramTimeoutMs?: number;
  /** Status writes in flight at once during a snapshot reconcile. */
  writeConcurrency?: number;
  /** How long one snapshot reconcile may spend writing statuses before it hands the rest to the next call. */
  writeBudgetMs?: number;
  /**
   * Whether a snapshot reconcile's next status write may go now (the server's
   * admission burst pace); one that may not is left for the next call.
   */
  statusPace?: StatusWritePace;
  /** When the data plane waits on its clients (xds: none connected, or not all ACKed): when to look again. */
  clientWaitRequeueMs?: number;
  /** Where to report; a registry of its own when absent (tests). */
  metrics?: ReconcileMetrics;
  /**
   * Runs between a snapshot reconcile's reads and its push. Fault tests use it
   * to stall a reconcile in the window where an older snapshot could land
   * after a newer one; nothing else should.
   */
  beforePush?: (signal: AbortSignal | undefined) => Promise<void>;
}

/** Why a reconcile stopped half way: whoever asked for it went away. */
export class ReconcileAbortedError extends Error {
  constructor() {
    super("the caller went away; the reconcile stopped");
    this.name = "ReconcileAbortedError";
  }
}

/** What came of a push: taken (or already served), failed, or refused as read before what the data plane holds. */
type Pushed = PushVerdict | { readonly ok: false; readonly reason: "Superseded"; readonly message: string };

export class Reconciler {
  private readonly read: ClusterView;
  private readonly metrics: ReconcileMetrics;
  private readonly snapshots: SnapshotPipeline;
  private readonly inFlight = new Map<string, number>();
  /** Routes read as this process's status writes left them, until the cache shows those writes. */
  private readonly written = new WrittenStatuses();
  private readonly said = new SaidStatuses();
  /** The last push failure recorded as an event on the data plane's object: the same words once, not per retry. */
  private lastFailureEvent: string | undefined;

  constructor(
    private readonly kube: KubeClient,
    private readonly dataPlane: DataPlane,
    private readonly events: EventRecorder,
    private readonly log: Logger,
    private readonly opts: ReconcilerOptions = {},
  ) {
    this.read = opts.view ?? new ApiserverView(kube);
    this.metrics = opts.metrics ?? createReconcileMetrics(new Registry());
    this.snapshots = opts.snapshots ?? new SnapshotPipeline({ metrics: this.metrics });
  }

  /**
   * `signal` is the caller's: when it goes away (lost leadership, a drain, a
   * timeout) the reconcile stops at its next step and writes nothing more.
   */
  async reconcile(key: string, signal?: AbortSignal): Promise<ReconcileResult> {
    const kind = key === SNAPSHOT_KEY ? "snapshot" : "route";
    const end = this.metrics.duration.startTimer({ kind });
    // Counted, not prevented: the watcher's queue is what keeps one key to one
    // reconcile at a time, and this shows whether it does.
    if (this.inFlight.has(key)) {
      this.metrics.overlaps.inc();
      this.log.warn({ key }, "a reconcile of this key began while another was still running");
    }
    this.inFlight.set(key, (this.inFlight.get(key) ?? 0) + 1);
    try {
      const out =
        key === SNAPSHOT_KEY ? await this.reconcileSnapshot(signal) : await this.reconcileRoute(key, signal);
      end({ result: out.result });
      return out;
    } catch (e) {
      if (signal?.aborted) {
        end({ result: "aborted" });
        throw new ReconcileAbortedError();
      }
      end({ result: "error" });
      throw e;
    } finally {
      const n = (this.inFlight.get(key) ?? 1) - 1;
      if (n === 0) this.inFlight.delete(key);
      else this.inFlight.set(key, n);
    }
  }

  /**
   * Writes the status if it would change; undefined when the route moved on
   * since it was read (a 409 on the read's resourceVersion, counted in `stale`:
   * the caller asks to be called again, as a cache may be a moment behind).
   */
  private async writeStatus(
    route: EdgeRouteV2,
    desired: readonly DesiredCondition[],
    signal: AbortSignal | undefined,
    stale?: { count: number },
    remove: readonly ConditionType[] = [],
  ): Promise<EdgeRouteStatus | undefined> {
    const status = nextStatus(route.status, desired, route.metadata.generation, nowRfc3339(), remove);
    if (!status) return undefined;
    signal?.throwIfAborted();
    try {
      // The resourceVersion makes this a compare-and-swap: a status computed from a
      // stale read never lands.
      const after = await this.kube.json<Partial<EdgeRouteV2> | undefined>(
        "PATCH",
        `${edgeRoutePath(route.metadata.namespace ?? "", route.metadata.name ?? "")}/status`,
        {
          body: { metadata: { resourceVersion: route.metadata.resourceVersion }, status },
          contentType: "application/merge-patch+json",
          timeoutMs: 15_000,
          signal,
        },
      );
      this.metrics.statusWrites.inc();
      this.written.record(route, status, after?.metadata?.resourceVersion);
    } catch (e) {
      // 409: read before its latest change. A 422 is a status the apiserver refuses
      // (too long, say): a failure to report, never "the route moved on".
      if (isConflict(e) && stale) stale.count++;
      if (isConflict(e) || isNotFound(e)) return undefined;
      throw e;
    }
    await this.recordTransitions(route, status);
    return status;
  }

  /** An event when a condition changes status, and a Warning when it turns False. */
  private async recordTransitions(route: EdgeRouteV2, next: EdgeRouteStatus): Promise<void> {
    for (const c of next.conditions ?? []) {
      const old = findCondition(route.status, c.type);
      if (old?.status === c.status && old.reason === c.reason) continue;
      if (c.status === "False")
        await this.events.record(route, "Warning", c.reason, `${c.type}: ${c.message}`);
      else if (old !== undefined && old.status !== c.status)
        await this.events.record(route, "Normal", c.reason, `${c.type}: ${c.message}`);
    }
  }

  async reconcileRoute(key: string, signal?: AbortSignal): Promise<ReconcileResult> {
    const ref = parseRouteKey(key);
    if (!ref)
      throw new ReconcileInputError(
        `key ${JSON.stringify(key)}: must be "namespace/name" or "${SNAPSHOT_KEY}"`,
      );
    const read = await this.read.route(ref.namespace, ref.name, signal);
    // The watcher queues the snapshot key with every route key it queues, so no
    // reply here asks for it again: that call may already have run.
    if (!read) return { result: "done", did: [`${key}: gone`] };
    const route = this.written.overlay(read);
    if (route.metadata.deletionTimestamp) {
      // Deprogramming is the snapshot's job: it pushes a snapshot without the route first.
      return { result: "done", did: [`${key}: terminating; the snapshot deprograms it`] };
    }
    // The same check the snapshot makes, on the same inputs, so both keys write
    // the same words and never undo each other.
    const services = new Map<string, ServiceEndpoints>();
    await Promise.all(
      referencedServices(route).map(async (name) => {
        const svc = await this.read.service(ref.namespace, name, signal);
        if (svc) services.set(objectKey(ref.namespace, name), serviceEndpoints(svc, []));
      }),
    );
    const check = checkRoute(route, services);
    if (!check.ok) {
      const accepted: DesiredCondition = {
        type: "Accepted",
        status: "False",
        reason: check.reason,
        message: check.message,
      };
      const stale = { count: 0 };
      const wrote = await this.writeStatus(route, [accepted, pendingNotAccepted], signal, stale);
      const did = [`${key}: ${check.reason}${wrote ? " (status written)" : ""}`];
      if (stale.count > 0)
        return { result: "requeue", did: [...did, STALE_NOTE], requeueAfterMs: STALE_REQUEUE_MS };
      return { result: "done", did };
    }
    // The Services exist: Accepted=True and Programmed are written once, together,
    // by the snapshot reconcile, which alone can see conflicts between routes.
    return { result: "done", did: [`${key}: Services present`] };
  }

  /**
   * The snapshot key, in named phases: read every route and endpoint, build
   * and push the snapshot, let go of the terminating routes it no longer
   * holds, then write the statuses that changed, within a time budget.
   */
  async reconcileSnapshot(signal?: AbortSignal): Promise<ReconcileResult> {
    // A culprit search pushes its own trials: this push would spoil them, and its build lacks the hold they find.
    await this.snapshots.idle(signal);
    const { live, terminating, endpoints, secrets, read, stamp } = await this.readState(signal);
    const snapshot = this.snapshots.snapshot({
      live,
      endpoints,
      ...(secrets ? { secrets } : {}),
      ...(stamp !== undefined ? { stamp } : {}),
    });
    const report: string[] = [];
    await this.opts.beforePush?.(signal);
    signal?.throwIfAborted();
    // Before a finalizer goes, the data plane must record this read even when
    // it already serves this snapshot: else a reconcile that read the route
    // while it was live, and stalled, could still push it after the release.
    // A deleted route stops saying it is served as the push starts: a client may drop it
    // as soon as it takes the snapshot, long before every client has answered.
    const marking = this.markDeprogramming(terminating, signal);
    const push = await this.push(
      snapshot,
      read,
      terminating.length > 0,
      report,
      signal,
      this.answerBy(terminating),
    );
    const marked = await marking;
    if (!push.ok && push.reason === "Superseded") {
      // A reconcile that read later owns the outcome: statuses and finalizers
      // decided from this older read would be wrong, so none is written. One
      // more call reads afresh, in case the newer one was itself cut short.
      report.push(`snapshot ${snapshot.version} not pushed: ${push.message}`);
      return { result: "done", did: report, enqueue: [SNAPSHOT_KEY] };
    }
    const stale = { count: 0 };
    // Per route where the data plane's clients take different routes (xds): a client's
    // NACK or wait marks only the routes it was sent.
    const routes = this.dataPlane.standing?.(snapshot.version);
    const waiting: Waiting = { count: 0 };
    await this.settleTerminating(terminating, push, routes, marked, report, signal, stale, waiting);
    const deferred = await this.writeStatuses(live, snapshot, push, routes, report, signal, stale, waiting);
    if (report.length === 0) report.push(`snapshot ${snapshot.version} unchanged; nothing to write`);

    // Waiting on xDS clients (none connected, or not all answered) is looked at again
    // steadily, not with a growing backoff: the first client to connect should see
    // its routes Programmed within seconds.
    if (waitsOnClients(push) || waiting.count > 0)
      return { result: "requeue", did: report, requeueAfterMs: this.clientWaitMs(waiting.nextStuckAt) };
    if (!push.ok) return { result: "requeue", did: report };
    // A stale write: once more from a fresher read. Not a requeue, whose backoff
    // grows with every retry: the snapshot lane's hold-off paces it, and the
    // next call's `seen` includes the change the write met.
    if (stale.count > 0 || deferred > 0)
      return {
        result: "done",
        did: stale.count > 0 ? [...report, STALE_NOTE] : report,
        enqueue: [SNAPSHOT_KEY],
      };
    return { result: "done", did: report };
  }

  /**
   * Every route (live, and terminating with our finalizer), the endpoints of
   * every Service, and when they were read (one resourceVersion per kind).
   */
  private async readState(signal: AbortSignal | undefined): Promise<{
    live: EdgeRouteV2[];
    terminating: EdgeRouteV2[];
    endpoints: EndpointsByService;
    secrets: TlsSecrets | undefined;
    read: ReadRevision | undefined;
    stamp: number | undefined;
  }> {
    const inputs = await this.read.snapshotInputs(signal);
    const { endpoints, secrets, read, stamp } = inputs;
    const routes = this.written.overlayAll(inputs.routes);
    this.metrics.observeRoutes(routes);
    return {
      live: routes.filter((r) => !r.metadata.deletionTimestamp),
      terminating: routes.filter((r) => r.metadata.deletionTimestamp && hasFinalizer(r)),
      endpoints,
      secrets,
      read,
      stamp,
    };
  }

  /**
   * After a push the data plane holds a snapshot without the terminating
   * routes: their finalizers go. Without one, a route waiting past the
   * deprogram timeout says DeprogramStuck.
   */
  private async settleTerminating(
    terminating: readonly EdgeRouteV2[],
    push: PushVerdict,
    routes: RouteStanding | undefined,
    marked: ReadonlySet<string>,
    report: string[],
    signal: AbortSignal | undefined,
    stale: { count: number },
    waiting: Waiting,
  ): Promise<void> {
    let released = 0;
    let stuck = 0;
    await eachConcurrently(terminating, this.opts.writeConcurrency ?? 32, async (read) => {
      signal?.throwIfAborted();
      // As markDeprogramming's write left it, if it wrote: its resourceVersion is the release's precondition.
      const route = marked.has(objectKeyOf(read)) ? this.written.overlay(read) : read;
      const own = routes?.deleted(route.spec?.hostnames ?? []) ?? push;
      // The data plane holds a snapshot without this route (or holds nothing): traffic no longer goes to it.
      if (own.ok || own.unserved === true) {
        try {
          if (await releaseFinalizer(this.kube, route, undefined, undefined, signal)) released++;
        } catch (e) {
          // Read before its latest change (a cache a moment behind): the next call releases it.
          if (isStale(e)) stale.count++;
          else if (!isNotFound(e)) throw e;
        }
        return;
      }
      if (this.isStuck(route)) {
        stuck++;
        const wrote = await this.writeStatus(
          route,
          [
            {
              type: "Programmed",
              status: "False",
              reason: "DeprogramStuck",
              // No words from the failure itself: they change from retry to retry.
              message: `the data plane has not taken a snapshot without this route since it was deleted (${own.reason}); the finalizer ${FINALIZER} stays until it does, or until 'edge-operator finalizer release' removes it`,
            },
          ],
          signal,
          stale,
        );
        if (wrote) this.log.warn({ route: objectKeyOf(route) }, "deprogramming stuck");
        return;
      }
      if (waitsOnClients(own)) {
        waiting.count++;
        const at = this.stuckAt(route);
        if (at < (waiting.nextStuckAt ?? Infinity)) waiting.nextStuckAt = at;
      }
      // Some client may already have dropped it: no longer Programmed=True.
      if (!marked.has(objectKeyOf(route))) await this.writeStatus(route, [deprogramming], signal, stale);
    });
    if (released > 0) report.push(`released the finalizer of ${released} deleted route(s)`);
    if (stuck > 0) report.push(`${stuck} deleted route(s) stuck waiting for the data plane`);
  }

  /** Programmed=False on the deleted routes that still say True; answers the keys written. */
  private async markDeprogramming(
    terminating: readonly EdgeRouteV2[],
    signal: AbortSignal | undefined,
  ): Promise<ReadonlySet<string>> {
    const marked = new Set<string>();
    const saysServed = terminating.filter((r) => findCondition(r.status, "Programmed")?.status === "True");
    await eachConcurrently(saysServed, this.opts.writeConcurrency ?? 32, async (route) => {
      if (await this.writeStatus(route, [deprogramming], signal)) marked.add(objectKeyOf(route));
    });
    return marked;
  }

  /**
   * Accepted and Programmed on every live route whose status would change.
   * Status writes come last and within a time budget: a call that wrote part
   * of a large set says so and asks to be called again, so no single call runs
   * past the watcher's timeout (the rest are written by the next one, which
   * finds the written ones unchanged). Returns how many were left.
   */
  private async writeStatuses(
    live: readonly EdgeRouteV2[],
    snapshot: Snapshot,
    push: PushVerdict,
    routes: RouteStanding | undefined,
    report: string[],
    signal: AbortSignal | undefined,
    stale: { count: number },
    waiting: Waiting,
  ): Promise<number> {
    const byKey = new Map(live.map((r) => [readObjectKeyOf(r), r]));
    const deadline = Date.now() + (this.opts.writeBudgetMs ?? 20_000);
    let written = 0;
    let deferred = 0;
    let paced = 0;
    // Which statuses change, in one synchronous pass: at 10,000 routes a step per
    // route through the concurrent writer held the one write that follows an ACK back.
    const changes: {
      route: EdgeRouteV2;
      key: string;
      desired: DesiredCondition[];
      remove: ConditionType[];
    }[] = [];
    for (const outcome of snapshot.outcomes) {
      const route = byKey.get(outcome.key);
      if (!route) continue;
      const own = (outcome.accepted ? routes?.live(outcome.key) : undefined) ?? push;
      if (outcome.accepted && waitsOnClients(own)) waiting.count++;
      const { desired, remove } = snapshotConditions(outcome, own);
      if (this.said.changes(route, desired, remove))
        changes.push({ route, key: outcome.key, desired, remove });
    }
    await eachConcurrently(
      changes,
      this.opts.writeConcurrency ?? 32,
      async ({ route, key, desired, remove }) => {
        if (Date.now() > deadline) {
          deferred++;
          return;
        }
        if (this.opts.statusPace && !this.opts.statusPace.tryTake(key)) {
          paced++;
          return;
        }
        if (await this.writeStatus(route, desired, signal, stale, remove)) written++;
      },
    );
    if (written > 0) report.push(`status written on ${written} route(s)`);
    if (deferred > 0) report.push(`${deferred} route(s) left for the next call: the write budget ran out`);
    if (paced > 0) {
      this.metrics.statusWritesPaced.inc(paced);
      report.push(`${paced} route(s) left for the next call: admission is busy`);
    }
    return deferred + paced;
  }

  private async push(
    snapshot: Snapshot,
    read: ReadRevision | undefined,
    fence: boolean,
    report: string[],
    signal: AbortSignal | undefined,
    answerBy: number | undefined,
  ): Promise<Pushed> {
    const accepted = snapshot.outcomes.filter((o) => o.accepted).length;
    if (!fence) {
      // Unchanged state writes nothing: not even the read revision.
      const current = await this.dataPlane.current(signal);
      if (current === snapshot.version) return { ok: true };
      // An empty data plane need not be told it is empty: nothing was ever programmed.
      if (current === undefined && accepted === 0 && !this.dataPlane.keepsServing) return { ok: true };
    }
    const started = process.hrtime.bigint();
    const res = await this.dataPlane.program(snapshot, { read, fence, signal, answerBy });
    if (res.ok && !res.pushed) return { ok: true };
    const result = res.ok ? "ok" : res.reason;
    this.metrics.pushes.inc({ result });
    this.metrics.pushSeconds.observe({ result }, Number(process.hrtime.bigint() - started) / 1e9);
    if (!res.ok) {
      if (res.reason === "Superseded") {
        this.log.info({ version: snapshot.version, message: res.message }, "snapshot superseded");
        return res;
      }
      report.push(`push of snapshot ${snapshot.version} failed: ${res.detail}`);
      this.log.warn(
        { version: snapshot.version, reason: res.reason, detail: res.detail },
        "data-plane push failed",
      );
      await this.recordFailure(res.reason, res.detail);
      return {
        ok: false,
        reason: res.reason,
        message: res.message,
        ...(res.unserved ? { unserved: true } : {}),
      };
    }
    this.lastFailureEvent = undefined;
    report.push(`pushed snapshot ${snapshot.version} (${accepted} route(s))`);
    return { ok: true };
  }

  /**
   * A push failure's own words go on the data plane's object, once per
   * distinct failure: routes carry a message that does not change from retry
   * to retry, so that a failing data plane costs no write per route.
   */
  private async recordFailure(reason: string, detail: string): Promise<void> {
    const object = this.dataPlane.object;
    if (object === undefined || this.lastFailureEvent === detail) return;
    this.lastFailureEvent = detail;
    await this.events.recordOn(object, "Warning", reason, detail);
  }

  /** When a deleted route's wait for its deprogramming turns into DeprogramStuck (NaN without a deletionTimestamp). */
  private stuckAt(route: EdgeRouteV2): number {
    return Date.parse(route.metadata.deletionTimestamp ?? "") + (this.opts.deprogramTimeoutMs ?? 120_000);
  }

  /**
   * The push's wait for its clients ends by the first deprogram timeout not
   * yet said: else a route requeued at its timeout would say DeprogramStuck
   * one ACK timeout late. Routes that already say it do not cut the wait short.
   */
  private answerBy(terminating: readonly EdgeRouteV2[]): number | undefined {
    let first: number | undefined;
    for (const route of terminating) {
      if (findCondition(route.status, "Programmed")?.reason === "DeprogramStuck") continue;
      const at = this.stuckAt(route) + STUCK_MARGIN_MS;
      if (Number.isNaN(at)) continue;
      if (first === undefined || at < first) first = at;
    }
    return first;
  }

  private isStuck(route: EdgeRouteV2): boolean {
    return Date.now() > this.stuckAt(route);
  }

  /**
   * The steady look at clients that have not answered, or sooner where a
   * deleted route waiting on them reaches its deprogram timeout first: then
   * DeprogramStuck is said when it becomes true, not up to a period late.
   */
  private clientWaitMs(nextStuckAt: number | undefined): number {
    const period = this.opts.clientWaitRequeueMs ?? 5_000;
    if (nextStuckAt === undefined) return period;
    return Math.min(period, Math.max(STUCK_MARGIN_MS, nextStuckAt - Date.now() + STUCK_MARGIN_MS));
  }
}

/** A status write met a newer resourceVersion than the one read: read again shortly. */
const STALE_NOTE = "a route changed since it was read (409): calling again";
const STALE_REQUEUE_MS = 1_000;

/** Past a deprogram timeout by this much when the reconcile looks again: isStuck is strictly after it. */
const STUCK_MARGIN_MS = 100;

/** Routes that wait on xDS clients, and the soonest deprogram timeout among the deleted ones. */
interface Waiting {
  count: number;
  nextStuckAt?: number;
}

/** A key that can never be reconciled: the caller must not retry it. */
export class ReconcileInputError extends Error {}
