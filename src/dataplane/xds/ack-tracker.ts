// ACK and NACK, per client and per resource type, and what they add up to.
// A client "holds" a snapshot for one type when it ACKed a response whose
// content (the digest of the resources its subscription asked for) is that
// snapshot's; it "rejected" it when it NACKed a response with that content.
// Content, not version strings: a type whose resources did not change between
// two snapshots is not sent again, and the client that ACKed it still holds it.

export type ClientStatus =
  | { readonly kind: "acked" }
  | { readonly kind: "pending" }
  | { readonly kind: "rejected"; readonly message: string };

export const ACKED: ClientStatus = { kind: "acked" };
export const PENDING: ClientStatus = { kind: "pending" };

interface Sent {
  readonly nonce: string;
  readonly version: string;
  readonly digest: string;
  /** When it was sent (performance.now()), for the time a client takes to answer. */
  readonly at?: number;
  /**
   * A response sent in parts (sotw-stream.ts: a route response past a gRPC
   * client's message limit): the nonce of its last part, which alone stands
   * for the whole content; absent for a response sent whole.
   */
  readonly group?: string;
}

/** A NACK's words and a node id are the client's: kept to what a condition message can carry. */
const MAX_NACK_MESSAGE = 2_048;
export const MAX_CLIENT_ID = 256;

