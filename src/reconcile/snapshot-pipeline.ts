// One owner of the snapshot per process: change -> build -> push. The build
// is a pure function of what it reads (the live routes and the endpoints), so
// when the cache says nothing it reads has changed since the last build
// (ClusterCache.inputs(), which a status write or a terminating route's last
// steps do not move) the last snapshot is the answer and nothing is built
// again. Two consumers share it:
//  - the xds sink's serve loop (`serve`): every replica that serves xDS builds
//    from its cache whenever the cache changes and serves it, so a replica that
//    never gets /reconcile still serves the current routes (docs/architecture.md,
//    "Watch-fed cluster state");
//  - the snapshot reconcile (reconciler.ts), which takes the same snapshot for
//    its push, statuses and finalizers instead of building its own.

import type { EdgeRouteV2 } from "../api/types.js";
import { objectKeyOf } from "../api/object-key.js";
import type { DataPlane } from "../dataplane/dataplane.js";
import { heldMessage, holdOf, type HeldRoute } from "../translate/held-routes.js";
import { findCulprit, namedInWords, type Suspect, type TrialAnswer } from "./culprit-search.js";
import {
  buildSnapshot,
  type EndpointsByService,
  type Snapshot,
  type SnapshotOptions,
  type TlsSecrets,
} from "../translate/snapshot.js";
import type { Logger } from "../observability/logger.js";
import type { ClusterCache } from "./cluster-cache.js";
import { Registry } from "prom-client";
import { createReconcileMetrics, type ReconcileMetrics } from "./reconcile-metrics.js";

/** What a build reads, and a stamp of it: equal stamps, equal inputs (absent: read afresh, never reused). */
export interface BuildInputs {
  readonly live: readonly EdgeRouteV2[];
  readonly endpoints: EndpointsByService;
  /** The referenced TLS Secrets' contents (absent: none). */
  readonly secrets?: TlsSecrets;
  readonly stamp?: number;
}

export interface ServeOptions {
  log: Logger;
  /** Least time between two builds (default 100 ms): a burst of events makes one build, not many. */
  minIntervalMs?: number;
  /**
   * While this says so (an admission burst), the least time between builds is
   * `busyIntervalMs` (default 1 s): a build at 2,000 routes takes tens of
   * milliseconds of the event loop that also answers the webhooks.
   */
  busy?: () => boolean;
  busyIntervalMs?: number;
}

export interface SnapshotPipelineOptions {
  /** How resources point back at the data plane (xds: ADS). */
  snapshot?: SnapshotOptions;
  /** Where builds and the serve loop's pushes are counted and timed (absent: a registry of its own). */
  metrics?: PipelineMetrics;
  /** The build (default buildSnapshot); tests make it emit what a client refuses, past the guard. */
  build?: typeof buildSnapshot;
  /** Find and hold back a route a client of this process refuses (default true; serve --xds-serve-refused says false). */
  holdRefused?: boolean;
}

/** What the serve loop reads of the cache. */
export type ServeState = Pick<
  ClusterCache,
  "revision" | "routes" | "endpoints" | "secrets" | "inputs" | "synced" | "onChange"
>;

/** How long one culprit search may take in all, and one of its trials (a push and the clients' answer). */
const SEARCH_BUDGET_MS = 30_000;
const TRIAL_MS = 3_000;

type PipelineMetrics = Pick<
  ReconcileMetrics,
  "buildSeconds" | "builds" | "holdSeconds" | "pushes" | "pushSeconds" | "culpritSearches" | "culpritTrials"
>;

