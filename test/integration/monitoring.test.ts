// Observability as a user consumes it, on the real apiserver: a real
// Prometheus (Debian's, scripts/prometheus.sh) scrapes a running server
// (`serve --dataplane xds`) and watcher, started as the other integration
// suites start them and reaching the apiserver through a proxy that sheds
// load with 429s for a while; gRPC's own xDS client takes the routes and a
// hand-written client NACKs clusters. Then every query of every panel of the
// chart's Grafana dashboard, sent through Prometheus's HTTP API, returns
// data, and promtool's lint of both /metrics is clean. The chart renders its
// scrape objects and the dashboard ConfigMap only when asked, and the
// apiserver takes what it renders.

import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import type * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAllDocuments, stringify as toYaml } from "yaml";
import { TYPE_URL } from "../../src/envoy/envoy-resources.js";
import { startControlPlane } from "../harness/control-plane.js";
import { dashboardQueries, DASHBOARD_FILE, renderQuery } from "../harness/dashboard.js";
import { kubeconfigVia } from "../harness/fault-checks.js";
import { startFaultProxy, type FaultProxy } from "../harness/fault-proxy.js";
import { startOperatorStack, SYSTEM_NAMESPACE, type OperatorStack } from "../harness/operator-stack.js";
import type { ControlPlane } from "../../tools/testenv/control-plane.js";
import { httpsJson } from "../../tools/testenv/https-json.js";
import { freePort, must, waitFor } from "../../tools/testenv/process.js";
import {
  ensurePrometheus,
  promtoolCheckMetrics,
  startPrometheus,
  type Prometheus,
} from "../../tools/testenv/prometheus.js";
import { REPO_ROOT } from "../../tools/testenv/testbin.js";
import { callEcho } from "../xds/echo-backend.js";
import { useXdsServer, xdsClient } from "../xds/grpc-xds-client.js";
import { adsClient, sotwStream } from "../xds/raw-ads-client.js";
import { apply, waitForConditions } from "./routes.js";

const HOST = "shop.example.com";
const CHART = path.join(REPO_ROOT, "charts/edge-operator");
const FULLNAME = "edge-edge-operator";

let cp: ControlPlane;
let proxy: FaultProxy;
let stack: OperatorStack;
let prometheus: Prometheus;
let promBin: string;
let dir: string;
let watcherMetricsPort: number;
let xds: grpc.Client | undefined;
let raw: grpc.Client | undefined;

const service = {
  apiVersion: "v1",
  kind: "Service",
  metadata: { name: "blue", namespace: "default" },
  spec: { ports: [{ name: "grpc", port: 50051, protocol: "TCP" }] },
};

const route = (name: string, pathValue: string) => ({
  apiVersion: "net.10xdev.io/v2",
  kind: "EdgeRoute",
  metadata: { name, namespace: "default" },
  spec: {
    hostnames: [HOST],
    rules: [
      {
        matches: [{ path: { type: "PathPrefix", value: pathValue } }],
        backends: [{ name: "blue", port: 50051 }],
      },
    ],
  },
});

function httpText(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { timeout: 10_000 }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (text += c));
      res.on("end", () => resolve(text));
    });
    req.on("timeout", () => req.destroy(new Error(`GET ${url}: no answer in 10 s`)));
    req.on("error", reject);
  });
}

const serverMetrics = async (): Promise<string> =>
  String((await httpsJson(`${stack.serve.url}/metrics`, stack.serve.caPem, "GET")).body);
const watcherMetrics = (): Promise<string> => httpText(`http://127.0.0.1:${watcherMetricsPort}/metrics`);

