// The routes gauge counts what the last snapshot reconcile read, when scraped.

import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import type { EdgeRouteV2 } from "../api/types.js";
import { createReconcileMetrics, tallyRoutes } from "./reconcile-metrics.js";

const route = (generation: number, status?: EdgeRouteV2["status"]): EdgeRouteV2 => ({
  apiVersion: "net.10xdev.io/v2",
  kind: "EdgeRoute",
  metadata: { namespace: "shop", name: `r${generation}`, generation },
  spec: { rules: [] },
  ...(status ? { status } : {}),
});
const cond = (type: string, status: "True" | "False") => ({
  type,
  status,
  reason: "x",
  message: "x",
  lastTransitionTime: "2026-01-01T00:00:00Z",
});

const read = [
  route(1, { observedGeneration: 1, conditions: [cond("Accepted", "True"), cond("Programmed", "True")] }),
  route(2, { observedGeneration: 1, conditions: [cond("Accepted", "True"), cond("Programmed", "False")] }),
  route(1),
];

describe("tallyRoutes", () => {
  it("counts each route once per condition, a missing condition as Unknown, and the generation skew", () => {
    expect(tallyRoutes(read)).toEqual({
      byCondition: {
        Accepted: { True: 2, False: 0, Unknown: 1 },
        Programmed: { True: 1, False: 1, Unknown: 1 },
      },
      skew: 2,
    });
  });

  it("shows on /metrics the routes last read, counted at the scrape", async () => {
    const registry = new Registry();
    const metrics = createReconcileMetrics(registry);
    metrics.observeRoutes(read);
    const text = await registry.metrics();
    expect(text).toContain('edge_operator_routes{condition="Programmed",status="False"} 1');
    expect(text).toContain('edge_operator_routes{condition="Accepted",status="Unknown"} 1');
    expect(text).toContain("edge_operator_generation_skew_routes 2");
    metrics.observeRoutes([read[0] as EdgeRouteV2]);
    const after = await registry.metrics();
    expect(after).not.toContain('status="False"');
    expect(after).toContain("edge_operator_generation_skew_routes 0");
  });
});
