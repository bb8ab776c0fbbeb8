// ACK records kept in coordination.k8s.io/v1 Leases, one per server replica
// that serves xDS, named `<prefix>-<pod>` in the release's namespace:
//  - the writer puts its replica's record (ack-records.ts) in the Lease's
//    annotation when it changes (at once after a quiet spell, else at most
//    once per debounce period), renews it every third of the
//    lease duration, and deletes it on a clean stop; owned by its Pod when the
//    pod's uid is known, so a deleted pod's record goes with it;
//  - the reader lists and watches those Leases by label (one object per
//    replica, never per route) and answers the live records.
// A replica SIGKILLed leaves its record behind until it expires: readers stop
// counting it after its lease duration (isLive).

import type { Logger } from "../../observability/logger.js";
import type { KubeClient } from "../../kube/client.js";
import { isConflict, isNotFound } from "../../kube/errors.js";
import { Informer } from "../../kube/informer.js";
import { microTime } from "../../kube/lease.js";
import type { Watched } from "../../api/object-key.js";
import {
  ACK_ANNOTATION,
  ACK_COMPONENT,
  decodeRecord,
  encodeRecord,
  isLive,
  type AckRecord,
  type StoredRecord,
} from "./ack-records.js";

export interface AckLeaseIdentity {
  /** The release's namespace: where every replica's record lives. */
  readonly namespace: string;
  /** Leases are named `<prefix>-<pod>`; the reader takes only names with this prefix (two releases may share a namespace). */
  readonly prefix: string;
  /** This replica: the pod's name (downward API). */
  readonly pod: string;
  /** The pod's uid, for the ownerReference; absent outside a pod. */
  readonly podUid?: string;
  /** How long a record counts without a renewal (default 15 s). */
  readonly durationSeconds?: number;
}

export const DEFAULT_ACK_LEASE_SECONDS = 15;

export const ACK_LABELS = {
  "app.kubernetes.io/name": "edge-operator",
  "app.kubernetes.io/component": ACK_COMPONENT,
} as const;

interface AckLease {
  apiVersion: "coordination.k8s.io/v1";
  kind: "Lease";
  metadata: {
    name: string;
    namespace: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string }[];
  };
  spec?: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    acquireTime?: string;
    renewTime?: string;
  };
}

/** A record's clients alone (what a verdict reads), from its encoded form. */
function standings(body: string): string {
  const i = body.indexOf('"clients":');
  return i < 0 ? body : body.slice(i);
}

export function ackLeaseName(prefix: string, pod: string): string {
  return `${prefix}-${pod}`;
}

function leasesPath(namespace: string): string {
  return `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/leases`;
}

/**
 * The record a Lease holds, or undefined for a Lease that is not one (or is
 * malformed: the error says which field). Without a prefix, any Lease with
 * the annotation (a reader that looks at every release's records).
 */
export function recordFromLease(obj: Watched, prefix?: string): StoredRecord | undefined {
  const lease = obj as Partial<AckLease>;
  const name = lease.metadata?.name;
  if (typeof name !== "string" || (prefix !== undefined && !name.startsWith(`${prefix}-`))) return undefined;
  const text = lease.metadata?.annotations?.[ACK_ANNOTATION];
  if (typeof text !== "string") return undefined;
  const replica = lease.spec?.holderIdentity ?? (prefix !== undefined ? name.slice(prefix.length + 1) : name);
  const renewedAtMs = Date.parse(lease.spec?.renewTime ?? "");
  const durationSeconds = lease.spec?.leaseDurationSeconds ?? 0;
  if (!Number.isFinite(renewedAtMs) || durationSeconds <= 0)
    throw new Error(`lease ${name}: spec.renewTime and spec.leaseDurationSeconds are required`);
  return { ...decodeRecord(replica, text), renewedAtMs, durationSeconds };
}

export interface AckRecordWriterOptions {
  readonly client: KubeClient;
  readonly identity: AckLeaseIdentity;
  /** This replica's record now. */
  readonly record: () => AckRecord;
  readonly log?: Logger;
  /** Least time between two writes made for changes (default 100 ms): a burst of ACKs is one write. */
  readonly debounceMs?: number;
  readonly now?: () => number;
}

