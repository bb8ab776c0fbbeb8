// The chart's Grafana dashboard as the tests read it: every panel's queries,
// the metrics they name, and a query with Grafana's variables filled in the
// way Grafana would for "All" jobs.

import { readFileSync } from "node:fs";
import path from "node:path";
import { REPO_ROOT } from "../../tools/testenv/testbin.js";

export const DASHBOARD_FILE = path.join(
  REPO_ROOT,
  "charts/edge-operator/files/dashboards/edge-operator.json",
);

export interface DashboardTarget {
  readonly refId: string;
  readonly expr: string;
  readonly datasource?: { readonly type?: string; readonly uid?: string };
}

export interface DashboardPanel {
  readonly id: number;
  readonly type: string;
  readonly title: string;
  readonly gridPos: { readonly h: number; readonly w: number; readonly x: number; readonly y: number };
  readonly datasource?: { readonly type?: string; readonly uid?: string };
  readonly targets?: readonly DashboardTarget[];
}

export interface Dashboard {
  readonly title: string;
  readonly uid: string;
  readonly schemaVersion: number;
  readonly panels: readonly DashboardPanel[];
  readonly templating: {
    readonly list: readonly { name: string; type: string; query?: unknown; allValue?: string }[];
  };
}

export function readDashboard(file = DASHBOARD_FILE): Dashboard {
  return JSON.parse(readFileSync(file, "utf8")) as Dashboard;
}

/** Every query of every panel, with the panel's title. */
export function dashboardQueries(
  d: Dashboard = readDashboard(),
): { panel: string; refId: string; expr: string }[] {
  return d.panels.flatMap((p) =>
    (p.targets ?? []).map((t) => ({ panel: p.title, refId: t.refId, expr: t.expr })),
  );
}

/** The metric names a PromQL expression reads (ours, and the process's standard ones). */
export function metricNames(expr: string): string[] {
  return [...new Set(expr.match(/\b(?:edge_operator|process|nodejs)_[a-z0-9_]+\b/g) ?? [])];
}

/** `expr` as Grafana sends it with every job selected, `rate` windows of `window`. */
export function renderQuery(expr: string, window = "1m", d: Dashboard = readDashboard()): string {
  const job = d.templating.list.find((v) => v.name === "job")?.allValue ?? ".+";
  return expr.replaceAll("$__rate_interval", window).replaceAll("$job", job);
}
