import { describe, expect, it } from "vitest";
import { snapshotCase } from "../../test/golden/snapshot-cases.js";
import { MemoryDataPlane } from "./memory.js";

describe("memory data plane", () => {
  it("counts pushes of new versions only, and fails when told to", async () => {
    const plane = new MemoryDataPlane();
    const a = snapshotCase("single-route");
    const b = snapshotCase("weighted-canary");
    expect(await plane.current()).toBeUndefined();
    expect(await plane.program(a)).toEqual({ ok: true, version: a.version, pushed: true });
    expect(await plane.program(a)).toEqual({ ok: true, version: a.version, pushed: false });
    plane.failNext(2);
    expect(await plane.program(b)).toMatchObject({ ok: false, reason: "PushFailed" });
    expect(await plane.program(b)).toMatchObject({ ok: false, reason: "PushFailed" });
    expect(await plane.current()).toBe(a.version);
    expect(await plane.program(b)).toEqual({ ok: true, version: b.version, pushed: true });
    expect(plane.state()).toEqual({
      pushes: 2,
      failures: 2,
      failNext: 0,
      version: b.version,
      routes: ["shop/checkout"],
      endpoints: { "shop/checkout-canary:80": ["10.0.1.1:8080"], "shop/checkout:80": ["10.0.0.1:8080"] },
    });
    expect(() => plane.failNext(-1)).toThrow(RangeError);
  });
});
