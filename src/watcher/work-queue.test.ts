import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import fc from "fast-check";
import { Registry } from "prom-client";
import { WorkQueue, type Lane } from "./work-queue.js";
import { SNAPSHOT_KEY } from "../reconcile/protocol.js";
import { createQueueMetrics } from "./queue-metrics.js";

beforeEach(() => {
  vi.useFakeTimers({ now: 0 });
});
afterEach(() => {
  vi.useRealTimers();
});

function drain(q: WorkQueue, lane: Lane = "route"): string[] {
  const out: string[] = [];
  for (let k = q.tryGet(lane); k !== undefined; k = q.tryGet(lane)) {
    out.push(k);
    q.done(k);
  }
  return out;
}

describe("WorkQueue", () => {
  it("queues a key added while queued once, in FIFO order", () => {
    const q = new WorkQueue();
    for (const k of ["a/1", "a/2", "a/1", "a/3", "a/2"]) q.add(k);
    expect(q.len()).toBe(3);
    expect(drain(q)).toEqual(["a/1", "a/2", "a/3"]);
    expect(q.isIdle()).toBe(true);
  });

  it("never hands out a key being processed; re-queues it after done", () => {
    const q = new WorkQueue();
    q.add("a/1");
    expect(q.tryGet("route")).toBe("a/1");
    q.add("a/1");
    q.add("a/1");
    expect(q.tryGet("route")).toBeUndefined();
    q.done("a/1");
    expect(q.tryGet("route")).toBe("a/1");
    q.done("a/1");
    expect(q.tryGet("route")).toBeUndefined();
  });

  it("backs off per key: 5 ms doubling, capped, reset by forget", () => {
    const q = new WorkQueue({ baseDelayMs: 5, maxDelayMs: 40 });
    const readyAfter = (): number => {
      const start = Date.now();
      q.addRateLimited("a/1");
      for (let t = 0; t < 1000; t++) {
        const k = q.tryGet("route");
        if (k !== undefined) {
          q.done(k);
          return Date.now() - start;
        }
        vi.advanceTimersByTime(1);
      }
      throw new Error("never ready");
    };
    expect([readyAfter(), readyAfter(), readyAfter(), readyAfter(), readyAfter(), readyAfter()]).toEqual([
      5, 10, 20, 40, 40, 40,
    ]);
    expect(q.numRequeues("a/1")).toBe(6);
    q.forget("a/1");
    expect(q.numRequeues("a/1")).toBe(0);
    expect(readyAfter()).toBe(5);
  });

  it("holds rate-limited re-adds to the overall token bucket", () => {
    // Burst 2 at 10 qps: two retries at once, then one every 100 ms.
    const q = new WorkQueue({ baseDelayMs: 1, qps: 10, burst: 2 });
    for (let i = 0; i < 5; i++) q.addRateLimited(`a/${i}`);
    const readyAt: number[] = [];
    for (let t = 0; t <= 400; t++) {
      for (const _k of drain(q)) readyAt.push(Date.now());
      vi.advanceTimersByTime(1);
    }
    expect(readyAt).toEqual([1, 1, 100, 200, 300]);
  });

  it("keeps the earliest of several delayed adds of one key", () => {
    const q = new WorkQueue();
    q.addAfter("a/1", 100);
    q.addAfter("a/1", 50);
    q.addAfter("a/1", 80);
    vi.advanceTimersByTime(49);
    expect(q.tryGet("route")).toBeUndefined();
    vi.advanceTimersByTime(1);
    expect(drain(q)).toEqual(["a/1"]);
    vi.advanceTimersByTime(100);
    expect(drain(q)).toEqual([]);
  });

  it("queues a lone snapshot add at once, and holds the adds that keep coming until a quiet spell, at most to the cap", () => {
    const q = new WorkQueue({ snapshotHoldOffMs: 200, snapshotMaxHoldOffMs: 1000 });
    // A lone add, and another after a quiet spell: each ready at once (the leading edge).
    q.add(SNAPSHOT_KEY);
    expect(q.tryGet("snapshot")).toBe(SNAPSHOT_KEY);
    q.done(SNAPSHOT_KEY);
    vi.advanceTimersByTime(200);
    q.add(SNAPSHOT_KEY);
    expect(q.tryGet("snapshot")).toBe(SNAPSHOT_KEY);
    q.done(SNAPSHOT_KEY);
    // An add 50 ms after the last: held until 200 ms of quiet.
    vi.advanceTimersByTime(50);
    q.add(SNAPSHOT_KEY);
    vi.advanceTimersByTime(199);
    expect(q.tryGet("snapshot")).toBeUndefined();
    vi.advanceTimersByTime(1);
    expect(q.tryGet("snapshot")).toBe(SNAPSHOT_KEY);
    q.done(SNAPSHOT_KEY);
    // Adds 150 ms apart: the first is built at once (200 ms were quiet), the
    // rest keep waiting, but not past the cap from the first held add.
    const start = Date.now();
    const readyAt: number[] = [];
    for (let t = 0; t < 1500; t += 10) {
      if (t % 150 === 0) q.add(SNAPSHOT_KEY);
      if (q.tryGet("snapshot") !== undefined) {
        readyAt.push(Date.now() - start);
        q.done(SNAPSHOT_KEY);
      }
      vi.advanceTimersByTime(10);
    }
    expect(readyAt).toEqual([0, 1150]);
    // Quiet again: nothing more.
    vi.advanceTimersByTime(5000);
    expect(drain(q, "snapshot")).toEqual([SNAPSHOT_KEY]);
    expect(q.tryGet("snapshot")).toBeUndefined();
    expect(q.isIdle()).toBe(true);
  });

  it("folds a lone add during a build into one build right after it", () => {
    const q = new WorkQueue({ snapshotHoldOffMs: 200 });
    q.add(SNAPSHOT_KEY);
    expect(q.tryGet("snapshot")).toBe(SNAPSHOT_KEY);
    vi.advanceTimersByTime(500);
    q.add(SNAPSHOT_KEY);
    q.add(SNAPSHOT_KEY);
    expect(q.tryGet("snapshot")).toBeUndefined();
    q.done(SNAPSHOT_KEY);
    expect(q.tryGet("snapshot")).toBe(SNAPSHOT_KEY);
    q.done(SNAPSHOT_KEY);
    vi.advanceTimersByTime(5000);
    expect(q.tryGet("snapshot")).toBeUndefined();
  });

  it("runs one snapshot build at a time: adds during a build make exactly one more", () => {
    const q = new WorkQueue({ snapshotHoldOffMs: 200 });
    q.add(SNAPSHOT_KEY);
    expect(q.tryGet("snapshot")).toBe(SNAPSHOT_KEY);
    q.add(SNAPSHOT_KEY);
    vi.advanceTimersByTime(500);
    q.add(SNAPSHOT_KEY);
    vi.advanceTimersByTime(500);
    expect(q.tryGet("snapshot")).toBeUndefined();
    q.done(SNAPSHOT_KEY);
    expect(q.tryGet("snapshot")).toBe(SNAPSHOT_KEY);
    q.done(SNAPSHOT_KEY);
    vi.advanceTimersByTime(5000);
    expect(q.tryGet("snapshot")).toBeUndefined();
  });

  it("lets a new change cut short a long retry backoff of the snapshot key", () => {
    const q = new WorkQueue({ snapshotHoldOffMs: 200, baseDelayMs: 10_000 });
    q.addRateLimited(SNAPSHOT_KEY);
    q.add(SNAPSHOT_KEY);
    expect(q.tryGet("snapshot")).toBe(SNAPSHOT_KEY);
    q.done(SNAPSHOT_KEY);
    // The pending retry was covered by that build.
    vi.advanceTimersByTime(20_000);
    expect(q.tryGet("snapshot")).toBeUndefined();
  });

  it("keeps the snapshot key out of the route lane", () => {
    const q = new WorkQueue({ snapshotHoldOffMs: 0 });
    q.add("a/1");
    q.add(SNAPSHOT_KEY);
    expect(drain(q, "route")).toEqual(["a/1"]);
    expect(drain(q, "snapshot")).toEqual([SNAPSHOT_KEY]);
  });

  it("turns a burst of 1,000 route changes into a handful of snapshot builds", async () => {
    const q = new WorkQueue({ snapshotHoldOffMs: 200, snapshotMaxHoldOffMs: 1000 });
    let builds = 0;
    let buildsInFlight = 0;
    const stop = new AbortController();
    // One snapshot worker whose build takes 50 ms.
    const worker = (async () => {
      for (;;) {
        const k = await q.get("snapshot", stop.signal);
        if (k === undefined) return;
        builds++;
        buildsInFlight++;
        expect(buildsInFlight).toBe(1);
        await new Promise((r) => setTimeout(r, 50));
        buildsInFlight--;
        q.done(k);
      }
    })();
    // 1,000 changes over two seconds, each adding its route and the snapshot key.
    for (let i = 0; i < 1000; i++) {
      q.add(`ns/r${i}`);
      q.add(SNAPSHOT_KEY);
      await vi.advanceTimersByTimeAsync(2);
    }
    await vi.advanceTimersByTimeAsync(2000);
    stop.abort();
    await worker;
    expect(drain(q)).toHaveLength(1000);
    // About one per second of churn (the cap), and one after it settles.
    expect(builds).toBeGreaterThanOrEqual(2);
    expect(builds).toBeLessThanOrEqual(4);
  });

  it("wakes a waiting get on add, and an aborted get returns undefined", async () => {
    const q = new WorkQueue();
    const got = q.get("route");
    q.add("a/1");
    await expect(got).resolves.toBe("a/1");
    const stop = new AbortController();
    const waiting = q.get("route", stop.signal);
    stop.abort();
    await expect(waiting).resolves.toBeUndefined();
    // The aborted waiter is gone: a later add goes to a live one.
    const live = q.get("route");
    q.add("a/2");
    await expect(live).resolves.toBe("a/2");
  });

  it("hands nothing out after shutDown and releases waiters", async () => {
    const q = new WorkQueue();
    const waiting = q.get("route");
    q.addAfter("a/1", 10);
    q.shutDown();
    await expect(waiting).resolves.toBeUndefined();
    q.add("a/2");
    vi.advanceTimersByTime(20);
    expect(q.tryGet("route")).toBeUndefined();
  });

  it("reports depth, adds, retries, wait and work time", async () => {
    const registry = new Registry();
    const q = new WorkQueue({ metrics: createQueueMetrics(registry), snapshotHoldOffMs: 0 });
    q.add("a/1");
    q.add("a/2");
    q.add("a/2");
    q.add(SNAPSHOT_KEY);
    const value = async (name: string, lane: string): Promise<number | undefined> => {
      const m = (await registry.getMetricsAsJSON()).find((x) => x.name === name);
      return m?.values.find((v) => v.labels.lane === lane && !("le" in v.labels))?.value;
    };
    expect(await value("edge_operator_queue_depth", "route")).toBe(2);
    expect(await value("edge_operator_queue_adds_total", "route")).toBe(2);
    vi.advanceTimersByTime(30);
    const k = q.tryGet("route");
    vi.advanceTimersByTime(70);
    q.done(k!);
    q.addRateLimited("a/1");
    expect(await value("edge_operator_queue_depth", "route")).toBe(1);
    expect(await value("edge_operator_queue_retries_total", "route")).toBe(1);
    const metrics = await registry.getMetricsAsJSON();
    const sum = (name: string) =>
      metrics
        .find((x) => x.name === name)
        ?.values.find((v) => (v as { metricName?: string }).metricName === `${name}_sum`)?.value;
    expect(sum("edge_operator_queue_wait_seconds")).toBeCloseTo(0.03);
    expect(sum("edge_operator_queue_work_duration_seconds")).toBeCloseTo(0.07);
  });
});

