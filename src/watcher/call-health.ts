// Whether the watcher can still reach /reconcile: its liveness. A server that
// answers, even with errors, is reachable, and restarting the watcher would not
// fix it; calls that get no reply at all (refused, reset, TLS refused, timed
// out), again and again for a while, may be a state inside this process that a
// restart clears (trust material it can no longer load, a wedged connection
// pool). So: unhealthy after `failures` such calls in a row spanning at least
// `windowMs`, and healthy again after any reply.

export interface CallHealthOptions {
  /** Calls without a reply in a row before it can turn unhealthy (default 5). */
  failures?: number;
  /** How long the run of failures must last (default 2 min). */
  windowMs?: number;
  now?: () => number;
}

export type Health =
  { healthy: true } | { healthy: false; failures: number; forMs: number; lastError: string };

export class CallHealth {
  private run = 0;
  private since = 0;
  private lastError = "";
  private readonly failures: number;
  private readonly windowMs: number;
  private readonly now: () => number;

  constructor(opts: CallHealthOptions = {}) {
    this.failures = opts.failures ?? 5;
    this.windowMs = opts.windowMs ?? 120_000;
    this.now = opts.now ?? Date.now;
  }

  /** The call got a reply, whatever its status. */
  replied(): void {
    this.run = 0;
  }

  /** The call got no reply. */
  unreachable(error: string): void {
    if (this.run === 0) this.since = this.now();
    this.run++;
    this.lastError = error;
  }

  /** Calls stopped for another reason (leadership lost): what was seen says nothing now. */
  reset(): void {
    this.run = 0;
  }

  health(): Health {
    const forMs = this.run > 0 ? this.now() - this.since : 0;
    if (this.run >= this.failures && forMs >= this.windowMs)
      return { healthy: false, failures: this.run, forMs, lastError: this.lastError };
    return { healthy: true };
  }
}
