// The caller check's costs: how many TokenReviews a flood of tokens makes, and
// that the watcher's good token survives any flood of bogus ones. A fake
// KubeClient answers the reviews (decision logic, no cluster needed).

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
    const auth = tokenReviewAuth(fakeKube(calls), { maxDenied: 100 });
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
});
