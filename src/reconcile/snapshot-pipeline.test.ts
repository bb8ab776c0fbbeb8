// The process's one snapshot pipeline: a build whose inputs have not moved is
// not made again (the serve loop's and the snapshot reconcile's are one), a
// burst of changes makes one build, and while admission is busy the serve
// loop's builds space out to the busy interval.

import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import type { EdgeRouteV2 } from "../api/types.js";
import type { DataPlane } from "../dataplane/dataplane.js";
import { MemoryDataPlane } from "../dataplane/memory.js";
import { silentLogger } from "../observability/logger.js";
import type { ClusterCache } from "./cluster-cache.js";
import { createReconcileMetrics } from "./reconcile-metrics.js";
import { SnapshotPipeline, liveInputs } from "./snapshot-pipeline.js";
import type { Snapshot } from "../translate/snapshot.js";

/** A cache of `routes` whose inputs move when told to. */
function fakeState(routes: EdgeRouteV2[] = []): { state: ClusterCache; change: () => void } {
  const listeners = new Set<() => void>();
  let stamp = 0;
  const state = {
    synced: () => true,
    revision: () => undefined,
    routes: () => routes,
    endpoints: () => new Map(),
    secrets: () => new Map(),
    inputs: () => stamp,
    onChange: (l: () => void) => {
      listeners.add(l);
      return () => listeners.delete(l);
    },
  } as unknown as ClusterCache;
  return {
    state,
    change: () => {
      stamp++;
      listeners.forEach((l) => l());
    },
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function counted() {
  const registry = new Registry();
  const metrics = createReconcileMetrics(registry);
  const builds = async (changed: "true" | "false") =>
    (await metrics.builds.get()).values.find((v) => v.labels.changed === changed)?.value ?? 0;
  return { metrics, builds };
}

async function buildTimes(busy: boolean, holds: number[] = []): Promise<number[]> {
  const { state, change } = fakeState();
  const plane: DataPlane = new MemoryDataPlane();
  const times: number[] = [];
  const { metrics } = counted();
  const pipeline = new SnapshotPipeline({
    metrics: {
      ...metrics,
      buildSeconds: { observe: () => times.push(Date.now()) } as never,
      holdSeconds: { observe: (s: number) => holds.push(s * 1000) } as never,
    },
  });
  const stop = pipeline.serve(state, plane, {
    log: silentLogger(),
    minIntervalMs: 20,
    busy: () => busy,
    busyIntervalMs: 300,
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

const route = (name: string): EdgeRouteV2 =>
  ({
    apiVersion: "net.10xdev.io/v2",
    kind: "EdgeRoute",
    metadata: { name, namespace: "shop", creationTimestamp: "2026-01-01T00:00:00Z" },
    spec: {
      hostnames: ["shop.example.com"],
      rules: [
        {
          matches: [{ path: { type: "PathPrefix", value: `/${name}` } }],
          backends: [{ name: "checkout", port: 80 }],
        },
      ],
    },
  }) as EdgeRouteV2;

describe("SnapshotPipeline", () => {
  it("builds once per change of its inputs: the serve loop's build is the snapshot reconcile's", async () => {
    const { state, change } = fakeState([route("a")]);
    const { metrics, builds } = counted();
    const pipeline = new SnapshotPipeline({ metrics });
    const plane = new MemoryDataPlane();
    const stop = pipeline.serve(state, plane, { log: silentLogger(), minIntervalMs: 0 });
    await sleep(20);
    expect(plane.state().pushes).toBe(1);
    // The reconcile reads the same inputs: the same snapshot, not a second build.
    const served = plane.state().version;
    expect(pipeline.snapshot(liveInputs(state)).version).toBe(served);
    expect(await builds("true")).toBe(1);
    // Inputs moved (a change a build could see): one more build; unchanged content says so.
    change();
    await sleep(20);
    expect(pipeline.snapshot(liveInputs(state)).version).toBe(served);
    expect([await builds("true"), await builds("false")]).toEqual([1, 1]);
    // Without a stamp (read straight from the apiserver) nothing is reused.
    pipeline.snapshot({ live: [route("a")], endpoints: new Map() });
    expect(await builds("false")).toBe(2);
    stop();
  });

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

  it("holds a change no longer than the spacing in force before the build that takes it starts", async () => {
    const holds: number[] = [];
    const builds = await buildTimes(true, holds);
    // One hold per build after the first list: the oldest change each build took.
    expect(holds.length).toBe(builds.length);
    // Changes every 10 ms: after each build the next change waits out most of the 300 ms spacing,
    // and none longer than the spacing plus a late timer.
    expect(Math.max(...holds)).toBeGreaterThanOrEqual(250);
    for (const h of holds) expect(h).toBeLessThanOrEqual(300 + 100);
  });
});

describe("the culprit search's trials", () => {
  const services = new Map([
    ["shop/app", { ports: [{ port: 80, addresses: [{ ip: "10.0.0.1", port: 8080 }] }] }],
  ]);
  function route(name: string, programmed = false): EdgeRouteV2 {
    return {
      apiVersion: "net.10xdev.io/v2",
      kind: "EdgeRoute",
      metadata: {
        namespace: "shop",
        name,
        uid: name,
        generation: 1,
        creationTimestamp: "2026-01-01T00:00:00Z",
      },
      spec: {
        hostnames: ["shop.example.com"],
        rules: [{ matches: [{ path: { value: `/${name}` } }], backends: [{ name: "app", port: 80 }] }],
      },
      ...(programmed
        ? {
            status: {
              conditions: [
                {
                  type: "Programmed",
                  status: "True" as const,
                  reason: "Synced",
                  message: "",
                  observedGeneration: 1,
                  lastTransitionTime: "2026-01-01T00:00:01Z",
                },
              ],
            },
          }
        : {}),
    };
  }
  const entries = (s: Snapshot) =>
    (s.resources.routeConfigurations[0]?.virtual_hosts ?? []).flatMap((vh) =>
      (vh.routes ?? []).map((r) => r.name),
    );

  /** A data plane whose one client refuses any snapshot holding `bad`'s entry; it records every trial. */
  function refusing(bad: string) {
    let served: Snapshot | undefined;
    const trials: string[][] = [];
    const refuses = (s: Snapshot) => entries(s).some((e) => e.startsWith(`shop/${bad}/`));
    const plane: DataPlane = {
      kind: "fake",
      program: (snapshot, opts) => {
        served = snapshot;
        if (opts?.local) trials.push(entries(snapshot));
        return Promise.resolve(
          refuses(snapshot)
            ? { ok: false, version: snapshot.version, reason: "Rejected", message: "no", detail: "no" }
            : { ok: true, version: snapshot.version, pushed: true },
        );
      },
      current: () => Promise.resolve(served?.version),
      refusal: (version) =>
        served?.version === version && refuses(served) ? "a route this client refuses" : undefined,
    };
    return { plane, trials };
  }

  for (const restarted of [false, true])
    it(`never leave out a route the clients took${restarted ? " (after a restart: what the statuses say was Programmed)" : ""}, and find the one refused`, async () => {
      const routes: EdgeRouteV2[] = [route("a", restarted), route("b", restarted)];
      const { state, change } = fakeState(routes);
      (state as { endpoints: () => unknown }).endpoints = () => services;
      const { plane, trials } = refusing("poison");
      const pipeline = new SnapshotPipeline();
      const stop = pipeline.serve(state, plane, { log: silentLogger(), minIntervalMs: 1 });
      try {
        if (!restarted) await sleep(30);
        // Three new routes, one of them refused: found by halving (the words name nothing of its spec).
        routes.push(route("c"), route("poison"), route("d"));
        change();
        for (
          let i = 0;
          i < 100 &&
          !pipeline.snapshot(liveInputs(state)).outcomes.some((o) => o.key === "shop/poison" && !o.accepted);
          i++
        )
          await sleep(10);
        const outcome = pipeline.snapshot(liveInputs(state)).outcomes.find((o) => o.key === "shop/poison");
        expect(outcome).toMatchObject({ accepted: false, reason: "Rejected" });
        expect(trials.length).toBeGreaterThan(1);
        for (const t of trials) expect(t).toEqual(expect.arrayContaining(["shop/a/r0/m0", "shop/b/r0/m0"]));
      } finally {
        stop();
      }
    });
});