type Op =
  | { op: "add"; key: string }
  | { op: "addAfter"; key: string; ms: number }
  | { op: "addRateLimited"; key: string }
  | { op: "forget"; key: string }
  | { op: "get"; lane: Lane }
  | { op: "done"; pick: number }
  | { op: "advance"; ms: number };

const keyArb = fc.constantFrom("a/1", "a/2", "b/1", SNAPSHOT_KEY);
const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant("add" as const), key: keyArb }),
  fc.record({ op: fc.constant("addAfter" as const), key: keyArb, ms: fc.integer({ min: 0, max: 50 }) }),
  fc.record({ op: fc.constant("addRateLimited" as const), key: keyArb }),
  fc.record({ op: fc.constant("forget" as const), key: keyArb }),
  fc.record({ op: fc.constant("get" as const), lane: fc.constantFrom<Lane>("route", "snapshot") }),
  fc.record({ op: fc.constant("done" as const), pick: fc.nat() }),
  fc.record({ op: fc.constant("advance" as const), ms: fc.integer({ min: 0, max: 60 }) }),
);

describe("WorkQueue laws", () => {
  it("under any interleaving, no key is out twice and every add is followed by a processing of its key", () => {
    fc.assert(
      fc.property(
        fc.array(opArb, { minLength: 1, maxLength: 300, size: "max" }),
        fc.integer({ min: 0, max: 100 }),
        (ops, holdOff) => {
          vi.clearAllTimers();
          const q = new WorkQueue({
            baseDelayMs: 1,
            maxDelayMs: 40,
            qps: 100,
            burst: 3,
            snapshotHoldOffMs: holdOff,
          });
          const out: string[] = [];
          // The step of each key's last add, and of its last hand-out.
          const lastAdd = new Map<string, number>();
          const lastGet = new Map<string, number>();
          let step = 0;
          const get = (lane: Lane): void => {
            const k = q.tryGet(lane);
            if (k === undefined) return;
            expect(out).not.toContain(k);
            expect(q.laneOf(k)).toBe(lane);
            out.push(k);
            lastGet.set(k, ++step);
          };
          for (const o of ops) {
            step++;
            switch (o.op) {
              case "add":
                q.add(o.key);
                lastAdd.set(o.key, step);
                break;
              case "addAfter":
                q.addAfter(o.key, o.ms);
                lastAdd.set(o.key, step);
                break;
              case "addRateLimited":
                q.addRateLimited(o.key);
                lastAdd.set(o.key, step);
                break;
              case "forget":
                q.forget(o.key);
                break;
              case "get":
                get(o.lane);
                break;
              case "done":
                if (out.length > 0) q.done(out.splice(o.pick % out.length, 1)[0]!);
                break;
              case "advance":
                vi.advanceTimersByTime(o.ms);
                break;
            }
          }
          // Finish what is out, then run the queue dry.
          for (const k of out.splice(0)) q.done(k);
          for (let round = 0; round < 1000 && !q.isIdle(); round++) {
            get("route");
            get("snapshot");
            for (const k of out.splice(0)) q.done(k);
            vi.advanceTimersByTime(50);
          }
          expect(q.isIdle()).toBe(true);
          for (const [k, added] of lastAdd) expect(lastGet.get(k) ?? -1).toBeGreaterThan(added);
        },
      ),
      { numRuns: 300 },
    );
  });
});
