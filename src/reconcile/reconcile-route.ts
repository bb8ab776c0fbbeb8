// POST /reconcile: `{"key": "namespace/name"}` or `{"key": "$snapshot"}`.
// Answers `{result, did, enqueue?, requeueAfterMs?}`; only callers that RBAC
// allows (see caller-auth.ts) get in.

import { errorReply, type JsonRoute } from "../server/json-route.js";
import { KubeError } from "../kube/client.js";
import { callerCheck, type CallerAuth } from "./caller-auth.js";

/** `{"key": ...}` with a namespace/name key of at most 253 + 1 + 253 characters: 4 KiB is ample. */
export const RECONCILE_BODY_LIMIT = 4096;
import { ReconcileInputError, type Reconciler } from "./reconciler.js";

export function reconcileRoute(reconciler: Reconciler | undefined, auth: CallerAuth | undefined): JsonRoute {
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
      const key = (body as { key?: unknown } | null)?.key;
      if (typeof body !== "object" || body === null || typeof key !== "string" || key === "") {
        return errorReply(
          400,
          "BadRequest",
          'body must be {"key": "namespace/name"} or {"key": "$snapshot"}',
        );
      }
      try {
        return { status: 200, body: await reconciler.reconcile(key) };
      } catch (e) {
        if (e instanceof ReconcileInputError) return errorReply(400, "BadRequest", e.message);
        const status = e instanceof KubeError ? 502 : 500;
        ctx.log.warn({ err: e, key }, "reconcile failed");
        return errorReply(status, "ReconcileFailed", `reconcile of ${key} failed: ${(e as Error).message}`);
      }
    },
  };
}