beforeAll(async () => {
  // First: a machine without Prometheus gets it from the project's script, or the suite fails saying why.
  promBin = ensurePrometheus();
  cp = await startControlPlane();
  dir = mkdtempSync(path.join(os.tmpdir(), "edge-monitoring-"));
  const api = new URL(cp.server);
  proxy = await startFaultProxy({ host: api.hostname, port: Number(api.port) }, cp.servingCertFiles);
  const kubeconfig = kubeconfigVia(cp.kubeconfig, proxy.url, path.join(dir, "via-proxy.kubeconfig"));
  const adsPort = await freePort();
  watcherMetricsPort = await freePort();
  stack = await startOperatorStack(cp, {
    kubeconfig,
    serveArgs: [
      "--dataplane",
      "xds",
      "--xds-listen",
      `127.0.0.1:${adsPort}`,
      "--xds-plaintext",
      "--xds-ack-timeout",
      "3s",
    ],
    watchArgs: ["--metrics-listen", `127.0.0.1:${watcherMetricsPort}`],
  });
  const caFile = path.join(dir, "server-ca.crt");
  writeFileSync(caFile, stack.serve.caPem);
  // Scraping from the start, so that every rate has samples on both sides of what happens below.
  prometheus = await startPrometheus(promBin, [
    {
      job_name: "edge-operator-server",
      scheme: "https",
      tls_config: { ca_file: caFile },
      static_configs: [{ targets: [`127.0.0.1:${stack.serve.port}`] }],
    },
    { job_name: "edge-operator-watcher", static_configs: [{ targets: [`127.0.0.1:${watcherMetricsPort}`] }] },
  ]);

  // Admission: two routes through /mutate and /validate.
  await apply(cp, service, route("echo", "/echo.Echo"), route("other", "/other"));

  // A real data plane takes the routes; a hand-written client refuses the clusters it asked for.
  await useXdsServer(adsPort, "monitoring-client");
  xds = xdsClient(HOST);
  await waitFor("the xDS client to route /echo.Echo", async () => {
    const reply = await callEcho(xds as grpc.Client, { deadlineMs: 2_000 });
    return !reply.ok && /empty priority list/.test(reply.details) ? true : undefined;
  });
  await waitForConditions(cp, "echo", "True(Valid)", "True(Synced)", "default", 30_000);
  raw = adsClient(adsPort);
  const refusing = sotwStream(raw);
  refusing.send({ node: { id: "refusing-client", cluster: "edge" }, type_url: TYPE_URL.cluster });
  const cds = (await refusing.next()).message;
  refusing.send({
    type_url: TYPE_URL.cluster,
    response_nonce: cds.nonce,
    error_detail: { code: 3, message: "refused by the monitoring test" },
  });

  // The apiserver sheds load for a while: the clients wait out its 429s and try again.
  await proxy.tooManyRequests(3, 1);
  await apply(cp, route("after-storm", "/after"));
  await waitForConditions(cp, "after-storm", "True(Valid)", "True(Synced)", "default", 60_000);
  expect(proxy.stats.tooManyRequests).toBeGreaterThan(0);

  // A few scrapes of each, after all of that.
  await waitFor(
    "Prometheus to have scraped the server and the watcher at least 10 times each",
    async () => {
      const r = await prometheus.query("count_over_time(up[2m]) >= 10 and up == 1");
      return r.length === 2 ? true : undefined;
    },
    60_000,
    500,
  );
}, 300_000);

