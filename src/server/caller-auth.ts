// Who may call /reconcile: a bearer token that the apiserver vouches for
// (TokenReview) and whose user RBAC allows `create` on the non-resource URL
// /reconcile (SubjectAccessReview), as kube-rbac-proxy does. The chart grants
// that to the watcher's ServiceAccount only. Verdicts are cached briefly so a
// burst of reconciles costs two apiserver calls, not two per request; refusals
// are cached apart (an LRU of their own), so each bogus token costs at most one
// TokenReview per deniedTtl however many times it is sent, and a flood of new
// ones never evicts the watcher's good token. Concurrent checks of one token
// share one review.

import { createHash } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import type { KubeClient } from "../kube/client.js";
import { errorReply, type JsonReply } from "./json-handler.js";
import { VerdictCache } from "./verdict-cache.js";

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

export interface TokenReviewAuthOptions {
  /** How long an accepted token is trusted without asking again (default 60 s). */
  ttlMs?: number;
  /** How long a token the apiserver does not know is refused without asking again (default 60 s). */
  deniedTtlMs?: number;
  /**
   * How long a known user without the RBAC grant is refused (default 5 s):
   * short, since the grant may be on its way (a watcher can start before its binding).
   */
  forbiddenTtlMs?: number;
  /** Accepted tokens remembered (default 64: the watcher's replicas and whoever else RBAC lets in). */
  maxAllowed?: number;
  /** Refused tokens remembered (default 10,000, about 1.5 MiB). */
  maxDenied?: number;
  now?: () => number;
}

export function tokenReviewAuth(kube: KubeClient, opts: TokenReviewAuthOptions = {}): CallerAuth {
  const ttl = opts.ttlMs ?? 60_000;
  const deniedTtl = opts.deniedTtlMs ?? 60_000;
  const forbiddenTtl = opts.forbiddenTtlMs ?? 5_000;
  const allowed = new VerdictCache<AuthVerdict>(opts.maxAllowed ?? 64, opts.now);
  const denied = new VerdictCache<AuthVerdict>(opts.maxDenied ?? 10_000, opts.now);
  const inFlight = new Map<string, Promise<AuthVerdict>>();

  const review = async (token: string): Promise<AuthVerdict> => {
    const tr = await kube.json<TokenReview>("POST", "/apis/authentication.k8s.io/v1/tokenreviews", {
      body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenReview", spec: { token } },
      timeoutMs: 10_000,
      // A review stores nothing: sending it twice is safe.
      retry: true,
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
        retry: true,
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
      const id = createHash("sha256").update(token).digest("base64");
      const hit = allowed.get(id) ?? denied.get(id);
      if (hit) return hit;
      const pending = inFlight.get(id);
      if (pending) return pending;
      const p = review(token).then((verdict) => {
        if (verdict.ok) allowed.set(id, verdict, ttl);
        else denied.set(id, verdict, verdict.status === 401 ? deniedTtl : forbiddenTtl);
        return verdict;
      });
      inFlight.set(id, p);
      try {
        return await p;
      } finally {
        inFlight.delete(id);
      }
    },
  };
}

/**
 * A handler's `authorize`: only callers `auth` lets in get past the headers, so
 * an unauthenticated caller's body is never read, let alone parsed.
 */
export function callerCheck(
  auth: CallerAuth,
): (headers: IncomingHttpHeaders) => Promise<JsonReply | undefined> {
  return async (headers) => {
    let verdict: AuthVerdict;
    try {
      verdict = await auth.check(headers);
    } catch (e) {
      return errorReply(
        503,
        "ServiceUnavailable",
        `could not check the caller's credentials: ${(e as Error).message}`,
      );
    }
    if (verdict.ok) return undefined;
    return errorReply(verdict.status, verdict.status === 401 ? "Unauthorized" : "Forbidden", verdict.message);
  };
}
