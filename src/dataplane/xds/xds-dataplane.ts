// The xds sink: DataPlane.program(snapshot) serves the snapshot over ADS and
// answers once the connected clients have answered it, so that `Programmed`
// says what the clients hold, not what was offered (docs/architecture.md):
//  - every connected client ACKed it → taken;
//  - a client NACKed it → Rejected, with the client's words; clients keep the
//    version they had, so nothing that served stops serving;
//  - no client connected → NoDataPlane: nothing serves any route, and so
//    nothing still serves a deleted one (its finalizer may go);
//  - no answer from every client within the wait → Pending.
// With cluster access and a pod identity, "the connected clients" are those of
// every server replica: each replica writes its own clients' standing into an
// ACK record (a Lease, ack-records-lease.ts) and program() decides from all
// live records, its own taken fresh from memory (ack-records.ts).

import type { Snapshot } from "../../translate/snapshot.js";
import type { KubeClient } from "../../kube/client.js";
import { silentLogger, type Logger } from "../../observability/logger.js";
import type { Registry } from "../../observability/metrics.js";
import {
  errorMessage,
  type DataPlane,
  type ProgramOptions,
  type ProgramResult,
  type RouteStanding,
} from "../dataplane.js";
import { judgeRevision, type ReadRevision } from "../read-revision.js";
import { pendingWords, type AckVerdict } from "./ack-tracker.js";
import { combineRecords, recordClients, type AckRecord, type ClientAck } from "./ack-records.js";
import { AckRecordReader, AckRecordWriter, type AckLeaseIdentity } from "./ack-records-lease.js";
import { AdsServer } from "./ads-server.js";
import type { AdsTls } from "./ads-tls.js";
import { XdsEncoder } from "./resources.js";
import type { StreamReport } from "./stream.js";
import { NO_CLIENT_MESSAGE, RouteVerdicts, type ClientView } from "./route-standing.js";
import { createXdsMetrics } from "./xds-metrics.js";

export interface XdsDataPlaneOptions {
  /** Absent: plaintext. */
  readonly tls?: AdsTls;
  /** How long program() waits for every client's answer (default 10 s). */
  readonly ackTimeoutMs?: number;
  /** How long a client whose connection went silent still counts (ads-server.ts; default 10 min). */
  readonly forgetUnreachableAfterMs?: number;
  /** The ADS server's HTTP/2 keepalive (tests: faster than the default 30 s / 10 s). */
  readonly keepalive?: { readonly timeMs: number; readonly timeoutMs: number };
  readonly log?: Logger;
  /** Share ACK state with the other replicas through Leases; absent: this process's clients alone decide. */
  readonly acks?: { readonly client: KubeClient; readonly identity: AckLeaseIdentity };
  /** Where the xDS metrics go (xds-metrics.ts); absent: not measured. */
  readonly registry?: Registry;
}

export const DEFAULT_ACK_TIMEOUT_MS = 10_000;

export class XdsDataPlane implements DataPlane {
  readonly kind = "xds";
  readonly keepsServing = true;
  readonly server: AdsServer;
  private readonly encoder = new XdsEncoder();
  /** When the inputs of the snapshot served were read. */
  private held: ReadRevision | undefined;
  /** Per client id: the last version it held in full and the last it refused, kept for its record. */
  private readonly standingOf = new Map<string, { acked?: string; nack?: ClientAck["nack"] }>();
  private readonly writer: AckRecordWriter | undefined;
  readonly records: AckRecordReader | undefined;
  private readonly standingListeners = new Set<() => void>();
  /** program() calls waiting on their clients' answers: what changes meanwhile, they report. */
  private waiting = 0;
  /** Where this replica's clients stood when a push last stopped waiting, or a listener was last told. */
  private reported = standingKey([]);

  constructor(private readonly opts: XdsDataPlaneOptions = {}) {
    // Read at scrape time, once the server exists.
    const observer = opts.registry
      ? createXdsMetrics(opts.registry, {
          clients: () => this.server.clients(),
          heldVersions: () => this.ownRecord().clients.map((c) => c.acked),
          served: () => this.server.current()?.version,
        })
      : undefined;
    this.server = new AdsServer({
      ...(observer ? { observer } : {}),
      ...(opts.tls ? { tls: opts.tls } : {}),
      ...(opts.log ? { log: opts.log } : {}),
      ...(opts.forgetUnreachableAfterMs !== undefined
        ? { forgetUnreachableAfterMs: opts.forgetUnreachableAfterMs }
        : {}),
      ...(opts.keepalive ? { keepalive: opts.keepalive } : {}),
    });
    this.server.watch(() => this.noticeStanding());
    const acks = opts.acks;
    if (acks) {
      const { client, identity } = acks;
      const log = opts.log ?? silentLogger();
      this.writer = new AckRecordWriter({ client, identity, record: () => this.ownRecord(), log });
      this.records = new AckRecordReader({
        client,
        namespace: identity.namespace,
        prefix: identity.prefix,
        log,
      });
      this.server.watch(() => this.writer?.changed());
    }
  }

