// The contents of the TLS Secrets that live routes reference, and of no
// others. Caching every Secret is how edge controllers run out of memory (a
// Secret is up to 1 MiB, and clusters hold thousands: Helm releases, tokens,
// other apps' certificates), so this keeps two things apart:
//  - a metadata-only watch of `kubernetes.io/tls` Secrets in every namespace
//    (PartialObjectMetadata: names and resourceVersions, never `data`), whose
//    informer keeps `namespace/name` -> resourceVersion and nothing else;
//  - a GET of each Secret a route references, again whenever its
//    resourceVersion moves, keeping only `tls.crt` and `tls.key` decoded.
// A Secret no live route references any more is let go at once.
//
// GETs run a few at a time; a failed one is tried again with backoff. A
// referenced Secret whose read keeps failing is absent from `secrets()` (the
// route says SecretNotFound) until a read succeeds.
//
// Metadata is not always free of keys: `kubectl apply` of a Secret copies the
// whole of it into the last-applied annotation, which a metadata read carries.
// So of a metadata event only the name and resourceVersion are read (the
// informer keeps no more), and no object is ever logged.
//
// Key material: the contents go to `secrets()` only. Logs name the Secret and
// the error, which is the apiserver's Status about the request, never data.

import type { KubeClient } from "../kube/client.js";
import { Informer, type EventType } from "../kube/informer.js";
import { PARTIAL_METADATA_ACCEPT, SECRETS_PATH, TLS_SECRET_TYPE } from "../kube/paths.js";
import { keyOf, type Watched } from "../api/object-key.js";
import type { Logger } from "../observability/logger.js";
import { compareResourceVersion, isComparableResourceVersion } from "../dataplane/read-revision.js";
import type { TlsSecret, TlsSecrets } from "../translate/tls-secrets.js";
import { readTlsSecret, sameTlsSecret } from "./tls-secret-refs.js";

export interface TlsSecretContentsOptions {
  client: KubeClient;
  log: Logger;
  /** A referenced Secret's contents appeared, changed or went; or the first reads are done (ready()). */
  onChange: () => void;
  /** Told of every metadata event (the cache counts them). */
  onMetadataEvent?: (type: EventType) => void;
  /** GETs in flight at once (default 4). */
  concurrency?: number;
  /** Retry of a failed GET: doubling from `retryBaseMs` to `retryMaxMs` (default 500 ms to 30 s), with jitter. */
  retryBaseMs?: number;
  retryMaxMs?: number;
  /**
   * How long ready() waits for the first list before it says ready without it
   * (default 30 s): a server whose RBAC lacks Secrets still serves every route
   * without TLS, and says SecretNotFound for the rest, rather than nothing.
   */
  listPatienceMs?: number;
  /** Passed to the informer. */
  watchTimeoutSeconds?: number;
  pageSize?: number;
  backoffMaxMs?: number;
}

interface Held {
  readonly resourceVersion: string;
  readonly secret: TlsSecret;
}

/** True when `meta` is newer than `held` (or they differ and cannot be compared). */
function newer(meta: string, held: string): boolean {
  if (isComparableResourceVersion(meta) && isComparableResourceVersion(held))
    return compareResourceVersion(meta, held) > 0;
  return meta !== held;
}

export class TlsSecretContents {
  private readonly informer: Informer;
  /** Referenced Secret -> how many live routes reference it. */
  private readonly refs = new Map<string, number>();
  private readonly held = new Map<string, Held>();
  private view: TlsSecrets | undefined;
  private readonly queue = new Set<string>();
  private readonly inFlight = new Set<string>();
  /** Referenced Secrets read at least once (successfully or not) since they were referenced. */
  private readonly tried = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly retries = new Map<string, ReturnType<typeof setTimeout>>();
  /** The metadata resourceVersion at which a GET found no TLS Secret: not read again until it moves. */
  private readonly missing = new Map<string, string>();
  private settleWaiters: (() => void)[] = [];
  private readyWaiters: (() => void)[] = [];
  private wasReady = false;
  private stopped = false;
  private gaveUpWaiting = false;
  private patience: ReturnType<typeof setTimeout> | undefined;

