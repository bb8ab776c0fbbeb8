// ACK records: what one server replica's xDS clients hold, as it writes it
// into a Lease's annotation so that whichever replica answers /reconcile can
// decide `Programmed` for every client of every replica (docs/architecture.md).
// Pure: parsing, liveness and the combination; the Lease I/O is in
// ack-records-lease.ts.

import { isRecord } from "../../api/is-record.js";
import { combine, type AckVerdict, type ClientStatus } from "./ack-tracker.js";
import { scopeHasRoutes, type ClientView } from "./route-standing.js";
import type { Scope } from "./stream.js";

export const ACK_ANNOTATION = "net.10xdev.io/xds-acks";
export const ACK_COMPONENT = "xds-acks";

export interface ClientAck {
  /** The client's node id, else its address. */
  readonly id: string;
  /** The last snapshot version this client was seen to hold in full. */
  readonly acked?: string;
  /** The last version it refused, in its own words. */
  readonly nack?: { readonly version: string; readonly message: string };
  /** The listeners it asked for (stream.ts); absent in a record of an older writer: every route. */
  readonly scope?: Scope;
  /** When its connection went silent (ms since the epoch); absent: connected. */
  readonly unreachableSince?: number;
  /** false: not authenticated by mutual TLS, it holds no HTTPS side (route-standing.ts); absent: it may. */
  readonly servesTls?: false;
}

/** One replica's record: the snapshot it serves and where each of its clients stands. */
export interface AckRecord {
  /** The pod (or process) that wrote it. */
  readonly replica: string;
  readonly served?: string;
  readonly clients: readonly ClientAck[];
}

/** A record as read from its Lease: when it was last renewed and for how long it counts. */
export interface StoredRecord extends AckRecord {
  readonly renewedAtMs: number;
  readonly durationSeconds: number;
}

/** The annotation's JSON: what the writer puts and the reader takes back. */
export function encodeRecord(r: AckRecord): string {
  const clients = [...r.clients]
    .sort((a, b) => cmp(a.id, b.id))
    .map((c) => ({
      id: c.id,
      ...(c.acked ? { acked: c.acked } : {}),
      ...(c.nack ? { nack: c.nack } : {}),
      ...(c.scope !== undefined ? { scope: c.scope } : {}),
      ...(c.unreachableSince !== undefined ? { unreachableSince: c.unreachableSince } : {}),
      ...(c.servesTls === false ? { servesTls: false as const } : {}),
    }));
  // `clients` last: the writer compares what follows it to tell a standing's change from a new version served.
  return JSON.stringify({ ...(r.served ? { served: r.served } : {}), clients });
}

/** The annotation's JSON read back; an error naming the field for anything else (a record written by hand, or by a newer writer). */
export function decodeRecord(replica: string, text: string): AckRecord {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new Error(`${ACK_ANNOTATION}: not JSON: ${(err as Error).message}`);
  }
  if (!isRecord(doc)) throw new Error(`${ACK_ANNOTATION}: must be an object`);
  const served = optionalString(doc.served, "served");
  if (!Array.isArray(doc.clients)) throw new Error(`${ACK_ANNOTATION}.clients: must be an array`);
  const clients = doc.clients.map((c: unknown, i): ClientAck => {
    const at = `clients[${i}]`;
    if (!isRecord(c)) throw new Error(`${ACK_ANNOTATION}.${at}: must be an object`);
    if (typeof c.id !== "string" || c.id === "")
      throw new Error(`${ACK_ANNOTATION}.${at}.id: must be a non-empty string`);
    const acked = optionalString(c.acked, `${at}.acked`);
    let nack: ClientAck["nack"];
    if (c.nack !== undefined) {
      if (!isRecord(c.nack) || typeof c.nack.version !== "string" || typeof c.nack.message !== "string")
        throw new Error(`${ACK_ANNOTATION}.${at}.nack: must be {version: string, message: string}`);
      nack = { version: c.nack.version, message: c.nack.message };
    }
    let scope: Scope | undefined;
    if (c.scope !== undefined) {
      if (c.scope !== "*" && !(Array.isArray(c.scope) && c.scope.every((l) => typeof l === "string")))
        throw new Error(`${ACK_ANNOTATION}.${at}.scope: must be "*" or an array of strings`);
      scope = c.scope === "*" ? "*" : (c.scope as string[]);
    }
    if (
      c.unreachableSince !== undefined &&
      !(typeof c.unreachableSince === "number" && Number.isFinite(c.unreachableSince))
    )
      throw new Error(`${ACK_ANNOTATION}.${at}.unreachableSince: must be a number (ms since the epoch)`);
    if (c.servesTls !== undefined && c.servesTls !== false)
      throw new Error(`${ACK_ANNOTATION}.${at}.servesTls: must be false when present`);
    return {
      id: c.id,
      ...(acked ? { acked } : {}),
      ...(nack ? { nack } : {}),
      ...(scope !== undefined ? { scope } : {}),
      ...(c.unreachableSince !== undefined ? { unreachableSince: c.unreachableSince } : {}),
      ...(c.servesTls === false ? { servesTls: false as const } : {}),
    };
  });
  return { replica, ...(served ? { served } : {}), clients };
}

function optionalString(v: unknown, field: string): string | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== "string") throw new Error(`${ACK_ANNOTATION}.${field}: must be a string`);
  return v;
}

/** Whether a record still counts at `nowMs`: a replica that stopped renewing (SIGKILLed) drops out after its lease duration. */
export function isLive(r: StoredRecord, nowMs: number): boolean {
  return r.renewedAtMs + r.durationSeconds * 1000 > nowMs;
}

/** Where one client stands on `version`. */
export function clientStandingOn(c: ClientAck, version: string): ClientStatus {
  if (c.acked === version) return { kind: "acked" };
  if (c.nack?.version === version) return { kind: "rejected", message: c.nack.message };
  return { kind: "pending" };
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * What every client of every record adds up to for `version`: synced (all
 * ACKed it), rejected (one refused it: the first by id speaks, so the same
 * refusal gives the same words on every retry and from every replica), pending,
 * or none (no client anywhere). The order of the records never matters.
 */
export function combineRecords(records: Iterable<AckRecord>, version: string): AckVerdict {
  return combine(recordClients(records, version).filter((c) => scopeHasRoutes(c.scope)));
}

/**
 * Every client of every record and where it stands on `version`, in one
 * order whatever the records' order. An unreachable client connected again,
 * to any replica, is the connected one alone.
 */
export function recordClients(records: Iterable<AckRecord>, version: string): ClientView[] {
  const all = [...records];
  const connected = new Set<string>();
  for (const r of all) for (const c of r.clients) if (c.unreachableSince === undefined) connected.add(c.id);
  const clients: (ClientView & { replica: string })[] = [];
  for (const r of all)
    for (const c of r.clients) {
      if (c.unreachableSince !== undefined && connected.has(c.id)) continue;
      clients.push({
        id: c.id,
        replica: r.replica,
        status: clientStandingOn(c, version),
        scope: c.scope ?? "*",
        ...(c.unreachableSince !== undefined ? { unreachableSince: c.unreachableSince } : {}),
        ...(c.servesTls === false ? { servesTls: false } : {}),
      });
    }
  clients.sort(
    (a, b) =>
      cmp(a.id, b.id) ||
      cmp(a.replica, b.replica) ||
      cmp(a.status.kind, b.status.kind) ||
      cmp(messageOf(a.status), messageOf(b.status)),
  );
  return clients;
}

function messageOf(s: ClientStatus): string {
  return s.kind === "rejected" ? s.message : "";
}
