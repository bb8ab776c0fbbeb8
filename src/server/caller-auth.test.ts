// Who may call /reconcile, decided by the apiserver's TokenReview and
// SubjectAccessReview, here answered by a fake KubeClient so that every verdict
// (and the apiserver failing) can be had on cue. The real path runs in
// test/integration/reconcile.test.ts.

import { describe, expect, it } from "vitest";
import { apiError, FakeKube, type Call } from "../../test/fixtures/fake-kube.js";
import { callerCheck, tokenReviewAuth } from "./caller-auth.js";

const TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews";
const ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews";

/** An apiserver that knows `good` (allowed) and `other` (authenticated, not allowed). */
function apiserver(): FakeKube {
  const kube = new FakeKube();
  kube.intercept = (call: Call) => {
    if (call.path === TOKEN_REVIEWS) {
      const token = (call.body as { spec: { token: string } }).spec.token;
      const users: Record<string, string> = { good: "system:serviceaccount:edge:watcher", other: "mallory" };
      const user = users[token];
      return Promise.resolve({
        status: user
          ? { authenticated: true, user: { username: user, uid: "u1", groups: ["system:serviceaccounts"] } }
          : { authenticated: false, error: "token expired" },
      });
    }
    if (call.path === ACCESS_REVIEWS) {
      const user = (call.body as { spec: { user: string } }).spec.user;
      return Promise.resolve({ status: { allowed: user === "system:serviceaccount:edge:watcher" } });
    }
    return undefined;
  };
  return kube;
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

describe("tokenReviewAuth", () => {
  it("asks for a token before asking the apiserver anything", async () => {
    const kube = apiserver();
    const auth = tokenReviewAuth(kube);
    for (const headers of [{}, { authorization: "Basic dXNlcjpwYXNz" }, { authorization: "Bearer" }]) {
      expect(await auth.check(headers)).toEqual({
        ok: false,
        status: 401,
        message: "a bearer token is required (Authorization: Bearer ...)",
      });
    }
    expect(kube.calls).toEqual([]);
  });

  it("answers 401 for a token the apiserver does not accept, with its reason", async () => {
    const auth = tokenReviewAuth(apiserver());
    expect(await auth.check(bearer("stolen"))).toEqual({
      ok: false,
      status: 401,
      message: "the bearer token was not accepted: token expired",
    });
  });

  it("answers 403 for a user RBAC does not let create /reconcile, and asks about exactly that", async () => {
    const kube = apiserver();
    const auth = tokenReviewAuth(kube);
    expect(await auth.check(bearer("other"))).toEqual({
      ok: false,
      status: 403,
      message: "mallory may not call /reconcile (RBAC: create on the non-resource URL /reconcile)",
    });
    const sar = kube.calls.find((c) => c.path === ACCESS_REVIEWS)?.body as { spec: unknown };
    expect(sar.spec).toEqual({
      user: "mallory",
      uid: "u1",
      groups: ["system:serviceaccounts"],
      nonResourceAttributes: { path: "/reconcile", verb: "create" },
    });
  });

  it("lets the watcher's ServiceAccount in, and keeps the verdict for its TTL only", async () => {
    const kube = apiserver();
    const auth = tokenReviewAuth(kube, { ttlMs: 60_000, deniedTtlMs: 0, forbiddenTtlMs: 0 });
    expect(await auth.check(bearer("good"))).toEqual({
      ok: true,
      user: "system:serviceaccount:edge:watcher",
    });
    await auth.check(bearer("good"));
    expect(kube.count("POST", "tokenreviews")).toBe(1);
    // A refusal is kept for forbiddenTtlMs (0 here): an RBAC grant made since is seen at once.
    await auth.check(bearer("other"));
    await new Promise((r) => setTimeout(r, 2));
    await auth.check(bearer("other"));
    expect(kube.count("POST", "tokenreviews")).toBe(3);
  });
});

describe("callerCheck", () => {
  it("lets only an allowed caller past the headers, and says 401 or 403 otherwise", async () => {
    const check = callerCheck(tokenReviewAuth(apiserver()));
    expect(await check(bearer("good"))).toBeUndefined();
    expect(await check(bearer("stolen"))).toMatchObject({ status: 401, body: { reason: "Unauthorized" } });
    expect(await check(bearer("other"))).toMatchObject({ status: 403, body: { reason: "Forbidden" } });
  });

  it("answers 429 with Retry-After when there are too many new tokens to review", async () => {
    const check = callerCheck(tokenReviewAuth(apiserver(), { reviewBurst: 1, reviewsPerSecond: 0.5 }));
    expect(await check(bearer("stolen"))).toMatchObject({ status: 401 });
    expect(await check(bearer("stolen-2"))).toMatchObject({
      status: 429,
      headers: { "retry-after": "2" },
      body: { reason: "TooManyRequests", code: 429 },
    });
  });

  it("answers 503 when the apiserver cannot say, and never lets the caller through", async () => {
    const kube = new FakeKube();
    kube.intercept = () => Promise.reject(apiError(500, "InternalError"));
    const reply = await callerCheck(tokenReviewAuth(kube))(bearer("good"));
    expect(reply?.status).toBe(503);
    expect(JSON.stringify(reply?.body)).toContain("could not check the caller's credentials");
  });
});