  constructor(private readonly opts: TlsSecretContentsOptions) {
    this.informer = new Informer({
      name: "secrets (tls, metadata)",
      path: SECRETS_PATH,
      client: opts.client,
      log: opts.log,
      fieldSelector: `type=${TLS_SECRET_TYPE}`,
      accept: PARTIAL_METADATA_ACCEPT,
      onEvent: (t, o) => this.onMetadata(t, o),
      onResourceVersion: () => {
        if (!this.wasReady) this.checkReady();
      },
      ...(opts.watchTimeoutSeconds !== undefined ? { watchTimeoutSeconds: opts.watchTimeoutSeconds } : {}),
      ...(opts.pageSize !== undefined ? { pageSize: opts.pageSize } : {}),
      ...(opts.backoffMaxMs !== undefined ? { backoffMaxMs: opts.backoffMaxMs } : {}),
    });
  }

  start(): void {
    this.informer.start();
    // The informer says it has synced only after its list's last resourceVersion
    // callback: readiness is looked at again then, not at the next bookmark.
    void this.informer.waitForSync().then(() => this.checkReady());
    this.patience ??= setTimeout(() => {
      if (this.listed() || this.stopped) return;
      this.gaveUpWaiting = true;
      this.opts.log.warn(
        { informer: "secrets (tls, metadata)" },
        "TLS Secrets not listed yet (is list/watch of secrets granted?): serving without them, routes with TLS say SecretNotFound",
      );
      this.checkReady();
    }, this.opts.listPatienceMs ?? 30_000);
    this.patience.unref?.();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.patience);
    for (const t of this.retries.values()) clearTimeout(t);
    this.retries.clear();
    this.queue.clear();
    for (const w of this.settleWaiters.splice(0)) w();
    for (const w of this.readyWaiters.splice(0)) w();
    await this.informer.stop();
  }

  /** The metadata watch has listed once. */
  listed(): boolean {
    return this.informer.hasSynced();
  }

  /** Listed, and every referenced Secret that exists has been read once (or tried): a build can see them. */
  ready(): boolean {
    if (!this.listed()) return this.gaveUpWaiting;
    for (const key of this.refs.keys())
      if (this.informer.resourceVersionOf(key) !== undefined && !this.tried.has(key)) return false;
    return true;
  }

  whenReady(): Promise<void> {
    return this.ready() || this.stopped ? Promise.resolve() : new Promise((r) => this.readyWaiters.push(r));
  }

  /** Whether a `kubernetes.io/tls` Secret by that key exists; undefined before the first list. */
  exists(key: string): boolean | undefined {
    if (!this.listed()) return undefined;
    return this.informer.resourceVersionOf(key) !== undefined;
  }

  /** The referenced Secrets' contents, by `namespace/name`. Not changed afterwards: a change makes a new map. */
  secrets(): TlsSecrets {
    this.view ??= new Map([...this.held].map(([k, h]) => [k, h.secret]));
    return this.view;
  }

  /** TLS Secrets the metadata watch knows (all of them, referenced or not). */
  metadataCount(): number {
    return this.informer.size();
  }

  /** Referenced Secrets whose contents are held. */
  heldCount(): number {
    return this.held.size;
  }

  /** No read queued or in flight (a read waiting out its backoff does not count). */
  settled(): boolean {
    return this.queue.size === 0 && this.inFlight.size === 0;
  }

  /** True once settled(); false past `timeoutMs` or when `signal` aborts. */
  whenSettled(timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
    if (this.settled()) return Promise.resolve(true);
    if (signal?.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const finish = (ok: boolean): void => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        this.settleWaiters = this.settleWaiters.filter((w) => w !== waiter);
        resolve(ok);
      };
      const waiter = (): void => finish(this.settled());
      const onAbort = (): void => finish(false);
      const timer = setTimeout(() => finish(false), timeoutMs);
      signal?.addEventListener("abort", onAbort, { once: true });
      this.settleWaiters.push(waiter);
    });
  }

  /** One more live route references `key`. */
  reference(key: string): void {
    const n = this.refs.get(key) ?? 0;
    this.refs.set(key, n + 1);
    if (n === 0) this.want(key);
  }

  /** One live route less references `key`; at none its contents are let go. */
  unreference(key: string): void {
    const n = this.refs.get(key) ?? 0;
    if (n > 1) return void this.refs.set(key, n - 1);
    this.refs.delete(key);
    this.tried.delete(key);
    this.failures.delete(key);
    this.missing.delete(key);
    this.queue.delete(key);
    const retry = this.retries.get(key);
    if (retry !== undefined) clearTimeout(retry);
    this.retries.delete(key);
    this.drop(key);
    this.afterProgress();
  }

  private onMetadata(type: EventType, obj: Watched): void {
    this.opts.onMetadataEvent?.(type);
    const key = keyOf(obj);
    if (key === undefined || !this.refs.has(key)) return;
    if (type === "DELETED") {
      this.queue.delete(key);
      this.drop(key);
      this.afterProgress();
      return;
    }
    this.want(key);
  }

  /** Queues a read of `key` when it is referenced, exists and its held contents are older than its metadata. */
  private want(key: string): void {
    if (this.stopped || !this.refs.has(key) || this.retries.has(key)) return;
    const meta = this.informer.resourceVersionOf(key);
    if (meta === undefined || this.missing.get(key) === meta) return;
    const held = this.held.get(key);
    if (held !== undefined && !newer(meta, held.resourceVersion)) return;
    this.queue.add(key);
    this.pump();
  }

  private pump(): void {
    const limit = Math.max(1, this.opts.concurrency ?? 4);
    while (!this.stopped && this.inFlight.size < limit && this.queue.size > 0) {
      const key = this.queue.values().next().value as string;
      this.queue.delete(key);
      if (this.inFlight.has(key)) continue; // read again when this one ends (want() after it)
      this.inFlight.add(key);
      void this.read(key);
    }
  }

  private async read(key: string): Promise<void> {
    try {
      const got = await readTlsSecret(this.opts.client, key);
      if (this.refs.has(key)) {
        this.tried.add(key);
        this.failures.delete(key);
        if (got === undefined) {
          this.missing.set(key, this.informer.resourceVersionOf(key) ?? "");
          this.drop(key);
        } else {
          this.missing.delete(key);
          this.hold(key, got);
        }
      }
    } catch (err) {
      if (this.refs.has(key) && !this.stopped) {
        this.tried.add(key);
        const n = (this.failures.get(key) ?? 0) + 1;
        this.failures.set(key, n);
        const base = this.opts.retryBaseMs ?? 500;
        const max = this.opts.retryMaxMs ?? 30_000;
        const delay = Math.min(max, base * 2 ** Math.min(n - 1, 20)) * (0.5 + Math.random() / 2);
        this.opts.log.warn(
          { secret: key, err, retryInMs: Math.round(delay) },
          "reading a referenced TLS Secret failed",
        );
        this.retries.set(
          key,
          setTimeout(() => {
            this.retries.delete(key);
            this.want(key);
          }, delay),
        );
      }
    } finally {
      this.inFlight.delete(key);
      // The metadata may have moved while this read was out.
      this.want(key);
      this.pump();
      this.afterProgress();
    }
  }

  private hold(key: string, got: Held): void {
    const before = this.held.get(key);
    this.held.set(key, got);
    if (sameTlsSecret(before?.secret, got.secret)) return; // a label or annotation moved it: nothing to build
    this.view = undefined;
    this.opts.onChange();
  }

  private drop(key: string): void {
    if (!this.held.delete(key)) return;
    this.view = undefined;
    this.opts.onChange();
  }

  private afterProgress(): void {
    if (this.settled()) for (const w of [...this.settleWaiters]) w();
    this.checkReady();
  }

  private checkReady(): void {
    const ready = this.ready();
    if (ready && !this.wasReady) this.opts.onChange();
    this.wasReady = ready;
    if (ready) for (const w of this.readyWaiters.splice(0)) w();
  }
}
