// What client-go's EventCorrelator does for Events, as plain logic over time:
// the same reason about the same object again is a bump of the first Event's
// count (one PATCH), not a new Event; and each object has a token bucket
// (burst 25, one more every 5 minutes, client-go's spam filter defaults), so a
// route that fails on every retry cannot fill etcd with Events.

export interface EventKey {
  /** The involved object: its uid, else namespace/name. */
  readonly object: string;
  readonly type: string;
  readonly reason: string;
}

export type EventDecision =
  | { readonly action: "create" }
  | { readonly action: "bump"; readonly name: string; readonly count: number }
  | { readonly action: "drop" };

export interface CorrelatorOptions {
  /** Events an object may record at once (default 25). */
  burst?: number;
  /** One more event allowed per this much time (default 5 minutes). */
  refillMs?: number;
  /** A repeat later than this after the last one starts a new Event (default 10 minutes, as client-go). */
  windowMs?: number;
  /** Objects and reasons remembered, least recently used out first (default 4096). */
  maxEntries?: number;
  now?: () => number;
}

interface Seen {
  name: string;
  count: number;
  last: number;
}

interface Bucket {
  tokens: number;
  at: number;
}

export class EventCorrelator {
  private readonly seen = new Map<string, Seen>();
  private readonly buckets = new Map<string, Bucket>();
  private readonly burst: number;
  private readonly refillMs: number;
  private readonly windowMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;

  constructor(opts: CorrelatorOptions = {}) {
    this.burst = opts.burst ?? 25;
    this.refillMs = opts.refillMs ?? 5 * 60_000;
    this.windowMs = opts.windowMs ?? 10 * 60_000;
    this.maxEntries = opts.maxEntries ?? 4096;
    this.now = opts.now ?? Date.now;
  }

  /** What to do with this event now. A "create" must be followed by created(). */
  decide(key: EventKey): EventDecision {
    const now = this.now();
    if (!this.take(key.object, now)) return { action: "drop" };
    const id = this.id(key);
    const prior = this.seen.get(id);
    if (!prior || now - prior.last > this.windowMs) return { action: "create" };
    prior.count++;
    prior.last = now;
    touch(this.seen, id, prior);
    return { action: "bump", name: prior.name, count: prior.count };
  }

  /** The Event the apiserver made for a "create" (or a bump whose Event had gone). */
  created(key: EventKey, name: string): void {
    touch(this.seen, this.id(key), { name, count: 1, last: this.now() });
    trim(this.seen, this.maxEntries);
  }

  /** The Event to bump is gone (Events expire after an hour): the next repeat creates one. */
  forget(key: EventKey): void {
    this.seen.delete(this.id(key));
  }

  private id(key: EventKey): string {
    return `${key.object}\u0000${key.type}\u0000${key.reason}`;
  }

  private take(object: string, now: number): boolean {
    const b = this.buckets.get(object) ?? { tokens: this.burst, at: now };
    const refill = Math.floor((now - b.at) / this.refillMs);
    if (refill > 0) {
      b.tokens = Math.min(this.burst, b.tokens + refill);
      b.at += refill * this.refillMs;
    }
    if (b.tokens >= this.burst) b.at = now;
    const ok = b.tokens > 0;
    if (ok) b.tokens--;
    touch(this.buckets, object, b);
    trim(this.buckets, this.maxEntries);
    return ok;
  }
}

function touch<V>(m: Map<string, V>, k: string, v: V): void {
  m.delete(k);
  m.set(k, v);
}

function trim<V>(m: Map<string, V>, max: number): void {
  while (m.size > max) m.delete(m.keys().next().value as string);
}
