// Leader election on a coordination.k8s.io/v1 Lease, the way client-go does it:
// a holder renews every retry period; another candidate takes the lease only
// once it has seen no renewal for the holder's lease duration (timed by its
// own clock from when it saw the record change, so clocks need not agree);
// every write carries the resourceVersion it read, so two candidates cannot
// both win. A leader that cannot renew within the renew deadline (shorter than
// the lease duration) stops at once, before anyone else may start. Release on
// shutdown empties the holder, so a successor takes over at its next try.

import type { Logger } from "../observability/logger.js";
import type { KubeClient } from "./client.js";
import { isConflict, isNotFound } from "./errors.js";

export interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

export interface Lease {
  apiVersion: "coordination.k8s.io/v1";
  kind: "Lease";
  metadata: { name: string; namespace: string; resourceVersion?: string };
  spec?: LeaseSpec;
}

/** metav1.MicroTime: RFC 3339 with exactly six fractional digits. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

export type LeaseDecision = { ok: false; heldBy: string } | { ok: true; spec: LeaseSpec };

/**
 * Whether `me` may write the lease now, and what to write. `observedAt` is
 * when this candidate last saw the record change.
 */
export function decideLease(
  current: LeaseSpec | undefined,
  me: string,
  observedAt: number,
  now: number,
  durationSeconds: number,
): LeaseDecision {
  const holder = current?.holderIdentity ?? "";
  const heldFor = (current?.leaseDurationSeconds ?? durationSeconds) * 1000;
  if (holder && holder !== me && observedAt + heldFor > now) return { ok: false, heldBy: holder };
  const renewTime = microTime(now);
  if (holder === me)
    return { ok: true, spec: { ...current, leaseDurationSeconds: durationSeconds, renewTime } };
  return {
    ok: true,
    spec: {
      holderIdentity: me,
      leaseDurationSeconds: durationSeconds,
      acquireTime: renewTime,
      renewTime,
      leaseTransitions: (current?.leaseTransitions ?? 0) + (current ? 1 : 0),
    },
  };
}

export interface LeaderElectorOptions {
  client: KubeClient;
  namespace: string;
  name: string;
  identity: string;
  log: Logger;
  /** How long a holder's silence must last before another takes over (default 15 s). */
  leaseDurationMs?: number;
  /** How long a leader keeps leading without a successful renewal (default 2/3 of the duration). */
  renewDeadlineMs?: number;
  /** How often to try (default 2 s, at most a fifth of the duration). */
  retryPeriodMs?: number;
  onStartedLeading(): void;
  /** Called the moment leadership is lost or given up; work must stop at once. */
  onStoppedLeading(): void;
  now?: () => number;
}

export class LeaderElector {
  private leading = false;
  private lastRenew = 0;
  private observed = "";
  private observedAt = 0;
  private lease: Lease | undefined;
  private readonly stopping = new AbortController();
  private running: Promise<void> | undefined;
  private watchdog: ReturnType<typeof setInterval> | undefined;
  private readonly durationMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryMs: number;
  private readonly now: () => number;
  /** Who holds the lease, as last seen. */
  holder = "";

  constructor(private readonly opts: LeaderElectorOptions) {
    this.durationMs = opts.leaseDurationMs ?? 15_000;
    this.renewDeadlineMs = opts.renewDeadlineMs ?? Math.round((this.durationMs * 2) / 3);
    this.retryMs = opts.retryPeriodMs ?? Math.min(2_000, Math.round(this.durationMs / 5));
    this.now = opts.now ?? Date.now;
    if (!(this.renewDeadlineMs < this.durationMs && this.retryMs < this.renewDeadlineMs)) {
      throw new RangeError("need retry period < renew deadline < lease duration");
    }
  }

  isLeader(): boolean {
    return this.leading;
  }