export class SnapshotPipeline {
  private last:
    { readonly stamp: number | undefined; readonly holds: number; readonly snapshot: Snapshot } | undefined;
  private readonly metrics: PipelineMetrics;
  /**
   * Routes this process found a client refusing (culprit-search.ts), held back
   * from every build until the route's status says so for every replica.
   */
  private readonly held = new Map<string, HeldRoute>();
  /** Moves with every hold added: a build reads them. */
  private holds = 0;
  /** The live routes of the last snapshot every client took: what a search's trials start from. */
  private taken: readonly EdgeRouteV2[] | undefined;
  /** The culprit search under way; no build is pushed meanwhile but its trials. */
  private search: Promise<void> | undefined;
  /** The last version searched without a culprit: not searched again. */
  private searched: string | undefined;
  private readonly holdListeners = new Set<() => void>();

  constructor(private readonly opts: SnapshotPipelineOptions = {}) {
    this.metrics = opts.metrics ?? createReconcileMetrics(new Registry());
  }

  /** The snapshot of `inputs`: the last one when its stamp is the same, else a new build. */
  snapshot(inputs: BuildInputs): Snapshot {
    const last = this.last;
    if (last && inputs.stamp !== undefined && last.stamp === inputs.stamp && last.holds === this.holds)
      return last.snapshot;
    const started = process.hrtime.bigint();
    const snapshot = (this.opts.build ?? buildSnapshot)(
      inputs.live,
      inputs.endpoints,
      this.buildOptions(),
      inputs.secrets,
      last?.snapshot,
    );
    this.metrics.buildSeconds.observe(Number(process.hrtime.bigint() - started) / 1e9);
    this.metrics.builds.inc({ changed: String(snapshot.version !== last?.snapshot.version) });
    this.last = { stamp: inputs.stamp, holds: this.holds, snapshot };
    return snapshot;
  }

  private buildOptions(): SnapshotOptions {
    return this.held.size === 0 ? (this.opts.snapshot ?? {}) : { ...this.opts.snapshot, held: this.held };
  }

  /** Resolves once no culprit search is under way (at once when none is), or when `signal` aborts. */
  async idle(signal?: AbortSignal): Promise<void> {
    const search = this.search;
    if (search === undefined) return;
    await new Promise<void>((resolve) => {
      const done = () => {
        signal?.removeEventListener("abort", done);
        resolve();
      };
      signal?.addEventListener("abort", done, { once: true });
      void search.finally(done);
    });
  }

  /** Tells `listener` when this process holds a route back: statuses then have something new to say. */
  onHoldChange(listener: () => void): () => void {
    this.holdListeners.add(listener);
    return () => this.holdListeners.delete(listener);
  }

  /**
   * When a client of this process refused `version`: finds the route whose
   * change it refuses (culprit-search.ts), with trial pushes to this
   * process's clients, and holds it back; then `after()`.
   */
  private searchFor(
    state: ServeState,
    plane: DataPlane,
    log: Logger,
    version: string,
    after: () => void,
  ): void {
    if (this.opts.holdRefused === false || this.search !== undefined || this.searched === version) return;
    const words = plane.refusal?.(version);
    if (words === undefined) return;
    this.search = this.runSearch(state, plane, log, version, words)
      .catch((err: unknown) => log.warn({ err }, "searching for the route an xDS client refused failed"))
      .finally(() => {
        this.search = undefined;
        after();
      });
  }

