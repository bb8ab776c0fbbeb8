// List, then watch from the list's resourceVersion; on any failure, start
// again with backoff; on 410 Gone, list again, after a short backoff too (a
// relist of every object, from every informer an apiserver restart left
// behind at once, is what that apiserver least needs). Each watch asks the
// server to end it after a jittered timeout, and the client ends a stream
// still open past that, so a stream that died without a FIN is noticed. Only keys and
// resourceVersions are kept: the handlers get each object once and keep what
// they need.

import type { Logger } from "../observability/logger.js";
import type { KubeClient } from "./client.js";
import { isExpired } from "./errors.js";
import { keyOf, type Watched } from "../api/object-key.js";
import { listPages } from "./pager.js";
import { utf8Lines } from "./watch-lines.js";

export type EventType = "ADDED" | "MODIFIED" | "DELETED";

export interface InformerOptions {
  /** For logs: `edgeroutes`, `services`, ... */
  name: string;
  /** The collection across all namespaces, e.g. `/api/v1/services`. */
  path: string;
  client: KubeClient;
  onEvent(type: EventType, obj: Watched): void;
  log: Logger;
  /** Server-side watch timeout before jitter (default 300 s; each watch gets 1 to 1.2 times it). */
  watchTimeoutSeconds?: number;
  /** How long past the watch timeout the client waits for the server to end a watch (default 30 s). */
  idleGraceMs?: number;
  pageSize?: number;
  /** A fieldSelector for the list and the watch (e.g. `type=kubernetes.io/tls`). */
  fieldSelector?: string;
  /**
   * Accept headers for the list and the watch: a metadata-only informer asks
   * for PartialObjectMetadataList and PartialObjectMetadata (default JSON objects).
   */
  accept?: { readonly list: string; readonly watch: string };
  /** Restart backoff: doubling from `baseMs` to `maxMs` (default 500 ms to 30 s), with jitter. */
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  /** Per-request timeout for list pages (default 60 s). */
  requestTimeoutMs?: number;
  /**
   * Called whenever the newest resourceVersion seen moves: a whole list in
   * (its resourceVersion, after its events), an event, a bookmark. A cache
   * uses it to say how far it has read.
   */
  onResourceVersion?(rv: string): void;
}

interface WatchEvent {
  type?: string;
  object?: Watched & { code?: number; reason?: string; message?: string };
}

/** The resource version we asked for is no longer in etcd's history: list again. */
class GoneError extends Error {}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}

function rvOf(obj: Watched | undefined): string {
  const rv = (obj?.metadata as { resourceVersion?: unknown } | undefined)?.resourceVersion;
  return typeof rv === "string" ? rv : "";
}

export class Informer {
  private readonly known = new Map<string, string>();
  private rv = "";
  /** The newest resourceVersion of an object seen (listed or in an event). */
  private newestObject = "";
  private synced = false;
  private readonly stopping = new AbortController();
  private running: Promise<void> | undefined;
  private syncWaiters: (() => void)[] = [];
  /** Counters a test or the logs can read: watches opened, lists made, restarts after failure. */
  readonly stats = { watches: 0, lists: 0, failures: 0, relists: 0 };

  constructor(private readonly opts: InformerOptions) {}

  start(): void {
    this.running ??= this.run();
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    await this.running;
  }

  hasSynced(): boolean {
    return this.synced;
  }

  waitForSync(): Promise<void> {
    return this.synced ? Promise.resolve() : new Promise((r) => this.syncWaiters.push(r));
  }

  /** The newest resourceVersion seen (list, event or bookmark); "" before the first list. */
  resourceVersion(): string {
    return this.rv;
  }

  /**
   * The newest resourceVersion carried by an object this informer has seen ("" before any).
   * Unlike resourceVersion() (a list's is the whole store's revision at the
   * time), another cache of the same kind that is watching has seen this
   * object once its own resourceVersion() reaches this: what `seen` sends.
   */
  newestObjectResourceVersion(): string {
    return this.newestObject;
  }

  /** The resourceVersion of the object at `key` (`namespace/name`), undefined when the informer knows none. */
  resourceVersionOf(key: string): string | undefined {
    return this.known.get(key);
  }

  /** How many objects the informer knows. */
  size(): number {
    return this.known.size;
  }

  /** `namespace/name` of every object the informer knows. */
  keys(): string[] {
    return [...this.known.keys()];
  }

  private async run(): Promise<void> {
    const { log, name } = this.opts;
    const signal = this.stopping.signal;
    let failures = 0;
    let gones = 0;
    const base = this.opts.backoffBaseMs ?? 500;
    const max = this.opts.backoffMaxMs ?? 30_000;
    const jittered = (n: number): number =>
      Math.min(max, base * 2 ** Math.min(n - 1, 20)) * (0.5 + Math.random() / 2);
    while (!signal.aborted) {
      try {
        if (!this.rv) await this.list();
        const events = await this.watchOnce();
        // A watch the server ended on schedule is normal; one that ended at once
        // with nothing in it is a failure, or we would spin.
        if (events < 0) throw new Error("the watch ended at once");
        failures = 0;
        gones = 0;
      } catch (err) {
        if (signal.aborted) break;
        if (err instanceof GoneError || isExpired(err)) {
          gones++;
          this.stats.relists++;
          const delay = jittered(gones);
          log.info(
            { informer: name, retryInMs: Math.round(delay) },
            "resource version expired: listing again",
          );
          this.rv = "";
          await sleep(delay, signal);
          continue;
        }
        failures++;
        this.stats.failures++;
        const delay = jittered(failures);
        log.warn({ informer: name, err, retryInMs: Math.round(delay) }, "watch failed");
        await sleep(delay, signal);
      }
    }
  }

