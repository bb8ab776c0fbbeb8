// The chart's Grafana dashboard: valid for Grafana's dashboard model (a
// schema version, a datasource variable that every panel and query uses, no
// datasource UID of anyone's Grafana written in), the panels a person looks
// for, and every metric a panel names registered by the server or the
// watcher, so that no panel stays empty for a misspelt or renamed metric.
// (test/integration/monitoring.test.ts runs the queries on a real Prometheus.)

import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { Registry } from "prom-client";
import { createXdsMetrics } from "../../src/dataplane/xds/xds-metrics.js";
import { kubeClientMetrics } from "../../src/kube/client-metrics.js";
import { createRegistry, createServerMetrics } from "../../src/observability/metrics.js";
import { cacheMetrics } from "../../src/reconcile/cluster-cache.js";
import { createReconcileMetrics } from "../../src/reconcile/reconcile-metrics.js";
import { createQueueMetrics } from "../../src/watcher/queue-metrics.js";
import { watcherMetrics } from "../../src/watcher/watcher.js";
import { DASHBOARD_FILE, dashboardQueries, metricNames, readDashboard } from "../harness/dashboard.js";

/** The names a scrape shows for each registered metric (a histogram's _bucket, _sum and _count). */
async function exported(registry: Registry): Promise<Set<string>> {
  const names = new Set<string>();
  for (const m of await registry.getMetricsAsJSON()) {
    names.add(m.name);
    if (String(m.type) === "histogram") for (const s of ["_bucket", "_sum", "_count"]) names.add(m.name + s);
  }
  return names;
}

/** What `serve --dataplane xds` registers, and what `watch` does: the two processes' registries. */
function registries(): { server: Registry; watcher: Registry } {
  const server = createServerMetrics(createRegistry()).registry;
  createReconcileMetrics(server);
  cacheMetrics(server);
  kubeClientMetrics(server);
  createXdsMetrics(server, { clients: () => [], heldVersions: () => [], served: () => undefined });
  const watcher = createRegistry();
  createQueueMetrics(watcher);
  watcherMetrics(watcher);
  kubeClientMetrics(watcher);
  return { server, watcher };
}

describe("the Grafana dashboard", () => {
  const dashboard = readDashboard();

  it("is Grafana's dashboard model: schema version, a datasource variable, no datasource UID written in", () => {
    expect(dashboard.schemaVersion).toBeGreaterThanOrEqual(36);
    expect(dashboard.uid).toMatch(/^[a-zA-Z0-9_-]{1,40}$/);
    const ds = dashboard.templating.list.find((v) => v.name === "datasource");
    expect(ds).toMatchObject({ type: "datasource", query: "prometheus" });
    // Every datasource reference, anywhere in the file, is the variable.
    const text = readFileSync(DASHBOARD_FILE, "utf8");
    const uids = [...text.matchAll(/"uid":\s*"([^"]*)"/g)].map((m) => m[1]);
    expect(new Set(uids.filter((u) => u !== dashboard.uid))).toEqual(new Set(["${datasource}"]));
    for (const p of dashboard.panels.filter((p) => p.type !== "row")) {
      expect(p.datasource, p.title).toEqual({ type: "prometheus", uid: "${datasource}" });
      for (const t of p.targets ?? []) expect(t.datasource, `${p.title} ${t.refId}`).toEqual(p.datasource);
    }
  });

  it("lays out panels with unique ids on Grafana's 24-column grid", () => {
    const ids = dashboard.panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const { title, gridPos } of dashboard.panels) {
      expect(gridPos.x + gridPos.w, title).toBeLessThanOrEqual(24);
      expect(gridPos.h, title).toBeGreaterThan(0);
    }
  });

  it("shows what a person asks first: admission, reconcile, routes, the data plane, apiserver calls", () => {
    const titles = dashboard.panels.map((p) => p.title);
    for (const t of [
      "Admission latency (p99)",
      "Admission errors",
      "Reconciles by kind and result",
      "Reconcile failures",
      "Routes by condition",
      "xDS clients",
      "Client versions",
      "ACKs and NACKs",
      "Push latency (p99)",
      "Bytes sent",
      "Requests by verb, resource and code",
      "Request latency (p99)",
      "Retries and throttling",
    ])
      expect(titles).toContain(t);
  });

  it("names only metrics that the server or the watcher registers", async () => {
    const { server, watcher } = registries();
    const known = new Set([...(await exported(server)), ...(await exported(watcher))]);
    const queries = dashboardQueries(dashboard);
    expect(queries.length).toBeGreaterThan(20);
    const missing = queries.flatMap((q) =>
      metricNames(q.expr)
        .filter((n) => !known.has(n))
        .map((n) => `${q.panel} ${q.refId}: ${n}`),
    );
    expect(missing).toEqual([]);
  });

  it("selects by the job variable in every query, so that other jobs' process_* series stay out", () => {
    for (const q of dashboardQueries(dashboard)) {
      const selectors = q.expr.match(/\b[a-z][a-z0-9_]*\{[^}]*\}/g) ?? [];
      expect(selectors.length, q.panel).toBeGreaterThan(0);
      for (const s of selectors) expect(s, q.panel).toContain('job=~"$job"');
    }
  });
});

describe("the process metrics", () => {
  it("are the standard names, and none is a gauge named _total", async () => {
    const names = await exported(createRegistry());
    expect(names).toContain("process_cpu_seconds_total");
    expect(names).toContain("nodejs_heap_size_used_bytes");
    expect(names).toContain("nodejs_active_handles");
    expect([...names].filter((n) => n.startsWith("edge_operator_process_"))).toEqual([]);
    const gauges = (await createRegistry().getMetricsAsJSON()).filter((m) => String(m.type) === "gauge");
    expect(gauges.filter((g) => g.name.endsWith("_total")).map((g) => g.name)).toEqual([]);
  });
});
