// The xds sink's own loop: changes in a burst make one build, and while
// admission is busy the builds space out to the busy interval.

import { describe, expect, it } from "vitest";
import type { DataPlane } from "../dataplane/dataplane.js";
import { MemoryDataPlane } from "../dataplane/memory.js";
import { silentLogger } from "../observability/logger.js";
import type { ClusterState } from "./cluster-state.js";
import { serveOnChange } from "./serve-on-change.js";

/** A cache with no routes that says "changed" when told to. */
function fakeState(): { state: ClusterState; change: () => void } {
  const listeners = new Set<() => void>();
  const state = {
    synced: () => true,
    revision: () => undefined,
    routes: () => [],
    endpoints: () => new Map(),
    onChange: (l: () => void) => {
      listeners.add(l);
      return () => listeners.delete(l);
    },
  } as unknown as ClusterState;
  return { state, change: () => listeners.forEach((l) => l()) };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function buildTimes(busy: boolean): Promise<number[]> {
  const { state, change } = fakeState();
  const plane: DataPlane = new MemoryDataPlane();
  const times: number[] = [];
  const stop = serveOnChange(state, plane, {
    log: silentLogger(),
    minIntervalMs: 20,
    busy: () => busy,
    busyIntervalMs: 300,
    onBuilt: () => times.push(Date.now()),
  });
  // A change every 10 ms for 700 ms.
  for (let i = 0; i < 70; i++) {
    change();
    await sleep(10);
  }
  await sleep(50);
  stop();
  return times;
}

describe("serveOnChange", () => {
  it("coalesces a burst of changes into builds at most one interval apart, and a longer one while admission is busy", async () => {
    const quiet = await buildTimes(false);
    const busy = await buildTimes(true);
    // Quiet: a build about every 20 ms (timers are late on a busy machine, never early).
    expect(quiet.length).toBeGreaterThan(5);
    expect(quiet.length).toBeLessThanOrEqual(40);
    // Busy: the first at once, then at most one per 300 ms over 750 ms.
    expect(busy.length).toBeGreaterThanOrEqual(2);
    expect(busy.length).toBeLessThanOrEqual(4);
    for (let i = 1; i < busy.length; i++)
      expect((busy[i] ?? 0) - (busy[i - 1] ?? 0)).toBeGreaterThanOrEqual(295);
  });
});
