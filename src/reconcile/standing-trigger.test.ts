// The scheduling of reconcileOnStandingChange: one run for a burst, one more
// for a change during a run, a wait on busy admission that ends, and retries
// with a growing delay after failures only.

import { afterEach, describe, expect, it, vi } from "vitest";
import type { DataPlane } from "../dataplane/dataplane.js";
import { silentLogger } from "../observability/logger.js";
import type { ReconcileReply } from "./protocol.js";
import { reconcileOnStandingChange } from "./standing-trigger.js";

/** A data plane that says its clients moved when the test says so. */
function movingPlane(): { plane: DataPlane; move(): void } {
  const listeners = new Set<() => void>();
  const plane: DataPlane = {
    kind: "test",
    program: () => Promise.reject(new Error("not used")),
    current: () => Promise.resolve(undefined),
    onStandingChange(l) {
      listeners.add(l);
      return () => listeners.delete(l);
    },
  };
  return { plane, move: () => listeners.forEach((l) => l()) };
}

const DONE: ReconcileReply = { result: "done", did: [] };

afterEach(() => {
  vi.useRealTimers();
});

describe("reconcileOnStandingChange", () => {
  it("runs once for a burst of changes, after the settle", async () => {
    vi.useFakeTimers();
    const { plane, move } = movingPlane();
    const run = vi.fn(() => Promise.resolve(DONE));
    const stop = reconcileOnStandingChange(plane, run, { log: silentLogger(), settleMs: 100 });
    for (let i = 0; i < 20; i++) move();
    await vi.advanceTimersByTimeAsync(99);
    expect(run).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(1);
    expect(run).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(run).toHaveBeenCalledTimes(1);
    stop();
  });

  it("a change during a run makes one more run after it, never two at once", async () => {
    vi.useFakeTimers();
    const { plane, move } = movingPlane();
    let inFlight = 0;
    let most = 0;
    const run = vi.fn(async () => {
      most = Math.max(most, ++inFlight);
      await new Promise((r) => setTimeout(r, 1_000));
      inFlight--;
      return DONE;
    });
    const stop = reconcileOnStandingChange(plane, run, { log: silentLogger(), settleMs: 100 });
    move();
    await vi.advanceTimersByTimeAsync(200);
    move();
    move();
    await vi.advanceTimersByTimeAsync(5_000);
    expect(run).toHaveBeenCalledTimes(2);
    expect(most).toBe(1);
    stop();
  });

  it("waits while admission is busy, but not past maxDeferMs", async () => {
    vi.useFakeTimers();
    const { plane, move } = movingPlane();
    const run = vi.fn(() => Promise.resolve(DONE));
    const stop = reconcileOnStandingChange(plane, run, {
      log: silentLogger(),
      settleMs: 100,
      busy: () => true,
      maxDeferMs: 3_000,
    });
    move();
    await vi.advanceTimersByTimeAsync(2_500);
    expect(run).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(run).toHaveBeenCalledTimes(1);
    stop();
  });

  it("retries a failure with a growing delay; a wait on clients is not retried", async () => {
    vi.useFakeTimers();
    const { plane, move } = movingPlane();
    const replies: (ReconcileReply | Error)[] = [
      new Error("apiserver down"),
      { result: "requeue", did: [] },
      { result: "requeue", did: [], requeueAfterMs: 5_000 },
    ];
    const at: number[] = [];
    const run = vi.fn(() => {
      at.push(Date.now());
      const next = replies.shift() ?? DONE;
      return next instanceof Error ? Promise.reject(next) : Promise.resolve(next);
    });
    const start = Date.now();
    const stop = reconcileOnStandingChange(plane, run, {
      log: silentLogger(),
      settleMs: 100,
      retryMs: 1_000,
    });
    move();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(at.map((t) => t - start)).toEqual([100, 1_100, 3_100]);
    stop();
  });

  it("the stop aborts the run in flight and runs nothing more", async () => {
    vi.useFakeTimers();
    const { plane, move } = movingPlane();
    let signal: AbortSignal | undefined;
    const run = vi.fn((s: AbortSignal) => {
      signal = s;
      return new Promise<ReconcileReply>(() => undefined);
    });
    const stop = reconcileOnStandingChange(plane, run, { log: silentLogger(), settleMs: 100 });
    move();
    await vi.advanceTimersByTimeAsync(100);
    stop();
    expect(signal?.aborted).toBe(true);
    move();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(run).toHaveBeenCalledTimes(1);
  });
});
