// client-go's workqueue semantics, with no I/O: a key added while queued is
// queued once; a key is never handed out twice at once (added while being
// processed, it is queued again on `done`); failures back off per key under an
// overall token bucket; adds can be delayed. The snapshot key has a lane of its
// own and is coalesced past its leading edge: one build at a time; the
// first add after a quiet spell is queued at once (a lone change is not held
// back), and adds that keep coming wait for a short quiet spell (capped), so a
// thousand route changes make a handful of builds.

import { TokenBucket } from "../kube/token-bucket.js";
import { ItemExponentialBackoff, MaxOfRateLimiter, type RateLimiter } from "./rate-limit.js";
import { SNAPSHOT_KEY } from "../reconcile/protocol.js";
import type { QueueMetrics } from "./queue-metrics.js";

export type Lane = "route" | "snapshot";

export interface Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** Looks the timer functions up at call time, so test fake timers apply. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => {
    const t = globalThis.setTimeout(fn, ms);
    // Timers alone must not keep a stopping process alive.
    (t as { unref?: () => void }).unref?.();
    return t;
  },
  clearTimeout: (h) => globalThis.clearTimeout(h as ReturnType<typeof globalThis.setTimeout>),
};

export interface WorkQueueOptions {
  /** First retry delay; doubles per failure (default 5 ms). */
  baseDelayMs?: number;
  /** Longest retry delay (default 1,000 s). */
  maxDelayMs?: number;
  /** Overall rate of rate-limited re-adds (default 50/s, burst 300). */
  qps?: number;
  burst?: number;
  /**
   * The snapshot key's quiet spell (default 200 ms; 0: no coalescing). An add
   * that comes this long after the previous one is queued at once; one that
   * comes sooner waits until adds have been quiet this long.
   */
  snapshotHoldOffMs?: number;
  /** Longest a burst of snapshot adds waits from its first add (default 1 s). */
  snapshotMaxHoldOffMs?: number;
  snapshotKey?: string;
  clock?: Clock;
  metrics?: QueueMetrics;
}

interface Waiter {
  wake(): void;
}

/** A FIFO with O(1) amortised shift. */
class Fifo {
  private items: string[] = [];
  private head = 0;

  push(k: string): void {
    this.items.push(k);
  }

  shift(): string | undefined {
    if (this.head >= this.items.length) return undefined;
    const k = this.items[this.head++];
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return k;
  }

  get length(): number {
    return this.items.length - this.head;
  }
}

export class WorkQueue {
  private readonly routes = new Fifo();
  private snapshotQueued = false;
  /** Keys that must be processed (again): queued, or to be queued on `done`. */
  private readonly dirty = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly delayed = new Map<string, { dueAt: number; timer: unknown }>();
  private readonly queuedAt = new Map<string, number>();
  private readonly startedAt = new Map<string, number>();
  private readonly waiters: Record<Lane, Waiter[]> = { route: [], snapshot: [] };
  private readonly limiter: RateLimiter;
  private readonly clock: Clock;
  private readonly holdOffMs: number;
  private readonly maxHoldOffMs: number;
  private hold: { first: number; due: number; timer: unknown } | undefined;
  private lastSnapshotAdd = Number.NEGATIVE_INFINITY;
  readonly snapshotKey: string;
  private shuttingDown = false;

  constructor(private readonly opts: WorkQueueOptions = {}) {
    this.clock = opts.clock ?? systemClock;
    this.limiter = new MaxOfRateLimiter(
      new ItemExponentialBackoff(opts.baseDelayMs ?? 5, opts.maxDelayMs ?? 1_000_000),
      new TokenBucket(opts.qps ?? 50, opts.burst ?? 300, () => this.clock.now()),
    );
    this.holdOffMs = opts.snapshotHoldOffMs ?? 200;
    this.maxHoldOffMs = Math.max(this.holdOffMs, opts.snapshotMaxHoldOffMs ?? 1000);
    this.snapshotKey = opts.snapshotKey ?? SNAPSHOT_KEY;
  }