  private async list(): Promise<void> {
    const { client, path, pageSize = 500, requestTimeoutMs = 60_000 } = this.opts;
    this.stats.lists++;
    // The watch goes on from the list's resourceVersion, so the list must be one
    // snapshot: an expired one starts again, and what it saw is forgotten.
    let seen = new Set<string>();
    let rv = "";
    const pages = listPages<Watched>(client, path, {
      pageSize,
      timeoutMs: requestTimeoutMs,
      signal: this.stopping.signal,
      consistent: true,
      ...(this.opts.fieldSelector !== undefined ? { query: { fieldSelector: this.opts.fieldSelector } } : {}),
      ...(this.opts.accept ? { accept: this.opts.accept.list } : {}),
      onExpired: () => {
        seen = new Set();
        this.opts.log.info({ informer: this.opts.name }, "list expired (410): listing again");
      },
    });
    for await (const page of pages) {
      rv = page.metadata?.resourceVersion ?? "";
      for (const item of page.items ?? []) {
        const key = keyOf(item);
        if (!key) continue;
        seen.add(key);
        const before = this.known.get(key);
        const now = rvOf(item);
        this.noteObject(now);
        this.known.set(key, now);
        if (before === undefined) this.emit("ADDED", item);
        else if (before !== now) this.emit("MODIFIED", item);
      }
    }
    // What the list no longer has was deleted while we were not watching.
    for (const key of [...this.known.keys()]) {
      if (seen.has(key)) continue;
      this.known.delete(key);
      const [namespace, name] = key.split("/");
      this.emit("DELETED", { metadata: { namespace, name } });
    }
    this.setRv(rv);
    if (!this.synced) {
      this.synced = true;
      for (const w of this.syncWaiters.splice(0)) w();
    }
  }

  /** One watch from `this.rv` until the server ends it. Returns the events seen, or -1 for an instant empty end. */
  private async watchOnce(): Promise<number> {
    const { client, path, watchTimeoutSeconds = 300, idleGraceMs = 30_000 } = this.opts;
    const timeoutSeconds = Math.round(watchTimeoutSeconds * (1 + Math.random() / 5));
    const started = Date.now();
    const res = await client.stream(path, {
      query: {
        watch: true,
        resourceVersion: this.rv,
        allowWatchBookmarks: true,
        timeoutSeconds,
        fieldSelector: this.opts.fieldSelector,
      },
      ...(this.opts.accept ? { accept: this.opts.accept.watch } : {}),
      signal: this.stopping.signal,
      // The whole stream's deadline: the client-side check for a stream that died silently.
      timeoutMs: timeoutSeconds * 1000 + idleGraceMs,
    });
    this.stats.watches++;
    let events = 0;
    for await (const line of utf8Lines(res)) {
      this.handle(JSON.parse(line) as WatchEvent);
      events++;
    }
    return events === 0 && Date.now() - started < 1000 ? -1 : events;
  }

  private handle(ev: WatchEvent): void {
    const obj = ev.object;
    switch (ev.type) {
      case "ERROR":
        if (obj?.code === 410 || obj?.reason === "Expired" || obj?.reason === "Gone")
          throw new GoneError(obj.message);
        throw new Error(`watch error: ${obj?.code ?? "?"} ${obj?.message ?? ""}`);
      case "BOOKMARK":
        this.setRv(rvOf(obj) || this.rv);
        return;
      case "ADDED":
      case "MODIFIED":
      case "DELETED": {
        if (!obj) return;
        const key = keyOf(obj);
        if (key) {
          if (ev.type === "DELETED") this.known.delete(key);
          else this.known.set(key, rvOf(obj));
          this.noteObject(rvOf(obj));
          this.emit(ev.type, obj);
        }
        this.setRv(rvOf(obj) || this.rv);
        return;
      }
      default:
        return;
    }
  }

  /** Integer resourceVersions compare by length, then digits (KEP-5504); anything else is left alone. */
  private noteObject(rv: string): void {
    if (!/^[1-9][0-9]*$/.test(rv)) return;
    const cur = this.newestObject;
    if (cur === "" || rv.length > cur.length || (rv.length === cur.length && rv > cur))
      this.newestObject = rv;
  }

  private setRv(rv: string): void {
    if (rv === this.rv && rv !== "") return;
    this.rv = rv;
    if (rv !== "") this.opts.onResourceVersion?.(rv);
  }

  private emit(type: EventType, obj: Watched): void {
    try {
      this.opts.onEvent(type, obj);
    } catch (err) {
      // A handler's bug must not stop the watch.
      this.opts.log.error({ informer: this.opts.name, err }, "event handler failed");
    }
  }
}