  start(): void {
    this.running ??= this.run();
    // A renewal that hangs must not keep a leader leading past its deadline.
    this.watchdog = setInterval(
      () => {
        if (this.leading && this.now() - this.lastRenew > this.renewDeadlineMs)
          this.lose("renew deadline passed");
      },
      Math.max(50, Math.round(this.retryMs / 4)),
    );
  }

  /** Stops trying; a leader stops leading and releases the lease. */
  async stop(): Promise<void> {
    this.stopping.abort();
    clearInterval(this.watchdog);
    await this.running;
    if (this.leading) {
      this.lose("stopping");
      await this.release();
    }
  }

  private get path(): string {
    const { namespace, name } = this.opts;
    return `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/leases/${encodeURIComponent(name)}`;
  }

  private async run(): Promise<void> {
    const signal = this.stopping.signal;
    while (!signal.aborted) {
      let ok = false;
      try {
        ok = await this.tryAcquireOrRenew();
      } catch (err) {
        this.opts.log.warn({ err, lease: this.opts.name }, "lease: try failed");
      }
      if (signal.aborted) break;
      if (ok) {
        this.lastRenew = this.now();
        if (!this.leading) {
          this.leading = true;
          this.opts.log.info(
            { identity: this.opts.identity, lease: this.opts.name },
            "lease: acquired, leading",
          );
          this.opts.onStartedLeading();
        }
      } else if (this.leading && this.holder !== this.opts.identity && this.holder !== "") {
        this.lose(`lease taken by ${this.holder}`);
      }
      const wait = this.leading ? this.retryMs : this.retryMs * (1 + Math.random() / 5);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, wait);
        signal.addEventListener("abort", () => (clearTimeout(t), resolve()), { once: true });
      });
    }
  }

  private lose(why: string): void {
    if (!this.leading) return;
    this.leading = false;
    this.opts.log.warn(
      { identity: this.opts.identity, lease: this.opts.name, why },
      "lease: stopped leading",
    );
    this.opts.onStoppedLeading();
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    const { client, namespace, name, identity } = this.opts;
    const timeoutMs = this.retryMs;
    const durationSeconds = Math.max(1, Math.round(this.durationMs / 1000));
    let current: Lease | undefined;
    try {
      current = await client.json<Lease>("GET", this.path, { timeoutMs });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    const now = this.now();
    if (current) {
      const s = current.spec ?? {};
      const seen = `${s.holderIdentity ?? ""}|${s.renewTime ?? ""}|${current.metadata.resourceVersion ?? ""}`;
      if (seen !== this.observed) {
        this.observed = seen;
        this.observedAt = now;
      }
      this.holder = s.holderIdentity ?? "";
    }
    const decision = decideLease(current?.spec, identity, this.observedAt, now, durationSeconds);
    if (!decision.ok) return false;
    const body: Lease = {
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: current ? { ...current.metadata } : { name, namespace },
      spec: decision.spec,
    };
    try {
      this.lease = current
        ? await client.json<Lease>("PUT", this.path, { body, timeoutMs })
        : await client.json<Lease>(
            "POST",
            `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/leases`,
            { body, timeoutMs },
          );
    } catch (err) {
      // Someone else wrote first: not ours this round.
      if (isConflict(err)) return false;
      throw err;
    }
    this.holder = identity;
    return true;
  }

  private async release(): Promise<void> {
    const lease = this.lease;
    if (!lease) return;
    const spec: LeaseSpec = { ...lease.spec, leaseDurationSeconds: 1, renewTime: microTime(this.now()) };
    delete spec.holderIdentity;
    try {
      await this.opts.client.json<Lease>("PUT", this.path, {
        body: { ...lease, spec },
        timeoutMs: this.retryMs,
      });
      this.opts.log.info({ identity: this.opts.identity, lease: this.opts.name }, "lease: released");
    } catch (err) {
      // Lost meanwhile, or the apiserver is gone: the lease expires on its own.
      this.opts.log.warn({ err }, "lease: release failed");
    }
  }
}
