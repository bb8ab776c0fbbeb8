// POST /reconcile: `{"key": "namespace/name"}` or `{"key": "$snapshot"}`,
// with what the caller has seen (`seen`, optional). Answers `{result, did,
// enqueue?, requeueAfterMs?}`, or 503 + Retry-After when this server's cache
// has not caught up with `seen` within the bound, or while the snapshot key
// waits out an admission burst; only callers that RBAC allows (see
// caller-auth.ts) get in.

import { errorReply, type JsonHandler } from "./json-handler.js";
import { KubeError } from "../kube/client.js";
import { callerCheck, type CallerAuth } from "./caller-auth.js";
import { parseReconcileRequest, SNAPSHOT_KEY, type Seen } from "../reconcile/protocol.js";
import { ReconcileAbortedError, ReconcileInputError, type Reconciler } from "../reconcile/reconciler.js";

/** `{"key": ...}` with a namespace/name key of at most 253 + 1 + 253 characters: 4 KiB is ample. */
export const RECONCILE_BODY_LIMIT = 4096;

/** The server's cache, as far as /reconcile needs it: wait until it has seen what the caller saw. */
export interface SeenWait {
  waitFor(min: Seen, timeoutMs: number, signal?: AbortSignal): Promise<boolean>;
  seen(): Readonly<Record<string, string>>;
  /** How long to wait before answering 503 (default 10 s). */
  readonly boundMs?: number;
}

/** Seconds the caller is told to wait after a 503: the cache is usually a moment behind. */
const RETRY_AFTER_SECONDS = 1;

/**
 * The snapshot key waits while admission is busy (an admission burst): its
 * build holds the event loop that answers the webhooks for tens of
 * milliseconds, and its status writes would be paced anyway. Never longer than
 * `maxMs` from the first call it turned away, so a steady stream of creates
 * does not starve the statuses.
 */
export interface SnapshotDefer {
  busy(): boolean;
  readonly maxMs: number;
}

function deferral(defer: SnapshotDefer | undefined): () => boolean {
  let since: number | undefined;
  return () => {
    if (defer === undefined || !defer.busy()) {
      since = undefined;
      return false;
    }
    const now = Date.now();
    since ??= now;
    if (now - since < defer.maxMs) return true;
    since = undefined;
    return false;
  };
}

export function reconcileHandler(
  reconciler: Reconciler | undefined,
  auth: CallerAuth | undefined,
  cache?: SeenWait,
  defer?: SnapshotDefer,
): JsonHandler {
  const path = "/reconcile";
  const deferNow = deferral(defer);
  if (!reconciler || !auth) {
    return {
      path,
      limit: RECONCILE_BODY_LIMIT,
      handle: () =>
        errorReply(
          503,
          "ServiceUnavailable",
          "/reconcile needs cluster access: start serve with --kubeconfig, or in a cluster",
        ),
    };
  }
  return {
    path,
    limit: RECONCILE_BODY_LIMIT,
    maxDepth: 4,
    authorize: callerCheck(auth),
    handle: async (body, ctx) => {
      const request = parseReconcileRequest(body);
      if ("error" in request) return errorReply(400, "BadRequest", request.error);
      const { key } = request;
      if (cache) {
        // Without `seen` (an older watcher, curl) only the first list is waited for.
        const caughtUp = await cache.waitFor(request.seen ?? {}, cache.boundMs ?? 10_000, ctx.signal);
        if (!caughtUp) {
          if (ctx.signal?.aborted)
            return errorReply(
              499,
              "ClientClosedRequest",
              `reconcile of ${key} stopped: the caller went away`,
            );
          const have = JSON.stringify(cache.seen());
          ctx.log.info({ key, seen: request.seen, have }, "cache behind what the caller saw");
          return {
            ...errorReply(
              503,
              "CacheBehind",
              `this server's cache has read to ${have}, not yet what the caller saw (${JSON.stringify(request.seen ?? {})}); try again`,
            ),
            headers: { "retry-after": String(RETRY_AFTER_SECONDS) },
          };
        }
      }
      if (key === SNAPSHOT_KEY && deferNow())
        return {
          ...errorReply(
            503,
            "AdmissionBusy",
            "admission is busy (a burst of creates or updates): the snapshot reconcile waits a moment; try again",
          ),
          headers: { "retry-after": String(RETRY_AFTER_SECONDS) },
        };
      try {
        return { status: 200, body: await reconciler.reconcile(key, ctx.signal) };
      } catch (e) {
        if (e instanceof ReconcileInputError) return errorReply(400, "BadRequest", e.message);
        if (e instanceof ReconcileAbortedError) {
          // Nobody reads this answer; the log says the stop was on purpose.
          ctx.log.info({ key }, "reconcile stopped: the caller went away");
          return errorReply(499, "ClientClosedRequest", `reconcile of ${key} stopped: ${e.message}`);
        }
        const status = e instanceof KubeError ? 502 : 500;
        ctx.log.warn({ err: e, key }, "reconcile failed");
        return errorReply(status, "ReconcileFailed", `reconcile of ${key} failed: ${(e as Error).message}`);
      }
    },
  };
}
