// The /reconcile protocol, both sides of it: the keys the watcher hands over,
// the request body, and the reply the endpoint writes and the watcher reads.
// The endpoint (src/server/reconcile-handler.ts) and the caller
// (src/watcher/reconcile-client.ts) import it from here, so neither spells
// the other's format by hand.

import { objectKey } from "../kube/object-key.js";

export { objectKey };

/** The one key that rebuilds and pushes the whole data-plane snapshot. */
export const SNAPSHOT_KEY = "$snapshot";

/** Splits a route key; undefined for the snapshot key or anything malformed. */
export function parseRouteKey(key: string): { namespace: string; name: string } | undefined {
  const slash = key.indexOf("/");
  if (slash <= 0 || slash === key.length - 1 || key.indexOf("/", slash + 1) !== -1) return undefined;
  return { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

/** The body of POST /reconcile. */
export interface ReconcileRequest {
  readonly key: string;
}

export const REQUEST_SHAPE = 'body must be {"key": "namespace/name"} or {"key": "$snapshot"}';

/** The request, or undefined when the body is not one (the endpoint answers 400 with REQUEST_SHAPE). */
export function parseReconcileRequest(body: unknown): ReconcileRequest | undefined {
  if (typeof body !== "object" || body === null) return undefined;
  const key = (body as { key?: unknown }).key;
  return typeof key === "string" && key !== "" ? { key } : undefined;
}

/** The 200 reply of POST /reconcile. */
export interface ReconcileReply {
  result: "done" | "requeue";
  /** When the caller should try again; absent with "requeue" means "with your backoff". */
  requeueAfterMs?: number;
  /** What this reconcile did, in words. */
  did: string[];
  /** Keys the caller should reconcile next. */
  enqueue?: string[];
}

/** A reply as the caller acts on it; a malformed reply is a failure that names the field. */
export type ReconcileOutcome =
  | { kind: "done"; did: string[]; enqueue: string[] }
  | { kind: "requeue"; afterMs: number | undefined; did: string[]; enqueue: string[] }
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
    return { kind: "requeue", afterMs: requeueAfterMs, did, enqueue };
  }
  return {
    kind: "failed",
    reason: `reply.result: must be "done" or "requeue", got ${JSON.stringify(result)}`,
  };
}
