// A bound on the response bytes being written at once, across every stream.
// Each response becomes a gRPC frame (a copy) when it is written, and lives
// until HTTP/2 has sent it: ten Envoys taking a 2.76 MB route configuration
// at once would be ten copies alive together. Here a large response waits
// until the bytes in flight leave room (at least one always goes), and each
// stream keeps its own order. A write that takes longer than `stallMs` (a
// client that stopped reading) stops counting, so one slow client never holds
// the others back for longer than that; keepalive ends it if it is dead.
//
// A written frame is garbage outside V8's heap, and V8 left it there: ten
// clients taking 2.76 MB each piled up to 30 MiB of dead frames before a
// collection came, and a young collection freed little of them (a full one
// freed the dead ones). So after every `collectEveryBytes` written the budget
// asks V8 for a full collection, as a task of its own, when the process
// exposes one (`--expose-gc`, the chart's default); without it only the peak
// changes.

import type { ResponseChunks } from "./response-chunks.js";
import type { Writable } from "./stream.js";

/** What the budget needs of a gRPC call: a write with a callback once it has been sent. */
export interface CallWriter {
  write(parts: ResponseChunks, done: () => void): unknown;
}

export interface PacedWriter extends Writable {
  /** The stream ended: what it queued is dropped, and what it had in flight is released. */
  close(): void;
}

type Gc = (opts: { type: "major"; execution: "async" }) => unknown;

/** V8's full collection, run as a task of its own, if the process was started with `--expose-gc`. */
export function fullCollection(): (() => void) | undefined {
  const gc = (globalThis as { gc?: Gc }).gc;
  return typeof gc === "function" ? () => void gc({ type: "major", execution: "async" }) : undefined;
}

export class WriteBudget {
  private inFlight = 0;
  private writtenSinceCollection = 0;
  private readonly waiting = new Set<() => void>();

  constructor(
    readonly maxBytes = 3 * 1024 * 1024,
    private readonly stallMs = 5_000,
    private readonly collect: (() => void) | undefined = fullCollection(),
    private readonly collectEveryBytes = 8 * 1024 * 1024,
  ) {}

  /** Bytes counted as in flight now (for tests and metrics). */
  bytesInFlight(): number {
    return this.inFlight;
  }

  writer(call: CallWriter): PacedWriter {
    const queue: ResponseChunks[] = [];
    const held = new Set<{ size: number }>();
    let closed = false;
    const release = (slot: { size: number }) => {
      if (!held.delete(slot)) return;
      this.inFlight -= slot.size;
      this.wake();
    };
    const pump = () => {
      this.waiting.delete(pump);
      while (!closed && queue.length > 0) {
        const parts = queue[0] as ResponseChunks;
        const size = parts.size;
        if (this.inFlight > 0 && this.inFlight + size > this.maxBytes) {
          this.waiting.add(pump);
          return;
        }
        queue.shift();
        const slot = { size };
        held.add(slot);
        this.inFlight += size;
        const timer = setTimeout(() => release(slot), this.stallMs);
        timer.unref();
        call.write(parts, () => {
          clearTimeout(timer);
          release(slot);
          this.written(size);
        });
      }
    };
    return {
      write(parts) {
        if (closed) return;
        queue.push(parts);
        pump();
      },
      close: () => {
        closed = true;
        queue.length = 0;
        this.waiting.delete(pump);
        for (const slot of [...held]) release(slot);
      },
    };
  }

  private written(bytes: number): void {
    if (this.collect === undefined) return;
    this.writtenSinceCollection += bytes;
    if (this.writtenSinceCollection < this.collectEveryBytes) return;
    this.writtenSinceCollection = 0;
    this.collect();
  }

  private wake(): void {
    for (const pump of [...this.waiting]) {
      if (this.inFlight >= this.maxBytes) return;
      pump();
    }
  }
}
