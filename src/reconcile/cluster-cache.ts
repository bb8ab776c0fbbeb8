// What a reconcile reads, kept current by three watches (EdgeRoutes as v2,
// Services, EndpointSlices) instead of a LIST of each per reconcile: the
// apiserver's work per route change no longer grows with the cluster
// (docs/architecture.md, "Watch-fed cluster state").
//
// Still level-triggered: the cache is the apiserver's state as of one
// resourceVersion per kind (`revision()`), and every decision is made from
// that whole state, never from "what changed". A restart lists again; a 410
// lists again and the objects the list no longer has are dropped; a replica
// whose cache lags says so through its revision, which the data plane's fence
// and the `seen` wait of /reconcile compare against.
//
// Objects are held slim: only what the snapshot and status writes read.
//
// TLS Secrets are not a fourth watch of whole objects: a metadata-only watch
// says which exist, and only the ones live routes reference are read
// (tls-secret-contents.ts). They are not part of the read revision
// (REVISION_PARTS): that revision fences pushes so that a reconcile that read
// before a finalizer went cannot put the deleted route back, and the watcher's
// `seen` names the kinds it watches, which Secrets are not; a Secret's contents
// are read by GET, at no list's revision. A rotation moves `inputs()` and the
// serve loop pushes it; it never decides a finalizer.

import { heldByStatus } from "../translate/held-routes.js";
import type { V1EndpointSlice, V1Service } from "@kubernetes/client-node";
import type { Registry } from "prom-client";
import { Counter, Gauge, Histogram } from "prom-client";
import type { EdgeRouteV2 } from "../api/types.js";
import { PLURAL } from "../api/types.js";
import { isRecord } from "../api/is-record.js";
import {
  compareResourceVersion,
  isComparableResourceVersion,
  readRevision,
  REVISION_PARTS,
  type ReadRevision,
  type RevisionPart,
} from "../dataplane/read-revision.js";
import type { EndpointsByService, TlsSecrets } from "../translate/snapshot.js";
import type { KubeClient } from "../kube/client.js";
import { Informer, type EventType } from "../kube/informer.js";
import { keyOf, objectKey, type Watched } from "../api/object-key.js";
import { edgeRoutesPath, ENDPOINT_SLICES_PATH, SERVICES_PATH } from "../kube/paths.js";
import type { Logger } from "../observability/logger.js";
import {
  SERVICE_NAME_LABEL,
  serviceEndpoints,
  serviceOfEndpointSlice,
  type ServiceEndpoints,
} from "../routing/service-endpoints.js";
import { slimRoute } from "./slim-route.js";
import { TlsSecretContents } from "./tls-secret-contents.js";
import { tlsSecretKeyOf } from "./tls-secret-refs.js";
import type { ClusterView } from "./cluster-view.js";

export interface ClusterCacheOptions {
  client: KubeClient;
  log: Logger;
  /** Every EdgeRoute event, as the watch gave it: the admission conflict index shares this watch. */
  onRouteEvent?: (type: EventType, obj: Watched) => void;
  /** Where the cache's gauges and the `seen` wait's histogram go (absent: none). */
  registry?: Registry;
  /** Passed to each informer (tests shorten them). */
  watchTimeoutSeconds?: number;
  pageSize?: number;
  /** GETs of referenced TLS Secrets in flight at once (default 4). */
  secretReadConcurrency?: number;
  /** How long snapshotInputs() waits for referenced Secrets' reads in flight (default 2 s). */
  secretSettleMs?: number;
}

export interface CacheMetrics {
  objects: Gauge<"kind">;
  events: Counter<"kind">;
  waitSeconds: Histogram<"result">;
}

export function cacheMetrics(registry: Registry): CacheMetrics {
  const registers = [registry];
  return {
    objects: new Gauge({
      name: "edge_operator_cache_objects",
      help: "Objects held by the server's watch-fed cache, by kind.",
      labelNames: ["kind"],
      registers,
    }),
    events: new Counter({
      name: "edge_operator_cache_events_total",
      help: "Watch events (and listed objects) the server's cache took, by kind.",
      labelNames: ["kind"],
      registers,
    }),
    waitSeconds: new Histogram({
      name: "edge_operator_cache_wait_seconds",
      help: "How long a /reconcile call waited for the cache to reach what the caller had seen, by result (reached, timeout, aborted).",
      labelNames: ["result"],
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    }),
  };
}

