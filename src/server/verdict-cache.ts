// A bounded cache of verdicts with a time to live: least recently used out
// first, one entry at a time, never the whole cache at once (a flood of new
// bogus tokens must not also evict the watcher's good one: keep those in a
// cache of their own).

export class VerdictCache<V> {
  private readonly entries = new Map<string, { value: V; until: number }>();

  constructor(
    readonly maxEntries: number,
    private readonly now: () => number = Date.now,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  get(key: string): V | undefined {
    const hit = this.entries.get(key);
    if (!hit) return undefined;
    if (hit.until <= this.now()) {
      this.entries.delete(key);
      return undefined;
    }
    // Map order is insertion order: re-inserting makes it the most recent.
    this.entries.delete(key);
    this.entries.set(key, hit);
    return hit.value;
  }

  set(key: string, value: V, ttlMs: number): void {
    this.entries.delete(key);
    this.entries.set(key, { value, until: this.now() + ttlMs });
    while (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
    }
  }
}
