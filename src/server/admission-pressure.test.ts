// Admission pressure: calls of the last second, slot by slot, so a burst
// counts as busy while it lasts and stops counting a second after it ends.

import { describe, expect, it } from "vitest";
import { AdmissionPressure } from "./admission-pressure.js";

describe("AdmissionPressure", () => {
  it("counts the calls of the last second and forgets older ones", () => {
    let now = 10_000;
    const p = new AdmissionPressure(5, () => now);
    for (let i = 0; i < 4; i++) p.mark();
    expect(p.perSecond()).toBe(4);
    expect(p.busy()).toBe(false);
    now += 450;
    p.mark();
    expect(p.perSecond()).toBe(5);
    expect(p.busy()).toBe(true);
    // The first four fall out of the window; the fifth, 450 ms later, a little after.
    now += 600;
    expect(p.perSecond()).toBe(1);
    expect(p.busy()).toBe(false);
    now += 500;
    expect(p.perSecond()).toBe(0);
  });

  it("after a long quiet spell starts from nothing", () => {
    let now = 0;
    const p = new AdmissionPressure(1, () => now);
    for (let i = 0; i < 100; i++) p.mark();
    now += 60_000;
    expect(p.perSecond()).toBe(0);
    p.mark();
    expect(p.perSecond()).toBe(1);
  });
});
