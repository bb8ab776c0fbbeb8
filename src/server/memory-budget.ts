// A semaphore on the heap that request bodies are expected to take while they
// are read, parsed and answered. Each request takes its share as its bytes
// arrive and gives it back when its answer is sent; a request that finds the
// budget full is told to come back (503 with Retry-After), never queued, so
// two large requests can never hold half each and wait on each other.
//
// No one peer (a remote address) may hold more than its fair share of a
// budget at once: a caller that trickles bodies, or holds many at once, takes
// at most that much, and the rest stays for the apiserver's requests (it calls
// from addresses of its own).

import v8 from "node:v8";

/** What one peer may hold of a budget, at most. */
export const PEER_SHARE = 0.5;

/** Whether bytes were taken, and when not, whose limit stood in the way. */
export type TakeResult = "taken" | "full" | "peer-share";

export class MemoryBudget {
  private used = 0;
  private readonly byPeer = new Map<string, number>();
  /** The most that one peer may hold at once. */
  readonly peerCapacity: number;

  constructor(
    readonly name: string,
    readonly capacity: number,
    /** Of the capacity, what one peer may hold (1: no limit of its own). */
    peerShare = PEER_SHARE,
  ) {
    this.peerCapacity = Math.floor(capacity * Math.min(1, Math.max(0, peerShare)));
  }

  get inUse(): number {
    return this.used;
  }

  /** What `peer` holds now. */
  heldBy(peer: string): number {
    return this.byPeer.get(peer) ?? 0;
  }

  /** Takes `bytes` for `peer` if they fit in the budget and in the peer's share. */
  tryTake(bytes: number, peer = ""): TakeResult {
    const held = this.heldBy(peer);
    if (held + bytes > this.peerCapacity) return "peer-share";
    if (this.used + bytes > this.capacity) return "full";
    this.used += bytes;
    this.byPeer.set(peer, held + bytes);
    return "taken";
  }

  give(bytes: number, peer = ""): void {
    this.used = Math.max(0, this.used - bytes);
    const left = this.heldBy(peer) - bytes;
    if (left > 0) this.byPeer.set(peer, left);
    else this.byPeer.delete(peer);
  }
}

export interface MemoryBudgets {
  /** /convert: few, possibly large LISTs. */
  readonly conversion: MemoryBudget;
  /** Admission, /reconcile and the rest: many small bodies, kept apart so a conversion flood cannot starve them. */
  readonly small: MemoryBudget;
}

/** Shares of V8's heap limit (see budgetsFromHeapLimit). */
export const CONVERSION_SHARE = 0.5;
export const SMALL_SHARE = 0.1;

/**
 * Shares of V8's heap limit (what --max-old-space-size sets; the chart sets
 * 384 MiB, a limit of 396 MiB with the young generation): half for
 * conversions, a tenth for the rest. The estimate is not short for the
 * costliest shapes measured (json-shape.test.ts), so both budgets full of them
 * take about 240 MiB, and the process's own 40-60 MiB and V8's slack still fit.
 */
export function budgetsFromHeapLimit(heapLimit = v8.getHeapStatistics().heap_size_limit): MemoryBudgets {
  return {
    conversion: new MemoryBudget("conversion", Math.floor(heapLimit * CONVERSION_SHARE)),
    small: new MemoryBudget("small", Math.floor(heapLimit * SMALL_SHARE)),
  };
}