  laneOf(key: string): Lane {
    return key === this.snapshotKey ? "snapshot" : "route";
  }

  /** Marks `key` for processing. The snapshot key is coalesced (see holdSnapshot). */
  add(key: string): void {
    if (key === this.snapshotKey && this.holdOffMs > 0) this.holdSnapshot();
    else this.insert(key);
  }

  /**
   * Leading edge: an add after `snapshotHoldOffMs` without one is queued at
   * once (if a build is in flight, it runs right after it). Trailing edge:
   * adds that come sooner are held until adds have been quiet for the
   * hold-off, or at the latest `snapshotMaxHoldOffMs` after the first held
   * add, so steady churn builds at most about once per max hold-off (plus the
   * build itself).
   */
  private holdSnapshot(): void {
    const key = this.snapshotKey;
    if (this.shuttingDown) return;
    const now = this.clock.now();
    const quiet = now - this.lastSnapshotAdd >= this.holdOffMs;
    this.lastSnapshotAdd = now;
    // Already due (queued, or to be re-queued after the build in flight): this
    // add joins that build.
    if (this.dirty.has(key)) return;
    if (this.hold) {
      this.hold.due = Math.min(now + this.holdOffMs, this.hold.first + this.maxHoldOffMs);
      return;
    }
    if (quiet) {
      this.insert(key);
      return;
    }
    const hold = { first: now, due: now + this.holdOffMs, timer: undefined as unknown };
    // One timer per burst: when it fires early (the deadline moved), it waits the rest.
    const fire = (): void => {
      const rest = hold.due - this.clock.now();
      if (rest > 0) {
        hold.timer = this.clock.setTimeout(fire, rest);
        return;
      }
      this.hold = undefined;
      this.insert(key);
    };
    hold.timer = this.clock.setTimeout(fire, this.holdOffMs);
    this.hold = hold;
  }

  /** Adds `key` after `ms`; of several pending delayed adds of a key, the earliest wins. */
  addAfter(key: string, ms: number): void {
    if (this.shuttingDown) return;
    if (ms <= 0) {
      this.insert(key);
      return;
    }
    const dueAt = this.clock.now() + ms;
    const pending = this.delayed.get(key);
    if (pending) {
      if (pending.dueAt <= dueAt) return;
      this.clock.clearTimeout(pending.timer);
    }
    const timer = this.clock.setTimeout(() => {
      this.delayed.delete(key);
      this.insert(key);
    }, ms);
    this.delayed.set(key, { dueAt, timer });
  }

  /** Adds `key` after its backoff (and the overall bucket) allows; counts a retry. */
  addRateLimited(key: string, atLeastMs = 0): void {
    if (this.shuttingDown) return;
    this.opts.metrics?.retries.inc({ lane: this.laneOf(key) });
    this.addAfter(key, Math.max(atLeastMs, this.limiter.when(key)));
  }

  /** The key succeeded: its backoff starts over. */
  forget(key: string): void {
    this.limiter.forget(key);
  }

  numRequeues(key: string): number {
    return this.limiter.retries(key);
  }

  /** Hands out the next ready key of `lane`, or undefined when there is none. */
  tryGet(lane: Lane): string | undefined {
    if (this.shuttingDown) return undefined;
    let key: string | undefined;
    if (lane === "snapshot") {
      if (!this.snapshotQueued) return undefined;
      this.snapshotQueued = false;
      key = this.snapshotKey;
    } else {
      key = this.routes.shift();
      if (key === undefined) return undefined;
    }
    const now = this.clock.now();
    this.processing.add(key);
    this.dirty.delete(key);
    this.startedAt.set(key, now);
    const since = this.queuedAt.get(key);
    this.queuedAt.delete(key);
    const m = this.opts.metrics;
    if (m) {
      m.depth.set({ lane }, this.depthOf(lane));
      if (since !== undefined) m.waitSeconds.observe({ lane }, (now - since) / 1000);
    }
    return key;
  }