/** A Service as the snapshot reads it: its ports. */
function slimService(obj: Watched): V1Service | undefined {
  const m = obj.metadata;
  if (!m || typeof m.namespace !== "string" || typeof m.name !== "string") return undefined;
  const spec = isRecord(obj.spec) ? obj.spec : {};
  const ports = Array.isArray(spec.ports) ? spec.ports : [];
  return {
    metadata: { namespace: m.namespace, name: m.name },
    spec: {
      ports: ports.filter(isRecord).map((p) => ({
        port: typeof p.port === "number" ? p.port : 0,
        ...(typeof p.name === "string" ? { name: p.name } : {}),
      })),
    },
  };
}

/** An EndpointSlice as the snapshot reads it: its Service, ports and ready addresses. */
function slimSlice(obj: Watched): V1EndpointSlice | undefined {
  const o = obj as Watched & { addressType?: unknown; ports?: unknown; endpoints?: unknown };
  const m = o.metadata;
  if (!m || typeof m.namespace !== "string" || typeof m.name !== "string") return undefined;
  const labels = isRecord(m.labels) ? m.labels : {};
  const service = labels[SERVICE_NAME_LABEL];
  return {
    metadata: {
      namespace: m.namespace,
      name: m.name,
      ...(typeof service === "string" ? { labels: { [SERVICE_NAME_LABEL]: service } } : {}),
    },
    addressType: typeof o.addressType === "string" ? o.addressType : "",
    ports: (Array.isArray(o.ports) ? o.ports : []).filter(isRecord).map((p) => ({
      ...(typeof p.name === "string" ? { name: p.name } : {}),
      ...(typeof p.port === "number" ? { port: p.port } : {}),
    })),
    endpoints: (Array.isArray(o.endpoints) ? o.endpoints : []).filter(isRecord).map((e) => ({
      addresses: Array.isArray(e.addresses)
        ? e.addresses.filter((a): a is string => typeof a === "string")
        : [],
      ...(isRecord(e.conditions) && e.conditions.ready === false ? { conditions: { ready: false } } : {}),
    })),
  };
}

/** True when `have` is at least `want` (a non-numeric resourceVersion counts as reached: it cannot be compared). */
function reached(have: string, want: string): boolean {
  if (have === "") return false;
  if (!isComparableResourceVersion(have) || !isComparableResourceVersion(want)) return true;
  return compareResourceVersion(have, want) >= 0;
}

/**
 * What buildSnapshot reads of a route is the same: its name, age, deletion and
 * spec, and of its status only a hold (held-routes.ts), which another replica
 * may have written: every replica then leaves the route out.
 */
function sameForSnapshot(a: EdgeRouteV2, b: EdgeRouteV2): boolean {
  return (
    a.metadata.creationTimestamp === b.metadata.creationTimestamp &&
    a.metadata.deletionTimestamp === b.metadata.deletionTimestamp &&
    JSON.stringify(a.spec) === JSON.stringify(b.spec) &&
    heldByStatus(a) === heldByStatus(b)
  );
}

interface Waiter {
  readonly min: Partial<ReadRevision>;
  readonly resolve: (ok: boolean) => void;
}

export class ClusterCache {
  private readonly routeMap = new Map<string, EdgeRouteV2>();
  private readonly serviceMap = new Map<string, V1Service>();
  private readonly slicesByService = new Map<string, Map<string, V1EndpointSlice>>();
  private readonly serviceOfSliceKey = new Map<string, string>();
  private readonly endpointMap = new Map<string, ServiceEndpoints>();
  private routeList: readonly EdgeRouteV2[] | undefined;
  private endpointsView: EndpointsByService | undefined;
  private readonly rv: Record<RevisionPart, string> = { routes: "", services: "", endpointslices: "" };
  private readonly informers: Record<RevisionPart, Informer>;
  private readonly tls: TlsSecretContents;
  /** Live route -> the TLS Secret it references. */
  private readonly routeSecret = new Map<string, string>();
  private waiters: Waiter[] = [];
  private readonly listeners = new Set<() => void>();
  private changeScheduled = false;
  /** Moves with every change a snapshot build could see (inputs()). */
  private stamp = 0;
  private readonly metrics: CacheMetrics | undefined;

