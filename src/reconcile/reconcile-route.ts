// POST /reconcile: `{"key": "namespace/name"}` or `{"key": "$snapshot"}`.
// Answers `{result, did, enqueue?, requeueAfterMs?}`; only callers that RBAC
// allows (see caller-auth.ts) get in.

import { errorReply, MiB, type JsonRoute } from "../server/json-route.js";
import { KubeError } from "../kube/client.js";
import type { CallerAuth } from "./caller-auth.js";
import { ReconcileInputError, type Reconciler } from "./reconciler.js";

export function reconcileRoute(reconciler: Reconciler | undefined, auth: CallerAuth | undefined): JsonRoute {
  return {
    path: "/reconcile",
    limit: MiB,
    async handle(body, ctx) {
      if (!reconciler || !auth) {
        return errorReply(
          503,
          "ServiceUnavailable",
          "/reconcile needs cluster access: start serve with --kubeconfig, or in a cluster",
        );
      }
      let verdict;
      try {
        verdict = await auth.check(ctx.headers);
      } catch (e) {
        return errorReply(
          503,
          "ServiceUnavailable",
          `could not check the caller's credentials: ${(e as Error).message}`,
        );
      }
      if (!verdict.ok)
        return errorReply(
          verdict.status,
          verdict.status === 401 ? "Unauthorized" : "Forbidden",
          verdict.message,
        );
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