/** `text`, or its first `max` characters and how many more there were. */
export function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length - max} more characters)`;
}

/** One resource type on one stream: the responses not yet answered, the last ACK and the last NACK. */
export class TypeAck {
  private outstanding: Sent[] = [];
  private acked: Sent | undefined;
  private nacked: (Sent & { readonly message: string }) | undefined;
  /** The groups (by their last part's nonce) of which a part was refused: their last part's ACK takes nothing. */
  private readonly refusedGroups = new Set<string>();

  sent(nonce: string, version: string, digest: string, group?: string): void {
    this.outstanding.push({ nonce, version, digest, at: performance.now(), ...(group ? { group } : {}) });
    // A client answers each response; a few unanswered ones are all a live client leaves.
    if (this.outstanding.length > 64) this.outstanding.shift();
  }

  /** The last response sent, answered or not. */
  lastSent(): Sent | undefined {
    return this.outstanding.at(-1) ?? this.nacked ?? this.acked;
  }

  hasSent(): boolean {
    return this.lastSent() !== undefined;
  }

  /**
   * Whether `nonce` is that of the last response sent (answered or not), or
   * of a part of it: only such a request speaks for now.
   */
  isLatest(nonce: string): boolean {
    const last = this.lastSent();
    if (last?.nonce === nonce) return true;
    return (
      last?.group !== undefined && this.outstanding.some((s) => s.nonce === nonce && s.group === last.group)
    );
  }

  /** The nonce that stands for the whole response `nonce` is (a part of): its last part's, or its own. */
  wholeOf(nonce: string): string {
    return this.outstanding.find((s) => s.nonce === nonce)?.group ?? nonce;
  }

  /** How long ago the unanswered response `nonce` was sent; undefined when it is not outstanding. */
  waitedMs(nonce: string): number | undefined {
    const at = this.outstanding.find((s) => s.nonce === nonce)?.at;
    return at === undefined ? undefined : performance.now() - at;
  }

  /** The client took the response sent with `nonce` (and so everything before it). False when the nonce is unknown. */
  ack(nonce: string): boolean {
    const i = this.outstanding.findIndex((s) => s.nonce === nonce);
    if (i < 0) return false;
    const s = this.outstanding[i] as Sent;
    this.outstanding = this.outstanding.slice(i + 1);
    // A part before the last takes nothing yet; the last takes the whole unless a part was refused.
    if (s.group !== undefined && (s.group !== s.nonce || this.refusedGroups.has(s.group))) {
      if (s.group === s.nonce) this.refusedGroups.delete(s.group);
      return true;
    }
    this.acked = s;
    this.nacked = undefined;
    return true;
  }

  /** The client refused the response sent with `nonce` (or a part of it), and keeps what it held. */
  reject(nonce: string, message: string): boolean {
    const i = this.outstanding.findIndex((s) => s.nonce === nonce);
    if (i < 0) return false;
    const s = this.outstanding[i] as Sent;
    // A part refused is the whole refused: the record is the last part's, which carries the content.
    const whole = s.group === undefined ? s : (this.outstanding.find((o) => o.nonce === s.group) ?? s);
    if (s.group !== undefined && s.group !== s.nonce) {
      this.refusedGroups.add(s.group);
      // Groups whose last part never came back (a stream replaced) are forgotten, oldest first.
      for (const g of this.refusedGroups) if (this.refusedGroups.size > 16) this.refusedGroups.delete(g);
    }
    this.nacked = { ...whole, message: clip(message, MAX_NACK_MESSAGE) };
    this.outstanding = this.outstanding.slice(i + 1);
    return true;
  }

  /**
   * The client changed what it asks for: an ACK before that speaks for what it
   * asked then (a name it dropped and asks for again, it no longer holds).
   */
  resubscribed(): void {
    this.acked = undefined;
  }

  ackedVersion(): string | undefined {
    return this.acked?.version;
  }

  lastNack(): { readonly version: string; readonly message: string } | undefined {
    return this.nacked && { version: this.nacked.version, message: this.nacked.message };
  }

  /** Where this client stands on the content `digest`. */
  status(digest: string): ClientStatus {
    if (this.acked?.digest === digest) return ACKED;
    if (this.nacked?.digest === digest) return { kind: "rejected", message: this.nacked.message };
    return PENDING;
  }
}

/** A client's standing over all the types it asked for: a refusal of any wins, then any wait. */
export function clientStatus(perType: Iterable<ClientStatus>): ClientStatus {
  let pending = false;
  for (const s of perType) {
    if (s.kind === "rejected") return s;
    if (s.kind === "pending") pending = true;
  }
  return pending ? PENDING : ACKED;
}

export type AckVerdict =
  /** Every connected client holds the snapshot. */
  | { readonly kind: "synced"; readonly clients: number }
  /** No client is connected: nothing serves any route. */
  | { readonly kind: "none" }
  /** At least one client refused it; the message names one and quotes it. */
  | { readonly kind: "rejected"; readonly message: string }
  | {
      readonly kind: "pending";
      readonly waiting: readonly string[];
      /** Of those, the ones whose connection went silent, and since when (ms since the epoch). */
      readonly unreachable?: readonly { readonly id: string; readonly since: number }[];
    };

/** Why a pending verdict waits, in a condition's words: the silent client first, else `fallback`. */
export function pendingWords(verdict: AckVerdict, fallback: string): string {
  const first = verdict.kind === "pending" ? verdict.unreachable?.[0] : undefined;
  if (first === undefined) return fallback;
  const more = (verdict.kind === "pending" ? (verdict.unreachable?.length ?? 1) : 1) - 1;
  return `xDS client ${first.id} has not answered since ${new Date(first.since).toISOString()} (its connection went silent, with no goodbye): it may still serve what it held, and counts until it is back or forgotten${more > 0 ? ` (and ${more} more unreachable client(s))` : ""}`;
}

/** What the connected clients add up to, for one snapshot. */
export function combine(
  clients: readonly {
    readonly id: string;
    readonly status: ClientStatus;
    readonly unreachableSince?: number;
  }[],
): AckVerdict {
  if (clients.length === 0) return { kind: "none" };
  // Sorted, so that the same clients refusing give the same message on every retry.
  const rejected = clients
    .filter((c) => c.status.kind === "rejected")
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const first = rejected[0];
  if (first !== undefined && first.status.kind === "rejected") {
    const more = rejected.length > 1 ? ` (and ${rejected.length - 1} more client(s))` : "";
    return {
      kind: "rejected",
      message: `xDS client ${first.id} rejected it: ${first.status.message}${more}`,
    };
  }
  const pending = clients.filter((c) => c.status.kind === "pending");
  if (pending.length > 0) {
    const unreachable = pending
      .flatMap((c) => (c.unreachableSince === undefined ? [] : [{ id: c.id, since: c.unreachableSince }]))
      .sort((a, b) => a.since - b.since || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    return {
      kind: "pending",
      waiting: pending.map((c) => c.id),
      ...(unreachable.length > 0 ? { unreachable } : {}),
    };
  }
  return { kind: "synced", clients: clients.length };
}
