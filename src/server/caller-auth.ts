// Who may call /reconcile (and, with serve --metrics-auth, read /metrics): a
// bearer token that the apiserver vouches for (TokenReview) and whose user RBAC
// allows the verb on the non-resource URL (SubjectAccessReview: `create` on
// /reconcile, `get` on /metrics), as kube-rbac-proxy and controller-runtime's
// metrics filter do. The chart grants /reconcile to the watcher's ServiceAccount
// only, and /metrics to whoever is bound to <fullname>-metrics-reader. Verdicts
// are cached briefly so a burst of calls costs two apiserver calls, not two per
// request; refusals are cached apart (an LRU of their own), so each bogus token
// costs at most one TokenReview per deniedTtl however many times it is sent, and
// a flood of new ones never evicts a good token. Concurrent checks of one token
// share one review. Tokens never seen before are reviewed within a token bucket
// (reviewsPerSecond, reviewBurst): past it they are answered 429 without asking,
// so a caller sending a new token per request cannot turn the server into a
// stream of TokenReviews that crowds its own apiserver calls out (API Priority
// and Fairness queues them all as the server's). A token that was accepted
// before is asked about again without waiting on the bucket.

import { createHash } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import type { KubeClient } from "../kube/client.js";
import { errorReply, type JsonReply } from "./json-handler.js";
import { VerdictCache } from "./verdict-cache.js";

export type AuthVerdict =
  | { ok: true; user: string }
  | { ok: false; status: 401 | 403; message: string }
  /** Too many new tokens to review just now: try again after `retryAfterSeconds`. */
  | { ok: false; status: 429; message: string; retryAfterSeconds: number };

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
export const METRICS_PATH = "/metrics";

/** What a caller must be allowed: a verb on a non-resource URL. */
export interface NonResourceAccess {
  readonly path: string;
  readonly verb: string;
}

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
  /** What the caller must be allowed (default: `create` on /reconcile). */
  access?: NonResourceAccess;
  /** TokenReviews per second of tokens not seen before (default 5). */
  reviewsPerSecond?: number;
  /** ...and at once, after a quiet spell (default 20). */
  reviewBurst?: number;
  now?: () => number;
}

/** A token bucket: `take()` is true while there is a token, refilled at `rate` per second up to `burst`. */
class ReviewBudget {
  private tokens: number;
  private at: number;

  constructor(
    private readonly rate: number,
    private readonly burst: number,
    private readonly now: () => number,
  ) {
    this.tokens = burst;
    this.at = now();
  }

  take(): boolean {
    const now = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.at) / 1000) * this.rate);
    this.at = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  /** Whole seconds until the next token. */
  retryAfterSeconds(): number {
    return Math.max(1, Math.ceil((1 - this.tokens) / this.rate));
  }
}

/** How long a token once accepted skips the review budget: a projected service account token's default lifetime. */
const KNOWN_TTL_MS = 3_600_000;

export function tokenReviewAuth(kube: KubeClient, opts: TokenReviewAuthOptions = {}): CallerAuth {
  const ttl = opts.ttlMs ?? 60_000;
  const deniedTtl = opts.deniedTtlMs ?? 60_000;
  const forbiddenTtl = opts.forbiddenTtlMs ?? 5_000;
  const now = opts.now ?? Date.now;
  const access = opts.access ?? { path: RECONCILE_PATH, verb: "create" };
  const allowed = new VerdictCache<AuthVerdict>(opts.maxAllowed ?? 64, now);
  const denied = new VerdictCache<AuthVerdict>(opts.maxDenied ?? 10_000, now);
  // Tokens accepted once, kept past their verdict's TTL (for a service account
  // token's usual hour): asking about them again skips the budget, so a flood
  // of new tokens cannot lock out a caller that was let in before.
  const known = new VerdictCache<true>(opts.maxAllowed ?? 64, now);
  const budget = new ReviewBudget(opts.reviewsPerSecond ?? 5, opts.reviewBurst ?? 20, now);
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
            nonResourceAttributes: { path: access.path, verb: access.verb },
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
        message: `${user.username} may not ${access.verb === "get" ? "read" : "call"} ${access.path} (RBAC: ${access.verb} on the non-resource URL ${access.path})`,
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
      if (!known.get(id) && !budget.take()) {
        // Not cached either: the next try may find the budget refilled.
        return {
          ok: false,
          status: 429,
          message: "too many new bearer tokens to check at once; try again later",
          retryAfterSeconds: budget.retryAfterSeconds(),
        };
      }
      const p = review(token).then((verdict) => {
        if (verdict.ok) {
          allowed.set(id, verdict, ttl);
          known.set(id, true, KNOWN_TTL_MS);
        } else denied.set(id, verdict, verdict.status === 401 ? deniedTtl : forbiddenTtl);
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
    if (verdict.status === 429)
      return {
        ...errorReply(429, "TooManyRequests", verdict.message),
        headers: { "retry-after": String(verdict.retryAfterSeconds) },
      };
    return errorReply(verdict.status, verdict.status === 401 ? "Unauthorized" : "Forbidden", verdict.message);
  };
}