  /** Starts the ADS server (and the ACK record writer and reader); answers the bound port. */
  async listen(host: string, port: number): Promise<number> {
    const bound = await this.server.listen(host, port);
    this.writer?.start();
    this.records?.start();
    return bound;
  }

  /** Stops serving; a clean stop deletes this replica's ACK record, so others need not wait it out. */
  async stop(): Promise<void> {
    this.server.stop();
    await Promise.all([this.writer?.stop(), this.records?.stop()]);
  }

  /** This replica's record: the version served and where each connected client stands. */
  ownRecord(): AckRecord {
    const served = this.server.current()?.version;
    const statuses = this.server.statuses();
    const connected = new Set(statuses.map((s) => s.id));
    for (const id of [...this.standingOf.keys()]) if (!connected.has(id)) this.standingOf.delete(id);
    for (const { id, status } of statuses) {
      const before = this.standingOf.get(id) ?? {};
      if (served && status.kind === "acked") this.standingOf.set(id, { ...before, acked: served });
      else if (served && status.kind === "rejected")
        this.standingOf.set(id, { ...before, nack: { version: served, message: status.message } });
      else this.standingOf.set(id, before);
    }
    // Where each stream stands on the version served comes from that stream, never from
    // history: a client that ACKed it and then subscribed to more is pending again, and
    // two streams may share a node id.
    const clients = statuses.map(({ id, status, scope, unreachableSince, servesTls }): ClientAck => {
      const { acked, nack } = this.standingOf.get(id) ?? {};
      const now =
        status.kind === "acked" && served
          ? { acked: served }
          : acked !== undefined && acked !== served
            ? { acked }
            : {};
      const refused =
        status.kind === "rejected" && served
          ? { nack: { version: served, message: status.message } }
          : nack !== undefined && nack.version !== served
            ? { nack }
            : {};
      return {
        id,
        ...now,
        ...refused,
        scope,
        ...(unreachableSince !== undefined ? { unreachableSince } : {}),
        // Only for an Envoy (scope `*`) without a client certificate, the one it matters for
        // (route-standing.ts): every other record reads as before TLS.
        ...(servesTls === false && scope === "*" ? { servesTls } : {}),
      };
    });
    return { replica: this.opts.acks?.identity.pod ?? "local", ...(served ? { served } : {}), clients };
  }

  /** What every client adds up to for `version`: of every live replica with ACK records, else of this process. */
  verdictFor(version: string): AckVerdict {
    if (!this.records) {
      return this.server.current()?.version === version
        ? this.server.verdict()
        : { kind: "pending", waiting: [] };
    }
    // Until the other replicas' records are read, nobody can say they all hold it.
    if (!this.records.synced()) return { kind: "pending", waiting: ["(ACK records not read yet)"] };
    return combineRecords([this.ownRecord(), ...this.records.live(this.writer?.name)], version);
  }

  /**
   * Where each route stands on `version`: over the clients its routes were
   * sent to, of every live replica (route-standing.ts). Undefined while this
   * replica serves another version, or before the other replicas' records are read.
   */
  standing(version: string): RouteStanding | undefined {
    const snapshot = this.server.current();
    if (snapshot?.version !== version) return undefined;
    let clients;
    if (!this.records) clients = this.server.statuses();
    else if (!this.records.synced()) return undefined;
    else clients = recordClients([this.ownRecord(), ...this.records.live(this.writer?.name)], version);
    return new RouteVerdicts(snapshot, clients, this.pendingMessage());
  }

  private pendingMessage(): string {
    const timeoutMs = this.opts.ackTimeoutMs ?? DEFAULT_ACK_TIMEOUT_MS;
    return `not every connected xDS client ACKed the version that holds this route within ${timeoutMs / 1000}s`;
  }

  onStandingChange(listener: () => void): () => void {
    this.standingListeners.add(listener);
    return () => this.standingListeners.delete(listener);
  }

  /**
   * After each ACK, NACK, subscription, connect and disconnect: with no push
   * waiting, a change in where the clients stand is told to the listeners
   * (a waiting push sees it itself, and its reconcile writes it).
   */
  private noticeStanding(): void {
    if (this.waiting > 0 || this.standingListeners.size === 0) return;
    const now = standingKey(this.server.statuses());
    if (now === this.reported) return;
    this.reported = now;
    for (const listener of [...this.standingListeners]) listener();
  }