  /**
   * Waits for the next key of `lane`. Undefined once the queue shuts down or
   * `signal` aborts (a worker that lost leadership stops waiting at once).
   */
  async get(lane: Lane, signal?: AbortSignal): Promise<string | undefined> {
    for (;;) {
      if (signal?.aborted) {
        // A wake-up this waiter got but will not use goes to the next one.
        if (this.depthOf(lane) > 0) this.waiters[lane].shift()?.wake();
        return undefined;
      }
      const key = this.tryGet(lane);
      if (key !== undefined || this.shuttingDown) return key;
      await new Promise<void>((resolve) => {
        const waiter: Waiter = {
          wake: () => {
            signal?.removeEventListener("abort", onAbort);
            resolve();
          },
        };
        const onAbort = () => {
          const i = this.waiters[lane].indexOf(waiter);
          if (i >= 0) this.waiters[lane].splice(i, 1);
          resolve();
        };
        signal?.addEventListener("abort", onAbort, { once: true });
        this.waiters[lane].push(waiter);
      });
    }
  }

  /** The worker finished `key`; if it was added meanwhile, it is queued again. */
  done(key: string): void {
    if (!this.processing.delete(key)) return;
    const lane = this.laneOf(key);
    const started = this.startedAt.get(key);
    this.startedAt.delete(key);
    if (started !== undefined)
      this.opts.metrics?.workSeconds.observe({ lane }, (this.clock.now() - started) / 1000);
    if (this.dirty.has(key)) this.enqueue(key);
  }

  /** Stops handing out keys and drops delayed adds; every waiting `get` returns. */
  shutDown(): void {
    this.shuttingDown = true;
    for (const { timer } of this.delayed.values()) this.clock.clearTimeout(timer);
    this.delayed.clear();
    if (this.hold) this.clock.clearTimeout(this.hold.timer);
    this.hold = undefined;
    for (const lane of ["route", "snapshot"] as const) {
      for (const w of this.waiters[lane].splice(0)) w.wake();
    }
  }

  /** Keys ready to be handed out. */
  len(): number {
    return this.routes.length + (this.snapshotQueued ? 1 : 0);
  }

  /** Nothing queued, delayed or in flight. */
  isIdle(): boolean {
    return this.len() === 0 && this.processing.size === 0 && this.delayed.size === 0 && !this.hold;
  }

  inFlight(): number {
    return this.processing.size;
  }

  private depthOf(lane: Lane): number {
    return lane === "snapshot" ? (this.snapshotQueued ? 1 : 0) : this.routes.length;
  }

  private insert(key: string): void {
    if (this.shuttingDown || this.dirty.has(key)) return;
    if (key === this.snapshotKey) this.cancelPendingSnapshot();
    this.dirty.add(key);
    this.opts.metrics?.adds.inc({ lane: this.laneOf(key) });
    if (this.processing.has(key)) return;
    this.enqueue(key);
  }

  /** A build about to be queued covers every pending add of the snapshot key. */
  private cancelPendingSnapshot(): void {
    const key = this.snapshotKey;
    const pending = this.delayed.get(key);
    if (pending) this.clock.clearTimeout(pending.timer);
    this.delayed.delete(key);
    if (this.hold) this.clock.clearTimeout(this.hold.timer);
    this.hold = undefined;
  }

  private enqueue(key: string): void {
    const lane = this.laneOf(key);
    if (lane === "snapshot") this.snapshotQueued = true;
    else this.routes.push(key);
    this.queuedAt.set(key, this.clock.now());
    this.opts.metrics?.depth.set({ lane }, this.depthOf(lane));
    this.waiters[lane].shift()?.wake();
  }
}
