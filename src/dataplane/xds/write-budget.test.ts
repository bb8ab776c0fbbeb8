// The write budget: bytes in flight stay within it (one write always goes),
// each stream keeps its order, and a stream that ends or stalls gives its
// share back.

import { describe, expect, it, vi } from "vitest";
import type { ResponseChunks } from "./response-chunks.js";
import { WriteBudget } from "./write-budget.js";

const msg = (size: number, tag: string): ResponseChunks => ({ chunks: [Buffer.from(tag)], size });

function fakeCall() {
  const written: { tag: string; done: () => void }[] = [];
  return {
    written,
    tags: () => written.map((w) => w.tag),
    write(r: ResponseChunks, done: () => void) {
      written.push({ tag: Buffer.from(r.chunks[0] as Uint8Array).toString(), done });
    },
  };
}

describe("WriteBudget", () => {
  it("holds a large write back until the bytes in flight leave room, in each stream's order", () => {
    const budget = new WriteBudget(100);
    const a = fakeCall();
    const b = fakeCall();
    const wa = budget.writer(a);
    const wb = budget.writer(b);
    wa.write(msg(80, "a1"));
    wb.write(msg(80, "b1"));
    wb.write(msg(10, "b2"));
    // a1 is in flight: b1 does not fit beside it, and b2 waits behind b1.
    expect(a.tags()).toEqual(["a1"]);
    expect(b.tags()).toEqual([]);
    expect(budget.bytesInFlight()).toBe(80);
    a.written[0]?.done();
    expect(b.tags()).toEqual(["b1", "b2"]);
    expect(budget.bytesInFlight()).toBe(90);
  });

  it("one write larger than the budget still goes when nothing else is in flight", () => {
    const budget = new WriteBudget(100);
    const a = fakeCall();
    budget.writer(a).write(msg(500, "big"));
    expect(a.tags()).toEqual(["big"]);
  });

  it("a stream that ends gives back what it had in flight, and what it queued is dropped", () => {
    const budget = new WriteBudget(100);
    const a = fakeCall();
    const b = fakeCall();
    const wa = budget.writer(a);
    wa.write(msg(90, "a1"));
    wa.write(msg(90, "a2"));
    budget.writer(b).write(msg(90, "b1"));
    expect(b.tags()).toEqual([]);
    wa.close();
    expect(b.tags()).toEqual(["b1"]);
    expect(a.tags()).toEqual(["a1"]);
    // A late callback of the ended stream changes nothing.
    a.written[0]?.done();
    expect(budget.bytesInFlight()).toBe(90);
  });

  it("a write that stalls stops counting after stallMs", () => {
    vi.useFakeTimers();
    try {
      const budget = new WriteBudget(100, 1_000);
      const a = fakeCall();
      const b = fakeCall();
      budget.writer(a).write(msg(90, "stuck"));
      budget.writer(b).write(msg(90, "next"));
      expect(b.tags()).toEqual([]);
      vi.advanceTimersByTime(1_001);
      expect(b.tags()).toEqual(["next"]);
      a.written[0]?.done();
      expect(budget.bytesInFlight()).toBe(90);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe("WriteBudget's collection of written frames", () => {
  it("asks for one collection per collectEveryBytes written, counted when a write completes", () => {
    const collect = vi.fn();
    const budget = new WriteBudget(1_000, 5_000, collect, 100);
    const a = fakeCall();
    const w = budget.writer(a);
    w.write(msg(60, "a1"));
    w.write(msg(60, "a2"));
    expect(collect).not.toHaveBeenCalled();
    a.written[0]?.done();
    expect(collect).not.toHaveBeenCalled();
    a.written[1]?.done();
    expect(collect).toHaveBeenCalledTimes(1);
    // The count starts again from nothing: 60 more bytes are not another 100.
    w.write(msg(60, "a3"));
    a.written[2]?.done();
    expect(collect).toHaveBeenCalledTimes(1);
  });

  it("a write dropped when its stream ends is not counted as written", () => {
    const collect = vi.fn();
    const budget = new WriteBudget(1_000, 5_000, collect, 100);
    const a = fakeCall();
    const w = budget.writer(a);
    w.write(msg(150, "a1"));
    w.close();
    expect(collect).not.toHaveBeenCalled();
  });
});
