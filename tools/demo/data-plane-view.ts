// What the demo says about the data plane, read from the real xDS client and
// nothing else: the routes it holds (its CSDS), how often the lab's route came
// and went in what it held, and where its RPCs went. The client answers a
// call every 200 ms and reports only the last one, so a watcher polls it
// faster than that and keeps every call it saw.

import { status as grpcStatus } from "@grpc/grpc-js";
import type { CallResult, ClientState } from "./client-state.js";

export interface SeenCall {
  readonly host: string;
  readonly call: CallResult;
}

/** A gRPC status code by its name (14 → UNAVAILABLE). */
export function codeName(code: number): string {
  return grpcStatus[code] ?? String(code);
}

/**
 * The RPCs to `host` since `since` (ms since the epoch), as one field: the
 * last one failed → `fail(CODE)`; else `served(N backends)`, N the backends
 * that answered since the last failure. `none` before any call.
 */
export function rpcsField(calls: readonly SeenCall[], host: string, since: number): string {
  const mine = calls.filter((c) => c.host === host && c.call.at >= since);
  const last = mine.at(-1);
  if (last === undefined) return "none";
  if (!last.call.ok) return `fail(${codeName(last.call.code)})`;
  const backends = new Set<string>();
  for (let i = mine.length - 1; i >= 0; i--) {
    const c = mine[i]?.call;
    if (!c?.ok) break;
    backends.add(c.backend);
  }
  return `served(${backends.size} backend${backends.size === 1 ? "" : "s"})`;
}

/** The backends that answered calls to `host` since `since`. */
export function backendsReached(calls: readonly SeenCall[], host: string, since: number): Set<string> {
  const out = new Set<string>();
  for (const c of calls) if (c.host === host && c.call.at >= since && c.call.ok) out.add(c.call.backend);
  return out;
}

/** When the last call to `host` that reached a backend ended; undefined if none did. */
export function lastServedAt(calls: readonly SeenCall[], host: string): number | undefined {
  for (let i = calls.length - 1; i >= 0; i--) {
    const c = calls[i];
    if (c?.host === host && c.call.ok) return c.call.at;
  }
  return undefined;
}

/**
 * How many versions the client took that changed whether it holds `route`
 * (`namespace/name`): the lab's dpPushes, counted from the client's history.
 */
export function pushesOf(state: ClientState, route: string): number {
  let held = false;
  let pushes = 0;
  for (const h of state.history) {
    const now = h.routes.includes(route);
    if (now !== held) pushes++;
    held = now;
  }
  return pushes;
}

/** Polls the client every `everyMs` and keeps each call it reports once (by host and time). */
export class CallWatcher {
  readonly calls: SeenCall[] = [];
  private latest: ClientState | undefined;
  private readonly seen = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private failure: Error | undefined;
  private polling = false;

  constructor(
    private readonly read: () => Promise<ClientState>,
    private readonly everyMs = 80,
    /** Calls kept at most (the demo makes a few thousand). */
    private readonly keep = 20_000,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.poll(), this.everyMs);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** The client's state, read now (and its last calls kept). */
  async state(): Promise<ClientState> {
    if (this.failure) throw this.failure;
    const s = await this.read();
    this.take(s);
    return s;
  }

  /** The last state a poll read. */
  last(): ClientState | undefined {
    return this.latest;
  }

  private async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      this.take(await this.read());
      this.failure = undefined;
    } catch (e) {
      this.failure = e as Error;
    } finally {
      this.polling = false;
    }
  }

  private take(s: ClientState): void {
    this.latest = s;
    for (const [host, t] of Object.entries(s.targets)) {
      const call = t.last;
      if (call === null) continue;
      const key = `${host}@${call.at}`;
      if (this.seen.has(key)) continue;
      this.seen.add(key);
      this.calls.push({ host, call });
    }
    this.calls.sort((a, b) => a.call.at - b.call.at);
    if (this.calls.length > this.keep) {
      for (const c of this.calls.splice(0, this.calls.length - this.keep))
        this.seen.delete(`${c.host}@${c.call.at}`);
    }
  }
}
