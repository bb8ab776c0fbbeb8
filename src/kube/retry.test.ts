import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { KubeError } from "./kube-error.js";
import {
  DeadlineExceeded,
  isIdempotent,
  isTransient,
  mayRetry,
  retryAfterMs,
  retryDelayMs,
  type BackoffPolicy,
} from "./retry.js";

const netErr = (code: string, message = code): Error => Object.assign(new Error(message), { code });

describe("isTransient: the one rule", () => {
  it.each([
    [new KubeError(429, "TooManyRequests", ""), true],
    [new KubeError(500, "InternalError", ""), true],
    [new KubeError(503, "ServiceUnavailable", ""), true],
    [new KubeError(504, "Timeout", ""), true],
    [netErr("ECONNRESET"), true],
    [netErr("ECONNREFUSED"), true],
    [netErr("EPIPE"), true],
    [new Error("socket hang up"), true],
    [new DeadlineExceeded("no complete answer"), true],
    [new KubeError(400, "BadRequest", ""), false],
    [new KubeError(403, "Forbidden", ""), false],
    [new KubeError(404, "NotFound", ""), false],
    [new KubeError(409, "Conflict", ""), false],
    [new KubeError(410, "Expired", ""), false],
    [new KubeError(422, "Invalid", ""), false],
    [new SyntaxError("Unexpected token"), false],
    [new TypeError("x is undefined"), false],
  ] as const)("%s → %s", (err, want) => {
    expect(isTransient(err)).toBe(want);
  });

  it("sends a non-idempotent request again only after a 429 or a refused connection", () => {
    expect(mayRetry(new KubeError(429, "", ""), false)).toBe(true);
    expect(mayRetry(netErr("ECONNREFUSED"), false)).toBe(true);
    expect(mayRetry(new KubeError(503, "", ""), false)).toBe(false);
    expect(mayRetry(netErr("ECONNRESET"), false)).toBe(false);
    expect(mayRetry(new KubeError(503, "", ""), true)).toBe(true);
    expect(mayRetry(new KubeError(409, "", ""), true)).toBe(false);
  });
});

describe("isIdempotent", () => {
  const rvTest = { op: "test", path: "/metadata/resourceVersion", value: "3" };
  it.each([
    ["GET", undefined, undefined, true],
    ["PUT", { metadata: { name: "a", resourceVersion: "3" } }, undefined, true],
    ["PUT", { metadata: { name: "a" } }, undefined, false],
    [
      "PATCH",
      [rvTest, { op: "remove", path: "/metadata/finalizers/0" }],
      "application/json-patch+json",
      true,
    ],
    ["PATCH", [{ op: "remove", path: "/metadata/finalizers/0" }], "application/json-patch+json", false],
    ["PATCH", { metadata: { resourceVersion: "3" }, status: {} }, "application/merge-patch+json", true],
    ["PATCH", { status: {} }, "application/merge-patch+json", false],
    ["POST", { metadata: { resourceVersion: "3" } }, undefined, false],
    ["DELETE", undefined, undefined, false],
    ["DELETE", { preconditions: { uid: "u" } }, undefined, true],
  ] as const)("%s %j (%s) → %s", (method, body, type, want) => {
    expect(isIdempotent(method, body, type)).toBe(want);
  });
});

describe("retryAfterMs", () => {
  it("reads delta-seconds and HTTP dates, and nothing else", () => {
    const now = Date.parse("2026-01-01T00:00:00Z");
    expect(retryAfterMs("3", now)).toBe(3000);
    expect(retryAfterMs(["0"], now)).toBe(0);
    expect(retryAfterMs("Thu, 01 Jan 2026 00:00:05 GMT", now)).toBe(5000);
    expect(retryAfterMs("Wed, 31 Dec 2025 00:00:05 GMT", now)).toBe(0);
    expect(retryAfterMs(undefined, now)).toBeUndefined();
    expect(retryAfterMs("soon", now)).toBeUndefined();
    expect(retryAfterMs("-1", now)).toBeUndefined();
  });
});

describe("retryDelayMs", () => {
  const policy = fc.record({
    baseMs: fc.integer({ min: 1, max: 5000 }),
    capMs: fc.integer({ min: 1, max: 60_000 }),
  });

  it("backs off in the upper half of base·2^(n-1), never past the cap", () => {
    fc.assert(
      fc.property(
        policy,
        fc.integer({ min: 1, max: 100 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (p: BackoffPolicy, n, r) => {
          const ceiling = Math.min(p.capMs, p.baseMs * 2 ** (n - 1));
          const d = retryDelayMs(n, undefined, p, () => r);
          return d >= ceiling / 2 && d <= ceiling && d <= p.capMs;
        },
      ),
    );
  });

  it("waits at least the Retry-After (up to the cap), whatever the attempt", () => {
    fc.assert(
      fc.property(
        policy,
        fc.integer({ min: 1, max: 100 }),
        fc.integer({ min: 0, max: 120_000 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (p: BackoffPolicy, n, after, r) => {
          const d = retryDelayMs(n, after, p, () => r);
          return d >= Math.min(after, p.capMs) && d <= Math.min(p.capMs, after * 1.1);
        },
      ),
    );
  });

  it("grows with the attempt while under the cap", () => {
    const p = { baseMs: 100, capMs: 100_000 };
    const mid = (n: number) => retryDelayMs(n, undefined, p, () => 0.5);
    expect([1, 2, 3, 4].map(mid)).toEqual([75, 150, 300, 600]);
  });
});