export class AckRecordWriter {
  private lease: AckLease | undefined;
  private written = "";
  private debounce: ReturnType<typeof setTimeout> | undefined;
  private renew: ReturnType<typeof setInterval> | undefined;
  private writing: Promise<void> | undefined;
  private lastFlush = 0;
  private again = false;
  private stopped = false;
  /** Writes made, for tests and logs. */
  writes = 0;

  constructor(private readonly opts: AckRecordWriterOptions) {}

  get name(): string {
    return ackLeaseName(this.opts.identity.prefix, this.opts.identity.pod);
  }

  private get duration(): number {
    return this.opts.identity.durationSeconds ?? DEFAULT_ACK_LEASE_SECONDS;
  }

  start(): void {
    this.flush(true);
    this.renew = setInterval(() => this.flush(true), Math.max(200, (this.duration * 1000) / 3));
  }

  /** The record may have changed: written after the debounce, unless it did not. */
  changed(): void {
    if (this.stopped || this.debounce) return;
    // A new version served changes no client's standing on any version: the next write or renewal carries it.
    if (standings(this.body()) === standings(this.written)) return;
    // The first change after a quiet spell is written at once (an ACK reaches the other
    // replicas in one write and one watch event); a burst is one write per debounce period.
    const wait = Math.max(0, this.lastFlush + (this.opts.debounceMs ?? 100) - Date.now());
    this.debounce = setTimeout(() => {
      this.debounce = undefined;
      this.lastFlush = Date.now();
      this.flush(false);
    }, wait);
  }

  /** Written now or after the write in flight; `renew`: even if unchanged. */
  private flush(renew: boolean): void {
    if (this.stopped) return;
    if (this.writing) {
      this.again ||= renew || standings(this.body()) !== standings(this.written);
      return;
    }
    if (!renew && standings(this.body()) === standings(this.written)) return;
    this.writing = this.writeOnce()
      .catch((err: unknown) => this.opts.log?.warn({ err, lease: this.name }, "xDS ACK record: write failed"))
      .finally(() => {
        this.writing = undefined;
        if (this.again) {
          this.again = false;
          this.flush(true);
        }
      });
  }

  private body(): string {
    return encodeRecord(this.opts.record());
  }

  /** Waits for the write in flight (tests). */
  async idle(): Promise<void> {
    while (this.writing) await this.writing;
  }

  private desired(body: string, current: AckLease | undefined): AckLease {
    const { namespace, pod, podUid } = this.opts.identity;
    const now = microTime((this.opts.now ?? Date.now)());
    return {
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: {
        ...(current?.metadata ?? {}),
        name: this.name,
        namespace,
        labels: { ...(current?.metadata.labels ?? {}), ...ACK_LABELS },
        annotations: { ...(current?.metadata.annotations ?? {}), [ACK_ANNOTATION]: body },
        // No blockOwnerDeletion: that would need update on pods/finalizers.
        ...(podUid ? { ownerReferences: [{ apiVersion: "v1", kind: "Pod", name: pod, uid: podUid }] } : {}),
      },
      spec: {
        holderIdentity: pod,
        leaseDurationSeconds: this.duration,
        acquireTime: current?.spec?.acquireTime ?? now,
        renewTime: now,
      },
    };
  }

  private async writeOnce(): Promise<void> {
    const { client, identity } = this.opts;
    const path = `${leasesPath(identity.namespace)}/${encodeURIComponent(this.name)}`;
    const timeoutMs = Math.max(1000, (this.duration * 1000) / 3);
    // Two tries: a 409 means our copy is stale (someone edited it); read it and write again.
    for (let attempt = 0; attempt < 2; attempt++) {
      const body = this.body();
      try {
        if (!this.lease) {
          try {
            this.lease = await client.json<AckLease>("GET", path, { timeoutMs });
          } catch (err) {
            if (!isNotFound(err)) throw err;
            this.lease = await client.json<AckLease>("POST", leasesPath(identity.namespace), {
              body: this.desired(body, undefined),
              timeoutMs,
            });
            this.done(body);
            return;
          }
        }
        this.lease = await client.json<AckLease>("PUT", path, {
          body: this.desired(body, this.lease),
          timeoutMs,
        });
        this.done(body);
        return;
      } catch (err) {
        this.lease = undefined;
        if (!isConflict(err) && !isNotFound(err)) throw err;
      }
    }
  }

  private done(body: string): void {
    this.written = body;
    this.writes++;
  }

