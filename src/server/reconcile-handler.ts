// POST /reconcile: `{"key": "namespace/name"}` or `{"key": "$snapshot"}`.
// Answers `{result, did, enqueue?, requeueAfterMs?}`; only callers that RBAC
// allows (see caller-auth.ts) get in.

import { errorReply, type JsonHandler } from "./json-handler.js";
import { KubeError } from "../kube/client.js";
import { callerCheck, type CallerAuth } from "./caller-auth.js";
import { parseReconcileRequest, REQUEST_SHAPE } from "../reconcile/protocol.js";
import { ReconcileAbortedError, ReconcileInputError, type Reconciler } from "../reconcile/reconciler.js";

/** `{"key": ...}` with a namespace/name key of at most 253 + 1 + 253 characters: 4 KiB is ample. */
export const RECONCILE_BODY_LIMIT = 4096;

export function reconcileHandler(
  reconciler: Reconciler | undefined,
  auth: CallerAuth | undefined,
): JsonHandler {
  const path = "/reconcile";
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
      if (!request) return errorReply(400, "BadRequest", REQUEST_SHAPE);
      const { key } = request;
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
