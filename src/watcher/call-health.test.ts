import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CallHealth } from "./call-health.js";

function clock() {
  let t = 1_000_000;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

describe("CallHealth", () => {
  it("turns unhealthy only after enough calls in a row got no reply, over the whole window", () => {
    const c = clock();
    const h = new CallHealth({ failures: 5, windowMs: 60_000, now: c.now });
    // Many failures fast: not yet, the window has not passed.
    for (let i = 0; i < 20; i++) h.unreachable("connect ECONNREFUSED 127.0.0.1:9443");
    expect(h.health()).toEqual({ healthy: true });
    c.advance(59_999);
    expect(h.health().healthy).toBe(true);
    c.advance(1);
    expect(h.health()).toEqual({
      healthy: false,
      failures: 20,
      forMs: 60_000,
      lastError: "connect ECONNREFUSED 127.0.0.1:9443",
    });
  });

  it("stays healthy past the window with fewer failures than the threshold", () => {
    const c = clock();
    const h = new CallHealth({ failures: 5, windowMs: 1000, now: c.now });
    for (let i = 0; i < 4; i++) {
      h.unreachable("unable to verify the first certificate");
      c.advance(10_000);
    }
    expect(h.health().healthy).toBe(true);
    h.unreachable("unable to verify the first certificate");
    expect(h.health()).toMatchObject({ healthy: false, failures: 5, forMs: 40_000 });
  });

  it("is healthy again after any reply, and after a reset (leadership lost)", () => {
    const c = clock();
    const h = new CallHealth({ failures: 1, windowMs: 1000, now: c.now });
    h.unreachable("socket hang up");
    c.advance(2000);
    expect(h.health().healthy).toBe(false);
    h.replied();
    expect(h.health().healthy).toBe(true);
    h.unreachable("socket hang up");
    c.advance(2000);
    expect(h.health().healthy).toBe(false);
    h.reset();
    expect(h.health().healthy).toBe(true);
  });

  it("over any sequence of calls: unhealthy exactly when the current run is long and old enough", () => {
    type Step = { reply: boolean; afterMs: number };
    const step = fc.record({ reply: fc.boolean(), afterMs: fc.integer({ min: 0, max: 5000 }) });
    fc.assert(
      fc.property(fc.array(step, { maxLength: 60 }), fc.integer({ min: 1, max: 8 }), (steps: Step[], n) => {
        const c = clock();
        const h = new CallHealth({ failures: n, windowMs: 10_000, now: c.now });
        let run = 0;
        let since = 0;
        for (const s of steps) {
          c.advance(s.afterMs);
          if (s.reply) {
            h.replied();
            run = 0;
          } else {
            if (run === 0) since = c.now();
            run++;
            h.unreachable("x");
          }
          const expected = run >= n && c.now() - since >= 10_000;
          expect(h.health().healthy).toBe(!expected);
        }
      }),
    );
  });
});
