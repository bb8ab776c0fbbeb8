// One rule, for every caller of the apiserver, of what may pass by trying
// again and how long to wait first. client-go's is the model: 429 and 5xx
// answers and dropped connections are transient; a request is sent again only
// when sending it twice cannot do twice what it asks (a read, or a write with a
// precondition that a second copy would fail), except that a 429 or a refused
// connection means the apiserver did nothing with it at all.

import { KubeError } from "./kube-error.js";

/** Socket errors that say the connection, not the request, failed. */
const NETWORK_CODES = new Set([
  "ECONNRESET",
  "ECONNREFUSED",
  "EPIPE",
  "ETIMEDOUT",
  "ECONNABORTED",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
  "ERR_STREAM_PREMATURE_CLOSE",
]);

/** No complete answer came within the call's deadline. */
export class DeadlineExceeded extends Error {
  override name = "DeadlineExceeded";
  constructor(
    message: string,
    /** The failure of the last attempt, when there was one. */
    readonly lastError?: unknown,
  ) {
    super(message);
  }
}

/** 429 (too many requests, nothing done) and 5xx (the apiserver or what is behind it failed). */
export function isTransientStatus(status: number): boolean {
  return status === 429 || (status >= 500 && status <= 599);
}

function errorCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}

/** A connection that failed or was cut: refused, reset, or closed before the whole answer came. */
export function isNetworkError(err: unknown): boolean {
  if (!(err instanceof Error) || err instanceof KubeError) return false;
  const code = errorCode(err);
  if (code && NETWORK_CODES.has(code)) return true;
  // Node's words for a socket closed mid-answer, which do not always carry a code.
  return /socket hang up|^aborted$|premature close/i.test(err.message);
}

/** Whether trying the same request again may succeed: the one rule, for the client and for migrate. */
export function isTransient(err: unknown): boolean {
  if (err instanceof KubeError) return isTransientStatus(err.status);
  if (err instanceof DeadlineExceeded) return true;
  return isNetworkError(err);
}

/**
 * Whether a failed attempt of this request may be sent again. Any request may
 * be after a 429 (rejected before it was looked at) or a refused connection
 * (nothing was sent); otherwise only one whose second copy cannot act twice.
 */
export function mayRetry(err: unknown, idempotent: boolean): boolean {
  if (err instanceof KubeError && err.status === 429) return true;
  if (errorCode(err) === "ECONNREFUSED") return true;
  return idempotent && isTransient(err);
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * A request that can be sent twice with the effect of once: reads, and writes
 * that carry the resourceVersion they were computed from (a second copy of one
 * that landed fails its precondition with 409 instead of acting again).
 */
export function isIdempotent(method: string, body: unknown, contentType?: string): boolean {
  const m = method.toUpperCase();
  if (m === "GET" || m === "HEAD" || m === "OPTIONS") return true;
  if (m === "PUT") return isRecord(body) && isRecord(body.metadata) && !!body.metadata.resourceVersion;
  if (m === "PATCH") {
    if (contentType === "application/json-patch+json") {
      return (
        Array.isArray(body) &&
        body.some(
          (op: unknown) => isRecord(op) && op.op === "test" && op.path === "/metadata/resourceVersion",
        )
      );
    }
    return isRecord(body) && isRecord(body.metadata) && !!body.metadata.resourceVersion;
  }
  if (m === "DELETE") {
    const pre = isRecord(body) ? body.preconditions : undefined;
    return isRecord(pre) && (!!pre.resourceVersion || !!pre.uid);
  }
  return false;
}

/**
 * Retry-After as milliseconds: delta-seconds, or an HTTP date (RFC 9110
 * §10.2.3). Undefined when absent or unreadable.
 */
export function retryAfterMs(header: string | string[] | undefined, now = Date.now()): number | undefined {
  const value = (Array.isArray(header) ? header[0] : header)?.trim();
  if (!value) return undefined;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  // An HTTP date names its day and month; Date.parse alone would take "-1" as a year.
  if (!/[a-z]{3}/i.test(value)) return undefined;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

export interface BackoffPolicy {
  /** The first wait, before jitter. */
  readonly baseMs: number;
  /** No wait is longer than this, whatever the attempt or the Retry-After. */
  readonly capMs: number;
}

export const DEFAULT_BACKOFF: BackoffPolicy = { baseMs: 200, capMs: 10_000 };

/**
 * The wait before attempt `attempt + 1` (`attempt` counts from 1): the
 * server's Retry-After when it gave one, else base·2^(attempt-1); capped; with
 * jitter (the upper half of the range for backoff, up to a tenth more for a
 * Retry-After) so that clients refused together do not come back together.
 */
export function retryDelayMs(
  attempt: number,
  retryAfter: number | undefined,
  policy: BackoffPolicy = DEFAULT_BACKOFF,
  random: () => number = Math.random,
): number {
  if (retryAfter !== undefined) return Math.min(policy.capMs, retryAfter * (1 + random() / 10));
  const ceiling = Math.min(policy.capMs, policy.baseMs * 2 ** Math.min(attempt - 1, 30));
  return ceiling / 2 + (ceiling / 2) * random();
}
