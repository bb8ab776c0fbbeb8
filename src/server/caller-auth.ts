// Who may call /reconcile: a bearer token that the apiserver vouches for
// (TokenReview) and whose user RBAC allows `create` on the non-resource URL
// /reconcile (SubjectAccessReview), as kube-rbac-proxy does. The chart grants
// that to the watcher's ServiceAccount only. Verdicts are cached briefly so a
// burst of reconciles costs two apiserver calls, not two per request.

import { createHash } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import type { KubeClient } from "../kube/client.js";
import { errorReply, type JsonHandler } from "./json-handler.js";

export type AuthVerdict = { ok: true; user: string } | { ok: false; status: 401 | 403; message: string };

export interface CallerAuth {
  check(headers: IncomingHttpHeaders): Promise<AuthVerdict>;
}

interface TokenReview {
  status?: {
    authenticated?: boolean;
    user?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> };
    error?: string;
  };
}

interface SubjectAccessReview {
  status?: { allowed?: boolean; reason?: string };
}

export const RECONCILE_PATH = "/reconcile";

export function bearerToken(headers: IncomingHttpHeaders): string | undefined {
  const h = headers.authorization;
  if (typeof h !== "string") return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
  return m?.[1];
}

export function tokenReviewAuth(
  kube: KubeClient,
  opts: { ttlMs?: number; deniedTtlMs?: number } = {},
): CallerAuth {
  const cache = new Map<string, { verdict: AuthVerdict; until: number }>();
  const ttl = opts.ttlMs ?? 60_000;
  const deniedTtl = opts.deniedTtlMs ?? 5_000;

  const review = async (token: string): Promise<AuthVerdict> => {
    const tr = await kube.json<TokenReview>("POST", "/apis/authentication.k8s.io/v1/tokenreviews", {
      body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenReview", spec: { token } },
      timeoutMs: 10_000,
    });
    const user = tr.status?.user;
    if (!tr.status?.authenticated || !user?.username) {
      return {
        ok: false,
        status: 401,
        message: `the bearer token was not accepted${tr.status?.error ? `: ${tr.status.error}` : ""}`,
      };
    }
    const sar = await kube.json<SubjectAccessReview>(
      "POST",
      "/apis/authorization.k8s.io/v1/subjectaccessreviews",
      {
        body: {
          apiVersion: "authorization.k8s.io/v1",
          kind: "SubjectAccessReview",
          spec: {
            user: user.username,
            uid: user.uid,
            groups: user.groups,
            extra: user.extra,
            nonResourceAttributes: { path: RECONCILE_PATH, verb: "create" },
          },
        },
        timeoutMs: 10_000,
      },
    );
    if (!sar.status?.allowed) {
      return {
        ok: false,
        status: 403,
        message: `${user.username} may not call ${RECONCILE_PATH} (RBAC: create on the non-resource URL ${RECONCILE_PATH})`,
      };
    }
    return { ok: true, user: user.username };
  };

  return {
    async check(headers) {
      const token = bearerToken(headers);
      if (!token)
        return { ok: false, status: 401, message: "a bearer token is required (Authorization: Bearer ...)" };
      const id = createHash("sha256").update(token).digest("hex");
      const now = Date.now();
      const hit = cache.get(id);
      if (hit && hit.until > now) return hit.verdict;
      const verdict = await review(token);
      if (cache.size > 1000) cache.clear();
      cache.set(id, { verdict, until: now + (verdict.ok ? ttl : deniedTtl) });
      return verdict;
    },
  };
}

/** Wraps a route's handler so that only callers `auth` lets in reach it. */
export function requireCaller(auth: CallerAuth, handle: JsonHandler["handle"]): JsonHandler["handle"] {
  return async (body, ctx) => {
    let verdict: AuthVerdict;
    try {
      verdict = await auth.check(ctx.headers);
    } catch (e) {
      return errorReply(
        503,
        "ServiceUnavailable",
        `could not check the caller's credentials: ${(e as Error).message}`,
      );
    }
    if (!verdict.ok) {
      return errorReply(
        verdict.status,
        verdict.status === 401 ? "Unauthorized" : "Forbidden",
        verdict.message,
      );
    }
    return handle(body, ctx);
  };
}
