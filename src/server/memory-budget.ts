// A semaphore on the heap that request bodies are expected to take while they
// are read, parsed and answered. Each request takes its share as its bytes
// arrive and gives it back when its answer is sent; a request that finds the
// budget full is told to come back (503 with Retry-After), never queued, so
// two large requests can never hold half each and wait on each other.

import v8 from "node:v8";

export class MemoryBudget {
  private used = 0;

  constructor(
    readonly name: string,
    readonly capacity: number,
  ) {}

  get inUse(): number {
    return this.used;
  }

  /** Takes `bytes` if they fit, and says whether they did. */
  tryTake(bytes: number): boolean {
    if (this.used + bytes > this.capacity) return false;
    this.used += bytes;
    return true;
  }

  give(bytes: number): void {
    this.used = Math.max(0, this.used - bytes);
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
