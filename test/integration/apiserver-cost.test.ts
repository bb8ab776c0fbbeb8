// Watch-fed cluster state (docs/architecture.md): the apiserver's work per route change does not grow with the
// cluster. The operator (server + watcher, processes) runs against the real
// apiserver; the apiserver's own /metrics count the requests and response
// bytes on routes, Services and EndpointSlices per change, at 200 routes and
// at 2,000. Reading every route, Service and EndpointSlice per snapshot (a
// LIST of each) makes both grow with the routes; a watch-fed cache does not.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { KubeClient } from "../../src/kube/client.js";
import { startControlPlane } from "../harness/control-plane.js";
import type { ControlPlane } from "../../tools/testenv/control-plane.js";
import { startOperatorStack, type OperatorStack } from "../harness/operator-stack.js";
import { costPerChange, createCostRoutes, settle, type ApiserverCost } from "../harness/apiserver-cost.js";

const NS = "cost";
const SMALL = 200;
const LARGE = 2_000;
const CHANGES = 20;

let cp: ControlPlane;
let stack: OperatorStack;
let kube: KubeClient;

beforeAll(async () => {
  cp = await startControlPlane();
  // No resync during the measurement: it would enqueue every route.
  stack = await startOperatorStack(cp, { watchArgs: ["--resync", "0"] });
  kube = cp.kube();
}, 120_000);

afterAll(async () => {
  await stack?.stop();
  await cp?.stop();
});

describe("apiserver work per route change", () => {
  it(`stays flat from ${SMALL} to ${LARGE} routes: no LIST, requests and bytes within 1.5x`, async () => {
    await createCostRoutes(kube, NS, 0, SMALL);
    await settle(cp, stack, NS, SMALL);
    const small: ApiserverCost = await costPerChange(cp, stack, kube, NS, SMALL, CHANGES, 1);

    await createCostRoutes(kube, NS, SMALL, LARGE);
    await settle(cp, stack, NS, LARGE);
    const large: ApiserverCost = await costPerChange(cp, stack, kube, NS, LARGE, CHANGES, 2);

    const figures = JSON.stringify({ small, large });
    // The figures, for BENCHMARKS.md (bench/cache-cost.bench.ts measures the same way).
    console.log(`apiserver work per route change: ${figures}`);
    // The cache is fed by watches: a route change lists nothing.
    expect(large.lists, figures).toBe(0);
    expect(small.lists, figures).toBe(0);
    // The change itself and its status write, a few more at most: never per route.
    expect(large.requests, figures).toBeLessThanOrEqual(small.requests * 1.5);
    expect(large.bytes, figures).toBeLessThanOrEqual(small.bytes * 1.5);
    expect(large.requests, figures).toBeLessThan(10);
  }, 900_000);
});
