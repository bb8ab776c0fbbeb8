// /validate and /mutate: the AdmissionReview handlers the HTTPS server hosts.
// This file reads the review and writes the answer; the decisions are
// webhooks/admission.ts.

import type { ClusterAccess } from "../kube/kubeconfig.js";
import type { JsonReply, JsonHandler, RequestContext } from "./json-handler.js";
import type { Logger } from "../observability/logger.js";
import type { ServerMetrics } from "../observability/metrics.js";
import { ADMISSION_BODY_LIMIT, parseReview, reviewReply } from "./admission-review.js";
import type { AdmissionRequest, Verdict } from "../webhooks/review.js";
import { mutateReview, validateReview, type TlsSecretExists } from "../webhooks/admission.js";
import { ConflictIndex } from "../webhooks/conflicts.js";
import { MUTATING_WEBHOOK, VALIDATING_WEBHOOK } from "../api/webhook-registration.js";

type Decide = (request: AdmissionRequest) => Verdict | Promise<Verdict>;

function admissionHandler(
  path: string,
  webhook: string,
  decide: Decide,
  metrics: ServerMetrics,
): JsonHandler {
  return {
    path,
    limit: ADMISSION_BODY_LIMIT,
    async handle(body: unknown, ctx: RequestContext): Promise<JsonReply> {
      const parsed = parseReview(body);
      if (!parsed.ok) {
        metrics.webhookDecisions.inc({ webhook, outcome: "bad-request" });
        return parsed.reply;
      }
      const { apiVersion, request } = parsed.review;
      const verdict = await decide(request);
      metrics.webhookDecisions.inc({ webhook, outcome: verdict.allowed ? "allowed" : "denied" });
      if (!verdict.allowed) {
        ctx.log.debug({ webhook, uid: request.uid, message: verdict.status.message }, "denied");
      }
      return reviewReply(apiVersion, request.uid, verdict);
    },
  };
}

/**
 * The admission webhooks. Neither has side effects (`sideEffects: None`), so
 * a dryRun request is answered like any other: the conflict lookup only reads.
 * With a cluster, /validate also warns about routes
 * that an older route already owns, and (given `tlsSecretExists`) about a TLS
 * Secret that does not exist yet; without one it judges the object alone.
 */
export function admissionHandlers(
  access: ClusterAccess | undefined,
  deps: {
    log: Logger;
    metrics: ServerMetrics;
    conflicts?: ConflictIndex;
    tlsSecretExists?: TlsSecretExists;
  },
): JsonHandler[] {
  // serve hands in an index fed by its one EdgeRoute watch (the cache's); else one of its own.
  const conflicts = deps.conflicts ?? (access ? new ConflictIndex(access, { log: deps.log }) : undefined);
  const lookups = deps.tlsSecretExists ? { tlsSecretExists: deps.tlsSecretExists } : {};
  return [
    admissionHandler(
      VALIDATING_WEBHOOK.path,
      VALIDATING_WEBHOOK.suffix,
      (request) => validateReview(request, conflicts, lookups),
      deps.metrics,
    ),
    admissionHandler(MUTATING_WEBHOOK.path, MUTATING_WEBHOOK.suffix, mutateReview, deps.metrics),
  ];
}
