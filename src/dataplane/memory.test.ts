import { describe, expect, it } from "vitest";
import { goldenSnapshot } from "../../test/golden/xds-cases.js";
import { failureDetail } from "./dataplane.js";
import { MEMORY_FAILURE_MESSAGE, MemoryDataPlane } from "./memory.js";
import type { ReadRevision } from "./read-revision.js";

const at = (routes: string): ReadRevision => ({ routes, services: "1", endpointslices: "1" });

describe("memory data plane", () => {
  it("counts pushes of new versions only, and fails when told to, in the same words each time", async () => {
    const plane = new MemoryDataPlane();
    const a = goldenSnapshot("single-route");
    const b = goldenSnapshot("weighted-canary");
    expect(await plane.current()).toBeUndefined();
    expect(await plane.program(a)).toEqual({ ok: true, version: a.version, pushed: true });
    expect(await plane.program(a)).toEqual({ ok: true, version: a.version, pushed: false });
    plane.failNext(2);
    const first = await plane.program(b);
    const second = await plane.program(b);
    expect(first).toMatchObject({ ok: false, reason: "PushFailed", message: MEMORY_FAILURE_MESSAGE });
    expect(second).toMatchObject({ ok: false, reason: "PushFailed", message: MEMORY_FAILURE_MESSAGE });
    // The details differ from push to push; the words routes carry do not.
    expect(failureDetail(first)).toMatch(/fail this push of snapshot/);
    expect(failureDetail(first)).not.toBe(failureDetail(second));
    expect(await plane.current()).toBe(a.version);
    expect(await plane.program(b)).toEqual({ ok: true, version: b.version, pushed: true });
    expect(plane.state()).toEqual({
      pushes: 2,
      failures: 2,
      superseded: 0,
      failNext: 0,
      version: b.version,
      readRevision: undefined,
      routes: ["shop/checkout"],
      endpoints: { "shop/checkout-canary:80": ["10.0.1.1:8080"], "shop/checkout:80": ["10.0.0.1:8080"] },
    });
    expect(() => plane.failNext(-1)).toThrow(RangeError);
  });

  it("never goes back to a snapshot read before the one it holds", async () => {
    const plane = new MemoryDataPlane();
    const a = goldenSnapshot("single-route");
    const b = goldenSnapshot("weighted-canary");
    expect(await plane.program(b, { read: at("20") })).toMatchObject({ ok: true, pushed: true });
    expect(await plane.program(a, { read: at("19") })).toMatchObject({ ok: false, reason: "Superseded" });
    expect(plane.state()).toMatchObject({ version: b.version, superseded: 1 });
    expect(await plane.program(a, { read: at("21") })).toMatchObject({ ok: true, pushed: true });
    expect(plane.state().readRevision).toBe("routes=21,services=1,endpointslices=1");
  });

  it("records a later read of the same version only when asked to fence", async () => {
    const plane = new MemoryDataPlane();
    const a = goldenSnapshot("single-route");
    const b = goldenSnapshot("weighted-canary");
    await plane.program(a, { read: at("10") });
    expect(await plane.program(a, { read: at("15") })).toEqual({
      ok: true,
      version: a.version,
      pushed: false,
    });
    expect(plane.state().readRevision).toBe("routes=10,services=1,endpointslices=1");
    // So a read at 12 could still push; after a fence at 15 it cannot.
    await plane.program(a, { read: at("15"), fence: true });
    expect(plane.state().readRevision).toBe("routes=15,services=1,endpointslices=1");
    expect(await plane.program(b, { read: at("12") })).toMatchObject({ ok: false, reason: "Superseded" });
    expect(plane.state().version).toBe(a.version);
  });

  it("stops when its caller has gone", async () => {
    const plane = new MemoryDataPlane();
    const gone = AbortSignal.abort();
    await expect(plane.program(goldenSnapshot("single-route"), { signal: gone })).rejects.toThrow();
    expect(plane.state().pushes).toBe(0);
  });
});
