// The /reconcile protocol, both sides of it: the keys the watcher hands over,
// the request body, and the reply the endpoint writes and the watcher reads.
// The endpoint (src/server/reconcile-handler.ts) and the caller
// (src/watcher/reconcile-client.ts) import it from here, so neither spells
// the other's format by hand.

/** The one key that rebuilds and pushes the whole data-plane snapshot. */
export const SNAPSHOT_KEY = "$snapshot";

/** Splits a route key; undefined for the snapshot key or anything malformed. */
export function parseRouteKey(key: string): { namespace: string; name: string } | undefined {
  const slash = key.indexOf("/");
  if (slash <= 0 || slash === key.length - 1 || key.indexOf("/", slash + 1) !== -1) return undefined;
  return { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

/** The kinds whose resourceVersions a caller reports as seen. */
export const SEEN_PARTS = ["routes", "services", "endpointslices"] as const;
export type SeenPart = (typeof SEEN_PARTS)[number];

/**
 * The newest resourceVersion the caller's informers have seen, per kind: the
 * server answers only once its own cache has seen as much, so a reconcile
 * never decides from state older than the change that asked for it.
 */
export type Seen = Partial<Record<SeenPart, string>>;

/** The body of POST /reconcile. `seen` is optional: older watchers and curl send only the key. */
export interface ReconcileRequest {
  readonly key: string;
  readonly seen?: Seen;
}

export const REQUEST_SHAPE =
  'body must be {"key": "namespace/name"} or {"key": "$snapshot"}, with an optional "seen": {"routes": "<resourceVersion>", "services": ..., "endpointslices": ...}';

/** The request, or what is wrong with the body, naming the field (the endpoint answers 400 with it). */
export function parseReconcileRequest(body: unknown): ReconcileRequest | { readonly error: string } {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return { error: REQUEST_SHAPE };
  const { key, seen } = body as { key?: unknown; seen?: unknown };
  if (typeof key !== "string" || key === "") return { error: REQUEST_SHAPE };
  if (seen === undefined || seen === null) return { key };
  if (typeof seen !== "object" || Array.isArray(seen)) return { error: "seen: must be an object" };
  const out: Record<string, string> = {};
  for (const [part, rv] of Object.entries(seen)) {
    if (!(SEEN_PARTS as readonly string[]).includes(part))
      return { error: `seen.${part}: unknown; must be one of ${SEEN_PARTS.join(", ")}` };
    if (typeof rv !== "string" || rv === "" || rv.length > 64)
      return { error: `seen.${part}: must be a resourceVersion (a non-empty string)` };
    out[part] = rv;
  }
  return { key, seen: out };
}

/** The 200 reply of POST /reconcile. */
export interface ReconcileReply {
  result: "done" | "requeue";
  /**
   * Look again after this long, at that period: a wait on something outside
   * the key (xDS clients not connected or not answered, a cache a moment
   * behind), not its failure, so the key's backoff does not grow. Absent with
   * "requeue": a failure, retried with the caller's backoff.
   */
  requeueAfterMs?: number;
  /** What this reconcile did, in words. */
  did: string[];
  /** Keys the caller should reconcile next. */
  enqueue?: string[];
}

/** A reply as the caller acts on it; a malformed reply is a failure that names the field. */
export type ReconcileOutcome =
  | { kind: "done"; did: string[]; enqueue: string[] }
  | {
      kind: "requeue";
      afterMs: number | undefined;
      did: string[];
      enqueue: string[];
      /** Not the key's failure (a wait the server named, or its cache behind): wait `afterMs`, without growing its backoff. */
      notFailure?: true;
    }
  | { kind: "failed"; reason: string };

function isStringArray(v: unknown): v is string[] {
  return Array.isArray(v) && v.every((x) => typeof x === "string");
}

/** Reads a 200 reply of the reconcile contract; a failure names what is wrong. */
export function parseReconcileReply(text: string): ReconcileOutcome {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return { kind: "failed", reason: "reply is not JSON" };
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return { kind: "failed", reason: "reply is not a JSON object" };
  }
  const { result, requeueAfterMs, did = [], enqueue = [] } = body as Record<string, unknown>;
  if (!isStringArray(did)) return { kind: "failed", reason: "reply.did: must be an array of strings" };
  if (!isStringArray(enqueue))
    return { kind: "failed", reason: "reply.enqueue: must be an array of strings" };
  if (result === "done") return { kind: "done", did, enqueue };
  if (result === "requeue") {
    if (requeueAfterMs !== undefined && !(typeof requeueAfterMs === "number" && requeueAfterMs >= 0)) {
      return { kind: "failed", reason: "reply.requeueAfterMs: must be a number >= 0" };
    }
    return requeueAfterMs === undefined
      ? { kind: "requeue", afterMs: undefined, did, enqueue }
      : { kind: "requeue", afterMs: requeueAfterMs, did, enqueue, notFailure: true };
  }
  return {
    kind: "failed",
    reason: `reply.result: must be "done" or "requeue", got ${JSON.stringify(result)}`,
  };
}