  private async runSearch(
    state: ServeState,
    plane: DataPlane,
    log: Logger,
    version: string,
    words: string,
  ): Promise<void> {
    const inputs = liveInputs(state);
    const read = state.revision();
    const deadline = Date.now() + SEARCH_BUDGET_MS;
    // Routes already held are no suspects; every trial holds them as every build does.
    const all = inputs.live;
    const live = all.filter((r) => holdOf(r, objectKeyOf(r), this.held) === undefined);
    const trialOf =
      (suspects: readonly Suspect[]) =>
      async (included: ReadonlySet<string>): Promise<TrialAnswer> => {
        const byKey = new Map(suspects.map((s) => [s.key, s]));
        const routes = all.flatMap((r) => {
          const s = byKey.get(objectKeyOf(r));
          if (s === undefined || included.has(s.key)) return [r];
          return s.before === undefined ? [] : [s.before];
        });
        const build = this.opts.build ?? buildSnapshot;
        const snapshot = build(routes, inputs.endpoints, this.buildOptions(), inputs.secrets);
        const answerBy = Math.min(deadline, Date.now() + TRIAL_MS);
        const res = await plane.program(snapshot, { local: true, answerBy, ...(read ? { read } : {}) });
        if (res.ok) return "taken";
        return res.reason === "Rejected" ? "refused" : "unknown";
      };
    // The suspects are the changes since what every client took (after a
    // restart: what the statuses say was served, Programmed at the route's
    // generation). Trials never leave out a route the clients took, which
    // would cut its traffic; so if that state is refused too (a client that
    // joined since refuses an older route), only a route the client's words
    // name is tried without it.
    const taken = this.taken !== undefined ? routesByKey(this.taken) : programmedNow(live);
    const changed = changedSince(live, taken);
    let result = await findCulprit(changed, trialOf(changed), words);
    let trials = result.trials;
    if (result.baseRefused) {
      const named = namedInWords(
        live.map((now) => ({ key: objectKeyOf(now), now })),
        words,
      );
      if (named !== undefined) {
        trials++;
        if ((await trialOf([named])(new Set())) === "taken") result = { culprit: named, trials };
      }
    }
    const culprit = result.culprit;
    this.metrics.culpritTrials.inc(trials);
    this.metrics.culpritSearches.inc({ result: culprit === undefined ? "none" : "held" });
    if (culprit === undefined) {
      this.searched = version;
      log.warn(
        { version, trials, words },
        "an xDS client refused the snapshot, and no one route could be shown to cause it",
      );
      return;
    }
    // Holds of routes since edited, deleted or made again go as this one comes.
    const byKey = routesByKey(all);
    for (const [key, h] of this.held) {
      const now = byKey.get(key);
      if (now === undefined || now.metadata.uid !== h.uid || now.metadata.generation !== h.generation)
        this.held.delete(key);
    }
    // What the clients took of it before stays served: an edit a proxy refuses takes nothing down.
    this.held.set(culprit.key, {
      uid: culprit.now.metadata.uid,
      generation: culprit.now.metadata.generation,
      message: heldMessage(words),
      ...(culprit.before ? { served: culprit.before } : {}),
    });
    this.holds++;
    log.warn({ route: culprit.key, version, trials, words }, "held back a route an xDS client refused");
    for (const listener of [...this.holdListeners]) listener();
  }

