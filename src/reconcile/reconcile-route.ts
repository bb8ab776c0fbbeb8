// POST /reconcile: `{"key": "namespace/name"}` or `{"key": "$snapshot"}`.
// Answers `{result, did, enqueue?, requeueAfterMs?}`; only callers that RBAC
// allows (see caller-auth.ts) get in.

import { errorReply, MiB, type JsonRoute } from "../server/json-route.js";
import { KubeError } from "../kube/client.js";
import { requireCaller, type CallerAuth } from "./caller-auth.js";
import { ReconcileAbortedError, ReconcileInputError, type Reconciler } from "./reconciler.js";

export function reconcileRoute(reconciler: Reconciler | undefined, auth: CallerAuth | undefined): JsonRoute {
  const path = "/reconcile";
  if (!reconciler || !auth) {
    return {
      path,
      limit: MiB,
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
    limit: MiB,
    handle: requireCaller(auth, async (body, ctx) => {
      const key = (body as { key?: unknown } | null)?.key;
      if (typeof body !== "object" || body === null || typeof key !== "string" || key === "") {
        return errorReply(
          400,
          "BadRequest",
          'body must be {"key": "namespace/name"} or {"key": "$snapshot"}',
        );
      }
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
    }),
  };
}