  constructor(private readonly opts: ClusterCacheOptions) {
    this.metrics = opts.registry ? cacheMetrics(opts.registry) : undefined;
    const common = {
      client: opts.client,
      log: opts.log,
      // /reconcile waits on this cache: retry a failed list (a CRD not yet registered) within seconds, not 30.
      backoffMaxMs: 5_000,
      ...(opts.watchTimeoutSeconds !== undefined ? { watchTimeoutSeconds: opts.watchTimeoutSeconds } : {}),
      ...(opts.pageSize !== undefined ? { pageSize: opts.pageSize } : {}),
    };
    // `on` answers whether the snapshot could see the change (a status write alone it cannot).
    const informer = (
      part: RevisionPart,
      name: string,
      path: string,
      on: (t: EventType, o: Watched) => boolean,
    ) =>
      new Informer({
        ...common,
        name: `${name} (cache)`,
        path,
        onEvent: (t, o) => {
          this.metrics?.events.inc({ kind: part });
          if (on(t, o)) this.changed();
          this.metrics?.objects.set({ kind: part }, this.count(part));
        },
        onResourceVersion: (v) => this.advance(part, v),
      });
    this.informers = {
      routes: informer("routes", PLURAL, edgeRoutesPath(), (t, o) => this.onRoute(t, o)),
      services: informer("services", "services", SERVICES_PATH, (t, o) => this.onService(t, o)),
      endpointslices: informer("endpointslices", "endpointslices", ENDPOINT_SLICES_PATH, (t, o) =>
        this.onSlice(t, o),
      ),
    };
    this.tls = new TlsSecretContents({
      ...common,
      onChange: () => {
        this.changed();
        this.metrics?.objects.set({ kind: "tls-secret-contents" }, this.tls.heldCount());
      },
      onMetadataEvent: () => {
        this.metrics?.events.inc({ kind: "secrets" });
        this.metrics?.objects.set({ kind: "secrets" }, this.tls.metadataCount());
      },
      ...(opts.secretReadConcurrency !== undefined ? { concurrency: opts.secretReadConcurrency } : {}),
    });
  }

  /** Lists and watches until `signal` aborts. */
  start(signal: AbortSignal): void {
    for (const p of REVISION_PARTS) this.informers[p].start();
    this.tls.start();
    const stop = (): void => {
      for (const p of REVISION_PARTS) void this.informers[p].stop();
      void this.tls.stop();
      for (const w of this.waiters.splice(0)) w.resolve(false);
    };
    if (signal.aborted) stop();
    else signal.addEventListener("abort", stop, { once: true });
  }

  /**
   * Every kind has been listed once, the TLS Secrets' metadata too, and the
   * referenced Secrets have been read once: a first build then serves every
   * TLS host that has a good Secret, not a moment without them.
   */
  synced(): boolean {
    return REVISION_PARTS.every((p) => this.informers[p].hasSynced()) && this.tls.ready();
  }

  /** Resolves once every kind has been listed once (or `signal` aborts). */
  async waitForSync(signal?: AbortSignal): Promise<void> {
    // The routes first: which Secrets are referenced is known only then.
    const all = Promise.all(REVISION_PARTS.map((p) => this.informers[p].waitForSync())).then(() =>
      this.tls.whenReady(),
    );
    if (!signal) return void (await all);
    await Promise.race([
      all,
      new Promise<void>((r) => {
        if (signal.aborted) r();
        else signal.addEventListener("abort", () => r(), { once: true });
      }),
    ]);
  }

