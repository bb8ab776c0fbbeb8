// The caller check's costs: how many TokenReviews a flood of tokens makes, and
// that the watcher's good token survives any flood of bogus ones. A fake
// KubeClient answers the reviews (decision logic, no cluster needed); the same
// against the real apiserver is in test/integration/metrics-auth.test.ts.

import { describe, expect, it } from "vitest";
import type { KubeClient } from "../kube/client.js";
import { tokenReviewAuth } from "./caller-auth.js";

interface Calls {
  tokenReviews: number;
  accessReviews: number;
}

/** An apiserver that knows one token, `good`, whose user may call /reconcile. */
function fakeKube(calls: Calls, delayMs = 0): KubeClient {
  return {
    async json<T>(_method: string, path: string, opts?: { body?: unknown }): Promise<T> {
      if (delayMs) await new Promise((r) => setTimeout(r, delayMs));
      if (path.endsWith("/tokenreviews")) {
        calls.tokenReviews++;
        const token = (opts?.body as { spec: { token: string } }).spec.token;
        const ok = token === "good" || token === "other-user";
        return {
          status: ok ? { authenticated: true, user: { username: token } } : { authenticated: false },
        } as T;
      }
      calls.accessReviews++;
      const user = (opts?.body as { spec: { user: string } }).spec.user;
      return { status: { allowed: user === "good" } } as T;
    },
    stream: () => Promise.reject(new Error("no streams here")),
  };
}

const bearer = (t: string) => ({ authorization: `Bearer ${t}` });

describe("tokenReviewAuth", () => {
  it("asks once per bogus token however often it is sent, within the negative TTL", async () => {
    const calls = { tokenReviews: 0, accessReviews: 0 };
    let now = 0;
    const auth = tokenReviewAuth(fakeKube(calls), { now: () => now, deniedTtlMs: 60_000 });
    for (let i = 0; i < 50; i++) {
      const v = await auth.check(bearer("bogus-1"));
      expect(v).toMatchObject({ ok: false, status: 401 });
    }
    expect(calls.tokenReviews).toBe(1);
    now = 60_001;
    await auth.check(bearer("bogus-1"));
    expect(calls.tokenReviews).toBe(2);
  });

  it("shares one review among concurrent checks of the same token", async () => {
    const calls = { tokenReviews: 0, accessReviews: 0 };
    const auth = tokenReviewAuth(fakeKube(calls, 20));
    const verdicts = await Promise.all(Array.from({ length: 20 }, () => auth.check(bearer("bogus-2"))));
    expect(verdicts.every((v) => !v.ok)).toBe(true);
    expect(calls.tokenReviews).toBe(1);
  });

  it("keeps the good token cached through a flood of new bogus tokens, and the cache stays bounded", async () => {
    const calls = { tokenReviews: 0, accessReviews: 0 };
    // A budget that never runs out here: this is about the caches.
    const auth = tokenReviewAuth(fakeKube(calls), { maxDenied: 100, reviewBurst: 10_000 });
    expect(await auth.check(bearer("good"))).toEqual({ ok: true, user: "good" });
    expect(calls).toEqual({ tokenReviews: 1, accessReviews: 1 });
    for (let i = 0; i < 1_500; i++) await auth.check(bearer(`flood-${i}`));
    expect(calls.tokenReviews).toBe(1 + 1_500);
    // The good token is still cached: no new review.
    expect(await auth.check(bearer("good"))).toEqual({ ok: true, user: "good" });
    expect(calls.tokenReviews).toBe(1 + 1_500);
    // Only the most recent 100 refusals are kept: the last one is cached, the first is asked again.
    await auth.check(bearer("flood-1499"));
    expect(calls.tokenReviews).toBe(1 + 1_500);
    await auth.check(bearer("flood-0"));
    expect(calls.tokenReviews).toBe(1 + 1_500 + 1);
  });

  it("refuses a known user without the grant for a short while only", async () => {
    const calls = { tokenReviews: 0, accessReviews: 0 };
    let now = 0;
    const auth = tokenReviewAuth(fakeKube(calls), { now: () => now });
    expect(await auth.check(bearer("other-user"))).toMatchObject({ ok: false, status: 403 });
    now = 4_000;
    await auth.check(bearer("other-user"));
    expect(calls.accessReviews).toBe(1);
    now = 5_001;
    await auth.check(bearer("other-user"));
    expect(calls.accessReviews).toBe(2);
  });

  it("answers 429 without asking once new tokens come faster than the budget, and asks again as it refills", async () => {
    const calls = { tokenReviews: 0, accessReviews: 0 };
    let now = 0;
    const auth = tokenReviewAuth(fakeKube(calls), { now: () => now, reviewsPerSecond: 5, reviewBurst: 20 });
    const verdicts = [];
    for (let i = 0; i < 1_000; i++) verdicts.push(await auth.check(bearer(`flood-${i}`)));
    expect(calls.tokenReviews).toBe(20);
    expect(verdicts.slice(0, 20).every((v) => !v.ok && v.status === 401)).toBe(true);
    expect(verdicts[20]).toEqual({
      ok: false,
      status: 429,
      message: "too many new bearer tokens to check at once; try again later",
      retryAfterSeconds: 1,
    });
    // A 429 is not kept: the same token is reviewed once there is budget again.
    now = 1_000;
    for (let i = 20; i < 40; i++) await auth.check(bearer(`flood-${i}`));
    expect(calls.tokenReviews).toBe(25);
    // Refusals already reviewed are still answered from their cache, budget or not.
    expect(await auth.check(bearer("flood-0"))).toMatchObject({ ok: false, status: 401 });
    expect(calls.tokenReviews).toBe(25);
  });

  it("asks about a token it let in before without waiting on the budget", async () => {
    const calls = { tokenReviews: 0, accessReviews: 0 };
    let now = 0;
    const auth = tokenReviewAuth(fakeKube(calls), { now: () => now, ttlMs: 60_000 });
    expect(await auth.check(bearer("good"))).toEqual({ ok: true, user: "good" });
    let i = 0;
    const flood = async (): Promise<void> => {
      for (const end = i + 100; i < end;) await auth.check(bearer(`flood-${i++}`));
    };
    await flood();
    // Its verdict expired while new tokens keep the budget empty: asked again at once.
    now = 60_001;
    await flood();
    expect(await auth.check(bearer("flood-new"))).toMatchObject({ status: 429 });
    const before = calls.tokenReviews;
    expect(await auth.check(bearer("good"))).toEqual({ ok: true, user: "good" });
    expect(calls.tokenReviews).toBe(before + 1);
  });

  it("asks about the non-resource URL and verb it was given", async () => {
    const bodies: unknown[] = [];
    const kube: KubeClient = {
      json<T>(_method: string, path: string, opts?: { body?: unknown }): Promise<T> {
        if (path.endsWith("/tokenreviews"))
          return Promise.resolve({ status: { authenticated: true, user: { username: "prometheus" } } } as T);
        bodies.push(opts?.body);
        return Promise.resolve({ status: { allowed: false } } as T);
      },
      stream: () => Promise.reject(new Error("no streams here")),
    };
    const auth = tokenReviewAuth(kube, { access: { path: "/metrics", verb: "get" } });
    expect(await auth.check(bearer("t"))).toEqual({
      ok: false,
      status: 403,
      message: "prometheus may not read /metrics (RBAC: get on the non-resource URL /metrics)",
    });
    expect(bodies).toMatchObject([{ spec: { nonResourceAttributes: { path: "/metrics", verb: "get" } } }]);
  });
});