afterAll(async () => {
  xds?.close();
  raw?.close();
  await prometheus?.stop();
  await stack?.stop();
  await proxy?.close();
  await cp?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("the dashboard on a real Prometheus", () => {
  it("every query of every panel returns data", async () => {
    const queries = dashboardQueries();
    const empty: string[] = [];
    for (const q of queries) {
      const result = await prometheus.query(renderQuery(q.expr, "1m"));
      if (result.length === 0) empty.push(`${q.panel} (${q.refId}): ${q.expr}`);
    }
    expect(empty).toEqual([]);
    expect(queries.length).toBeGreaterThan(20);
  });

  it("shows what happened: the 429 waits, the NACK, two xDS clients, routes Programmed", async () => {
    const value = async (expr: string): Promise<number> =>
      Number((await prometheus.query(expr))[0]?.value[1] ?? NaN);
    expect(await value('sum(edge_operator_kube_requests_total{code="429"})')).toBeGreaterThan(0);
    expect(await value("sum(edge_operator_kube_throttle_wait_seconds_count)")).toBeGreaterThan(0);
    expect(await value('sum(edge_operator_xds_nacks_total{type="Cluster"})')).toBeGreaterThanOrEqual(1);
    expect(await value("sum(edge_operator_xds_clients)")).toBe(2);
    expect(
      await value('max(edge_operator_routes{condition="Programmed", status="True"})'),
    ).toBeGreaterThanOrEqual(2);
    // No label carries an object's name or namespace.
    const labels = await prometheus.query("edge_operator_kube_requests_total");
    expect(JSON.stringify(labels.map((r) => r.metric))).not.toMatch(/after-storm|"default"|edge-system/);
  });
});

describe("the alerts in docs/operations.md", () => {
  /** The YAML block under "Alerts worth having", as a reader copies it. */
  const alertsBlock = (): string => {
    const doc = readFileSync(path.join(REPO_ROOT, "docs/operations.md"), "utf8");
    return /## Alerts worth having\n+```yaml\n([\s\S]*?)```/.exec(doc)?.[1] ?? "";
  };

  it("pass promtool check rules, and each expression is one Prometheus evaluates", async () => {
    const file = path.join(dir, "alerts.yml");
    writeFileSync(file, alertsBlock());
    const r = spawnSync(path.join(promBin, "promtool"), ["check", "rules", file], {
      encoding: "utf8",
      timeout: 30_000,
    });
    expect(r.stdout + r.stderr).toMatch(/SUCCESS: \d+ rules found/);
    expect(r.status).toBe(0);
    const parsed = parseAllDocuments(alertsBlock())[0]?.toJS() as {
      groups: { rules: { alert: string; expr: string }[] }[];
    };
    const rules = parsed.groups.flatMap((g) => g.rules);
    expect(rules.length).toBeGreaterThan(5);
    // Healthy, none should fire; but each one's query runs on what the operator exports.
    for (const { alert, expr } of rules) await expect(prometheus.query(expr), alert).resolves.toBeDefined();
  });
});

describe("promtool check metrics", () => {
  it("finds nothing in the server's /metrics nor in the watcher's", async () => {
    const server = promtoolCheckMetrics(promBin, await serverMetrics());
    const watcher = promtoolCheckMetrics(promBin, await watcherMetrics());
    process.stderr.write(
      `promtool check metrics: server ${server.findings.length} findings, watcher ${watcher.findings.length}\n`,
    );
    expect(server.findings).toEqual([]);
    expect(watcher.findings).toEqual([]);
    expect(server.clean && watcher.clean).toBe(true);
  });

  it("the process metrics carry their standard names", async () => {
    for (const text of [await serverMetrics(), await watcherMetrics()]) {
      expect(text).toMatch(/^process_cpu_seconds_total /m);
      expect(text).toMatch(/^nodejs_heap_size_used_bytes /m);
      expect(text).not.toContain("edge_operator_process_");
    }
  });
});

describe("the chart's monitoring objects", () => {
  type Doc = { kind?: string; metadata?: { name?: string; namespace?: string }; [k: string]: unknown };
  const render = async (args: string[] = []): Promise<Doc[]> =>
    parseAllDocuments(
      await must(
        "helm template",
        cp.helm(["template", "edge", CHART, "-n", SYSTEM_NAMESPACE, "--kube-version", "1.36.3", ...args]),
      ),
    )
      .map((d) => d.toJS() as Doc | null)
      .filter((d): d is Doc => d !== null);
  const ALL = [
    "--set",
    "monitoring.serviceMonitor.enabled=true",
    "--set",
    "monitoring.podMonitor.enabled=true",
    "--set",
    "envoy.enabled=true",
    "--set",
    "monitoring.grafanaDashboard.enabled=true",
  ];

  it("renders metrics Services always, and ServiceMonitors, the PodMonitor and the dashboard only when asked", async () => {
    const kinds = (docs: Doc[]) => docs.map((d) => `${d.kind}/${d.metadata?.name}`);
    const plain = kinds(await render());
    expect(plain).toContain(`Service/${FULLNAME}-server-metrics`);
    expect(plain).toContain(`Service/${FULLNAME}-watcher-metrics`);
    expect(plain.filter((k) => /^(ServiceMonitor|PodMonitor)\//.test(k))).toEqual([]);
    expect(plain).not.toContain(`ConfigMap/${FULLNAME}-dashboard`);
    const asked = kinds(await render(ALL));
    expect(asked).toEqual(
      expect.arrayContaining([
        `ServiceMonitor/${FULLNAME}-server`,
        `ServiceMonitor/${FULLNAME}-watcher`,
        `PodMonitor/${FULLNAME}-envoy`,
        `ConfigMap/${FULLNAME}-dashboard`,
      ]),
    );
  });

  it("puts the dashboard in a ConfigMap the Grafana sidecar loads, byte for byte, and the apiserver takes it", async () => {
    const docs = await render([
      ...ALL,
      "--set",
      "monitoring.grafanaDashboard.annotations.grafana_folder=Operators",
    ]);
    const cm = docs.find(
      (d) => d.kind === "ConfigMap" && d.metadata?.name === `${FULLNAME}-dashboard`,
    ) as Doc & {
      metadata: { labels: Record<string, string>; annotations: Record<string, string> };
      data: Record<string, string>;
    };
    expect(cm.metadata.labels.grafana_dashboard).toBe("1");
    expect(cm.metadata.annotations.grafana_folder).toBe("Operators");
    expect(JSON.parse(cm.data["edge-operator.json"] ?? "")).toEqual(
      JSON.parse(readFileSync(DASHBOARD_FILE, "utf8")),
    );
    const services = docs.filter(
      (d) => d.kind === "Service" && /-(server|watcher)-metrics$/.test(d.metadata?.name ?? ""),
    );
    expect(services).toHaveLength(2);
    const r = await cp.kubectl(["apply", "--dry-run=server", "-f", "-"], {
      input: [cm, ...services].map((d) => toYaml(d)).join("---\n"),
    });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
  });

  it("scrapes the server over HTTPS with Prometheus's token (metrics.auth) and the operator's CA, the watcher over HTTP", async () => {
    const docs = await render(ALL);
    const monitor = (name: string) =>
      docs.find((d) => d.kind === "ServiceMonitor" && d.metadata?.name === name) as Doc & {
        spec: { selector: { matchLabels: Record<string, string> }; endpoints: Record<string, unknown>[] };
      };
    const server = monitor(`${FULLNAME}-server`);
    expect(server.spec.endpoints[0]).toMatchObject({
      port: "metrics",
      scheme: "https",
      bearerTokenFile: "/var/run/secrets/kubernetes.io/serviceaccount/token",
      tlsConfig: { serverName: `${FULLNAME}.${SYSTEM_NAMESPACE}.svc`, ca: { secret: { key: "ca.crt" } } },
    });
    expect(server.spec.selector.matchLabels["edge-operator.10xdev.io/metrics"]).toBe("server");
    const watcher = monitor(`${FULLNAME}-watcher`);
    expect(watcher.spec.endpoints[0]).toMatchObject({ port: "metrics", scheme: "http" });
    // The selectors pick the metrics Services, not the webhook's.
    const svc = docs.filter(
      (d) =>
        d.kind === "Service" &&
        Object.entries(server.spec.selector.matchLabels).every(
          ([k, v]) => (d.metadata as { labels?: Record<string, string> }).labels?.[k] === v,
        ),
    );
    expect(svc.map((d) => d.metadata?.name)).toEqual([`${FULLNAME}-server-metrics`]);
    const noAuth = await render([...ALL, "--set", "metrics.auth=false"]);
    expect(JSON.stringify(noAuth.filter((d) => d.kind === "ServiceMonitor"))).not.toContain(
      "bearerTokenFile",
    );
  });

  it("lets Prometheus reach Envoy's stats, and nothing else of its admin interface", async () => {
    const docs = await render(ALL);
    const pod = docs.find((d) => d.kind === "PodMonitor") as Doc & {
      spec: { podMetricsEndpoints: Record<string, unknown>[] };
    };
    expect(pod.spec.podMetricsEndpoints).toEqual([
      expect.objectContaining({ port: "stats", path: "/stats/prometheus" }),
    ]);
    const envoy = docs.find(
      (d) => d.kind === "Deployment" && d.metadata?.name === `${FULLNAME}-envoy`,
    ) as Doc & {
      spec: {
        template: {
          metadata: { annotations: Record<string, string> };
          spec: { containers: { ports: { name: string; containerPort: number }[] }[] };
        };
      };
    };
    expect(envoy.spec.template.spec.containers[0]?.ports).toContainEqual({
      name: "stats",
      containerPort: 9902,
      protocol: "TCP",
    });
    expect(envoy.spec.template.metadata.annotations).toMatchObject({
      "prometheus.io/scrape": "true",
      "prometheus.io/port": "9902",
      "prometheus.io/path": "/stats/prometheus",
    });
    const bootstrap = docs.find(
      (d) => d.kind === "ConfigMap" && d.metadata?.name === `${FULLNAME}-envoy-bootstrap`,
    ) as Doc & {
      data: Record<string, string>;
    };
    const text = bootstrap.data["envoy.yaml"] ?? "";
    // One route on the stats listener: GET /stats/prometheus to the admin cluster; admin binds loopback.
    expect(text.match(/route:\s*\n\s*cluster: envoy-admin/g)).toHaveLength(1);
    expect(text).toMatch(/path: \/stats\/prometheus/);
    expect(text).toMatch(/admin:\n\s+address:\n\s+socket_address:\n\s+address: 127\.0\.0\.1/);
  });
});