  /** The resourceVersion each kind has been read to; undefined before all are listed, or when one is not an integer. */
  revision(): ReadRevision | undefined {
    return readRevision(this.rv);
  }

  /** The newest resourceVersion seen per kind ("" before its first list), for logs and replies. */
  seen(): Readonly<Record<RevisionPart, string>> {
    return { ...this.rv };
  }

  /** Live and terminating routes, slim. The array is not changed afterwards: a later event makes a new one. */
  routes(): readonly EdgeRouteV2[] {
    this.routeList ??= [...this.routeMap.values()];
    return this.routeList;
  }

  route(namespace: string, name: string): EdgeRouteV2 | undefined {
    return this.routeMap.get(objectKey(namespace, name));
  }

  service(namespace: string, name: string): V1Service | undefined {
    return this.serviceMap.get(objectKey(namespace, name));
  }

  /** The contents of the TLS Secrets live routes reference. Not changed afterwards either. */
  secrets(): TlsSecrets {
    return this.tls.secrets();
  }

  /** Whether a `kubernetes.io/tls` Secret by that name exists; undefined before the metadata watch's first list. */
  tlsSecretExists(namespace: string, name: string): boolean | undefined {
    return this.tls.exists(objectKey(namespace, name));
  }

  /** Every Service's ready endpoints: what buildSnapshot takes. Not changed afterwards either. */
  endpoints(): EndpointsByService {
    this.endpointsView ??= new Map(this.endpointMap);
    return this.endpointsView;
  }