  /**
   * Serves `state` into `plane` on every change that a build reads; returns
   * the stop. At most one build at a time, a change during a build makes one
   * more from the newest state, and builds are at least an interval apart.
   */
  serve(state: ServeState, plane: DataPlane, opts: ServeOptions): () => void {
    let dirty = false;
    let running = false;
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let lastBuild = 0;
    /** When the oldest change not yet in a build came (its hold ends when a build starts). */
    let pendingSince: number | undefined;

    const serveOnce = (): void => {
      const revision = state.revision();
      const inputs = liveInputs(state);
      const snapshot = this.snapshot(inputs);
      // Not awaited: the sink serves it at once and then waits on its clients'
      // answers, which the snapshot reconcile reads; a newer build must not wait
      // behind them. The sink's read-revision check keeps an older read out.
      const started = process.hrtime.bigint();
      plane.program(snapshot, { ...(revision ? { read: revision } : {}) }).then(
        (res) => {
          // Counted as the reconcile counts its own: a push made, or one that failed.
          if (!res.ok || res.pushed) {
            const result = res.ok ? "ok" : res.reason;
            this.metrics.pushes.inc({ result });
            this.metrics.pushSeconds.observe({ result }, Number(process.hrtime.bigint() - started) / 1e9);
          }
          // Kept as the list read (a search makes its map): a push at 10,000 routes builds none.
          if (res.ok && res.version === snapshot.version) this.taken = inputs.live;
          if (!res.ok && res.reason === "Rejected")
            this.searchFor(state, plane, opts.log, res.version, schedule);
          if (!res.ok && res.reason === "PushFailed")
            opts.log.warn(
              { version: res.version, detail: res.detail },
              "serving the cache's snapshot failed",
            );
        },
        (err: unknown) => opts.log.warn({ err }, "serving the cache's snapshot failed"),
      );
    };

    const run = (): void => {
      timer = undefined;
      // A search's trials are the only pushes while it runs; it schedules a build when done.
      if (stopped || running || this.search !== undefined) return;
      running = true;
      try {
        while (dirty && !stopped) {
          dirty = false;
          // The first list's end is a change too: it comes back, and the hold counts from it.
          if (!state.synced()) {
            pendingSince = undefined;
            break;
          }
          lastBuild = Date.now();
          if (pendingSince !== undefined) this.metrics.holdSeconds.observe((lastBuild - pendingSince) / 1000);
          pendingSince = undefined;
          serveOnce();
        }
      } catch (err) {
        opts.log.error({ err }, "building the cache's snapshot failed");
      } finally {
        running = false;
      }
    };

    const schedule = (): void => {
      dirty = true;
      pendingSince ??= Date.now();
      if (timer !== undefined || running || stopped) return;
      const interval = opts.busy?.() ? (opts.busyIntervalMs ?? 1000) : (opts.minIntervalMs ?? 100);
      timer = setTimeout(run, Math.max(0, lastBuild + interval - Date.now()));
    };

    const unsubscribe = state.onChange(schedule);
    // A client that refuses after the push stopped waiting (one that joined later) is searched for too.
    const unwatch = plane.onStandingChange?.(() => {
      const version = this.last?.snapshot.version;
      if (version !== undefined && !stopped) this.searchFor(state, plane, opts.log, version, schedule);
    });
    schedule();
    return () => {
      stopped = true;
      clearTimeout(timer);
      unsubscribe();
      unwatch?.();
    };
  }
}

/** Routes by key. */
function routesByKey(routes: readonly EdgeRouteV2[]): Map<string, EdgeRouteV2> {
  return new Map(routes.map((r) => [objectKeyOf(r), r]));
}

/** The live routes whose status says the data plane served them as they are (Programmed=True at their generation). */
function programmedNow(live: readonly EdgeRouteV2[]): Map<string, EdgeRouteV2> {
  const out = new Map<string, EdgeRouteV2>();
  for (const r of live) {
    const generation = r.metadata.generation;
    const served = r.status?.conditions?.some(
      (c) =>
        c.type === "Programmed" &&
        c.status === "True" &&
        generation !== undefined &&
        c.observedGeneration === generation,
    );
    if (served) out.set(objectKeyOf(r), r);
  }
  return out;
}

/** The live routes changed since `taken` (by uid and generation; all of them when nothing was taken yet). */
function changedSince(
  live: readonly EdgeRouteV2[],
  taken: ReadonlyMap<string, EdgeRouteV2> | undefined,
): Suspect[] {
  const out: Suspect[] = [];
  for (const now of live) {
    const key = objectKeyOf(now);
    const before = taken?.get(key);
    // The same object, or the same uid at the same generation (a status write makes a new object, not a change).
    if (
      before === now ||
      (before !== undefined &&
        now.metadata.uid !== undefined &&
        now.metadata.generation !== undefined &&
        before.metadata.uid === now.metadata.uid &&
        before.metadata.generation === now.metadata.generation)
    )
      continue;
    out.push(
      before !== undefined && before.metadata.uid === now.metadata.uid ? { key, now, before } : { key, now },
    );
  }
  return out;
}

/** What a build reads from the cache, stamped. */
export function liveInputs(
  state: Pick<ClusterCache, "routes" | "endpoints" | "secrets" | "inputs">,
): BuildInputs {
  return {
    live: state.routes().filter((r) => !r.metadata.deletionTimestamp),
    endpoints: state.endpoints(),
    secrets: state.secrets(),
    stamp: state.inputs(),
  };
}