  /** The verdict on `version` once it is no longer pending, or the pending one after `timeoutMs`. */
  private settled(version: string, timeoutMs: number, signal: AbortSignal | undefined): Promise<AckVerdict> {
    if (!this.records) return this.server.settled(timeoutMs);
    const records = this.records;
    return new Promise((resolve) => {
      const unwatch: (() => void)[] = [];
      const done = (v: AckVerdict) => {
        clearTimeout(timer);
        clearInterval(tick);
        for (const u of unwatch) u();
        signal?.removeEventListener("abort", onAbort);
        resolve(v);
      };
      const check = () => {
        const v = this.verdictFor(version);
        // A newer snapshot served since: nobody will be offered this one any more.
        if (v.kind !== "pending" || this.server.current()?.version !== version) done(v);
      };
      const onAbort = () => done(this.verdictFor(version));
      const timer = setTimeout(onAbort, timeoutMs);
      // Records expire by time, not by events: look again now and then.
      const tick = setInterval(check, 500);
      unwatch.push(this.server.watch(check), records.onChange(check));
      signal?.addEventListener("abort", onAbort, { once: true });
      check();
    });
  }

  // No await between the revision check and serve(): one process, one step.
  async program(snapshot: Snapshot, opts: ProgramOptions = {}): Promise<ProgramResult> {
    opts.signal?.throwIfAborted();
    const { version } = snapshot;
    const same = this.server.current()?.version === version;
    // Never go back to a snapshot read before the one served (src/dataplane/read-revision.ts).
    const verdict = judgeRevision(opts.read, this.held, same);
    if (!verdict.ok) return { ok: false, version, reason: "Superseded", message: verdict.message };
    const ackTimeoutMs = this.opts.ackTimeoutMs ?? DEFAULT_ACK_TIMEOUT_MS;
    const timeoutMs =
      opts.answerBy === undefined
        ? ackTimeoutMs
        : Math.min(ackTimeoutMs, Math.max(0, opts.answerBy - Date.now()));
    // From the serve on: the clients' answers are this push's to report.
    this.waiting++;
    let pushed = false;
    let settled: AckVerdict;
    try {
      if (!same) {
        try {
          this.server.serve(this.encoder.encode(snapshot));
        } catch (err) {
          return {
            ok: false,
            version,
            reason: "PushFailed",
            message: "the snapshot could not be encoded for xDS (details in the operator's log)",
            detail: `encoding snapshot ${version}: ${errorMessage(err)}`,
          };
        }
        pushed = true;
      }
      this.held = verdict.record;
      settled = opts.local
        ? await this.server.settled(timeoutMs)
        : await this.settled(version, timeoutMs, opts.signal);
    } finally {
      this.waiting--;
      this.reported = standingKey(this.server.statuses());
    }
    switch (settled.kind) {
      case "synced":
        return { ok: true, version, pushed };
      case "none":
        return {
          ok: false,
          version,
          reason: "NoDataPlane",
          message: NO_CLIENT_MESSAGE,
          detail: `no xDS client is connected to take snapshot ${version}`,
          unserved: true,
        };
      case "rejected":
        return { ok: false, version, reason: "Rejected", message: settled.message, detail: settled.message };
      case "pending":
        return {
          ok: false,
          version,
          reason: "Pending",
          message: pendingWords(settled, this.pendingMessage()),
          detail: `snapshot ${version} not ACKed by every connected xDS client within ${timeoutMs / 1000}s${timeoutMs < ackTimeoutMs ? " (the caller's deadline, before the ACK timeout)" : ""}`,
        };
    }
  }

  refusal(version: string): string | undefined {
    if (this.server.current()?.version !== version) return undefined;
    const v = this.server.verdict();
    return v.kind === "rejected" ? v.message : undefined;
  }

  /** The version every connected client holds; undefined with none connected, or while they differ. */
  async current(): Promise<string | undefined> {
    const served = this.server.current()?.version;
    return served !== undefined && this.verdictFor(served).kind === "synced" ? served : undefined;
  }

  clients(): StreamReport[] {
    return this.server.clients();
  }
}

/** Where the clients stand, as one string: who is connected, what each takes, and its answer on the version served. */
function standingKey(clients: readonly ClientView[]): string {
  return clients
    .map(({ id, status, scope, unreachableSince }) =>
      JSON.stringify([
        id,
        status.kind,
        status.kind === "rejected" ? status.message : "",
        scope,
        unreachableSince ?? 0,
      ]),
    )
    .sort()
    .join("\n");
}