  /**
   * True once every kind's cache has seen at least `min` (kinds absent from
   * `min` only need their first list); false past `timeoutMs` or when `signal`
   * aborts.
   */
  waitFor(min: Partial<ReadRevision>, timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
    const started = process.hrtime.bigint();
    const observe = (result: string): void => {
      this.metrics?.waitSeconds.observe({ result }, Number(process.hrtime.bigint() - started) / 1e9);
    };
    if (this.hasReached(min)) {
      observe("reached");
      return Promise.resolve(true);
    }
    if (signal?.aborted) {
      observe("aborted");
      return Promise.resolve(false);
    }
    return new Promise<boolean>((resolve) => {
      const finish = (ok: boolean, result: string): void => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        this.waiters = this.waiters.filter((w) => w !== waiter);
        observe(result);
        resolve(ok);
      };
      const waiter: Waiter = { min, resolve: (ok) => finish(ok, ok ? "reached" : "aborted") };
      const onAbort = (): void => finish(false, "aborted");
      const timer = setTimeout(() => finish(false, "timeout"), timeoutMs);
      signal?.addEventListener("abort", onAbort, { once: true });
      this.waiters.push(waiter);
    });
  }

  /** What the reconciler reads, from this cache: no apiserver request at all; the read revision is the cache's. */
  view(): ClusterView {
    return {
      snapshotInputs: async (signal) => {
        // A route that names a Secret just now, or a Secret just renewed, is
        // read within milliseconds: statuses wait for that rather than say
        // SecretNotFound for a moment.
        await this.tls.whenSettled(this.opts.secretSettleMs ?? 2_000, signal);
        return {
          routes: this.routes(),
          endpoints: this.endpoints(),
          secrets: this.secrets(),
          read: this.revision(),
          stamp: this.inputs(),
        };
      },
      route: (ns, name) => Promise.resolve(this.route(ns, name)),
      service: (ns, name) => Promise.resolve(this.service(ns, name)),
    };
  }

  /**
   * A number that moves whenever what a snapshot is built from may have
   * changed (the live routes' specs, their Services' endpoints, a first list),
   * and not otherwise: equal numbers, equal build inputs (SnapshotPipeline).
   */
  inputs(): number {
    return this.stamp;
  }

  /**
   * `listener` runs (coalesced, after the events of one tick) whenever what a
   * snapshot is built from changes: not for a route whose status alone changed,
   * nor for a terminating route's last steps (it is out of every build already).
   */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private hasReached(min: Partial<ReadRevision>): boolean {
    return REVISION_PARTS.every((p) => {
      const want = min[p];
      return want === undefined ? this.rv[p] !== "" : reached(this.rv[p], want);
    });
  }

  private advance(part: RevisionPart, rv: string): void {
    // The first list of a kind is a change even when it listed nothing.
    if (this.rv[part] === "") this.changed();
    this.rv[part] = rv;
    if (this.waiters.length === 0) return;
    for (const w of [...this.waiters]) if (this.hasReached(w.min)) w.resolve(true);
  }

  private count(part: RevisionPart): number {
    if (part === "routes") return this.routeMap.size;
    return part === "services" ? this.serviceMap.size : this.serviceOfSliceKey.size;
  }

  private changed(): void {
    this.stamp++;
    if (this.changeScheduled) return;
    this.changeScheduled = true;
    setImmediate(() => {
      this.changeScheduled = false;
      for (const l of this.listeners) {
        try {
          l();
        } catch (err) {
          this.opts.log.error({ err }, "cache change listener failed");
        }
      }
    });
  }

  private onRoute(type: EventType, obj: Watched): boolean {
    this.opts.onRouteEvent?.(type, obj);
    const key = keyOf(obj);
    if (!key) return false;
    this.routeList = undefined;
    const before = this.routeMap.get(key);
    // A route already terminating is in no build: its finalizer going, or the
    // object going, changes nothing a snapshot reads.
    const wasTerminating = before?.metadata.deletionTimestamp != null;
    if (type === "DELETED") {
      this.routeMap.delete(key);
      this.referenceSecret(key, undefined);
      return !wasTerminating;
    }
    const after = slimRoute(obj as unknown as EdgeRouteV2);
    this.routeMap.set(key, after);
    this.referenceSecret(key, tlsSecretKeyOf(after));
    if (wasTerminating && after.metadata.deletionTimestamp != null) return false;
    return before === undefined || !sameForSnapshot(before, after);
  }

  private onService(type: EventType, obj: Watched): boolean {
    const key = keyOf(obj);
    if (!key) return false;
    const svc = type === "DELETED" ? undefined : slimService(obj);
    if (svc) this.serviceMap.set(key, svc);
    else this.serviceMap.delete(key);
    this.refreshEndpoints(key);
    return true;
  }

  private onSlice(type: EventType, obj: Watched): boolean {
    const key = keyOf(obj);
    if (!key) return false;
    const before = this.serviceOfSliceKey.get(key);
    if (before !== undefined) {
      const set = this.slicesByService.get(before);
      set?.delete(key);
      if (set?.size === 0) this.slicesByService.delete(before);
      this.serviceOfSliceKey.delete(key);
    }
    const slice = type === "DELETED" ? undefined : slimSlice(obj);
    const svc = slice ? serviceOfEndpointSlice(slice) : undefined;
    if (slice && svc !== undefined) {
      let set = this.slicesByService.get(svc);
      if (!set) this.slicesByService.set(svc, (set = new Map()));
      set.set(key, slice);
      this.serviceOfSliceKey.set(key, svc);
    }
    if (before !== undefined) this.refreshEndpoints(before);
    if (svc !== undefined && svc !== before) this.refreshEndpoints(svc);
    return true;
  }

  /** Which TLS Secret the live route `routeKey` references now (undefined: none). */
  private referenceSecret(routeKey: string, secretKey: string | undefined): void {
    const before = this.routeSecret.get(routeKey);
    if (before === secretKey) return;
    if (secretKey === undefined) this.routeSecret.delete(routeKey);
    else this.routeSecret.set(routeKey, secretKey);
    if (secretKey !== undefined) this.tls.reference(secretKey);
    if (before !== undefined) this.tls.unreference(before);
  }

  /** One Service's endpoints, again from its Service and slices. */
  private refreshEndpoints(svcKey: string): void {
    this.endpointsView = undefined;
    const svc = this.serviceMap.get(svcKey);
    if (!svc) {
      this.endpointMap.delete(svcKey);
      return;
    }
    const slices = [...(this.slicesByService.get(svcKey)?.values() ?? [])];
    this.endpointMap.set(svcKey, serviceEndpoints(svc, slices));
  }
}