  /** Stops writing and deletes the record: a clean stop leaves nothing for readers to wait out. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.debounce);
    clearInterval(this.renew);
    await this.idle();
    const { client, identity } = this.opts;
    try {
      await client.json("DELETE", `${leasesPath(identity.namespace)}/${encodeURIComponent(this.name)}`, {
        timeoutMs: 2_000,
        retry: false,
      });
    } catch (err) {
      // Gone already, or the apiserver is: the record expires on its own.
      if (!isNotFound(err)) this.opts.log?.warn({ err, lease: this.name }, "xDS ACK record: delete failed");
    }
  }
}

export interface AckRecordReaderOptions {
  readonly client: KubeClient;
  readonly namespace: string;
  readonly prefix: string;
  readonly log: Logger;
  readonly now?: () => number;
}

/** Every replica's record, from a watch of the Leases labelled as ACK records. */
export class AckRecordReader {
  private readonly records = new Map<string, StoredRecord>();
  private readonly listeners = new Set<() => void>();
  private readonly informer: Informer;

  constructor(private readonly opts: AckRecordReaderOptions) {
    const selector = `app.kubernetes.io/component=${ACK_COMPONENT}`;
    this.informer = new Informer({
      name: "xds-ack-leases",
      path: `${leasesPath(opts.namespace)}?labelSelector=${encodeURIComponent(selector)}`,
      client: opts.client,
      log: opts.log,
      // Few objects, and expiry is timed by renewTime: a short watch costs nothing.
      watchTimeoutSeconds: 120,
      onEvent: (type, obj) => {
        const name = (obj.metadata?.name as string | undefined) ?? "";
        if (type === "DELETED") this.records.delete(name);
        else {
          try {
            const r = recordFromLease(obj, opts.prefix);
            if (r) this.records.set(name, r);
            else this.records.delete(name);
          } catch (err) {
            this.records.delete(name);
            opts.log.warn({ lease: name, err }, "xDS ACK record unreadable: ignored");
          }
        }
        for (const l of [...this.listeners]) l();
      },
    });
  }

  start(): void {
    this.informer.start();
  }

  stop(): Promise<void> {
    return this.informer.stop();
  }

  synced(): boolean {
    return this.informer.hasSynced();
  }

  waitForSync(): Promise<void> {
    return this.informer.waitForSync();
  }

  /** The records still live now, except the one named `exceptLease` (the caller's own, which it knows fresher). */
  live(exceptLease?: string): StoredRecord[] {
    const now = (this.opts.now ?? Date.now)();
    return [...this.records.entries()]
      .filter(([name, r]) => name !== exceptLease && isLive(r, now))
      .map(([, r]) => r);
  }

  /** Every record seen, live or not (debug). */
  all(): StoredRecord[] {
    return [...this.records.values()];
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

export const ACK_LEASE_PREFIX_ENV = "EDGE_OPERATOR_XDS_ACK_LEASE_PREFIX";
export const ACK_LEASE_SECONDS_ENV = "EDGE_OPERATOR_XDS_ACK_LEASE_SECONDS";

/**
 * This replica's identity from the environment the chart sets (POD_NAME,
 * POD_NAMESPACE, POD_UID from the downward API): undefined outside a pod that
 * has them, where the xds sink decides from its own clients alone.
 */
export function ackIdentityFromEnv(env: NodeJS.ProcessEnv): AckLeaseIdentity | undefined {
  const pod = env.POD_NAME;
  const namespace = env.POD_NAMESPACE;
  if (!pod || !namespace) return undefined;
  const seconds = env[ACK_LEASE_SECONDS_ENV];
  let durationSeconds = DEFAULT_ACK_LEASE_SECONDS;
  if (seconds !== undefined && seconds !== "") {
    durationSeconds = Number(seconds);
    if (!Number.isInteger(durationSeconds) || durationSeconds < 1 || durationSeconds > 3600)
      throw new Error(
        `${ACK_LEASE_SECONDS_ENV}: must be a whole number of seconds from 1 to 3600, got ${JSON.stringify(seconds)}`,
      );
  }
  return {
    namespace,
    pod,
    prefix: env[ACK_LEASE_PREFIX_ENV] || "edge-operator-xds",
    durationSeconds,
    ...(env.POD_UID ? { podUid: env.POD_UID } : {}),
  };
}
