// What one create and one delete cost the control plane, counted, not timed:
// `/reconcile` calls the watcher makes (by lane) and snapshot builds the
// server makes (and how many of them changed the snapshot). The real pieces:
// the test control plane, `serve --dataplane xds` and the watcher as
// processes, and @grpc/grpc-js-xds's own client (a child process) subscribed
// to the routes' host, whose ACKs decide Programmed and the finalizer.
// Sequential: each create waits for Programmed=True, each delete for the
// object to be gone, then for the counters to stay still for QUIET_MS, so
// what a step set off is all counted in that step.
//
// `npm run bench:pipeline [-- STEPS]` (default 10 creates, then 10 deletes).

import os from "node:os";
import type { EdgeRouteV2 } from "../src/api/types.js";
import type { KubeClient } from "../src/kube/client.js";
import { isNotFound } from "../src/kube/errors.js";
import { edgeRoutePath } from "../src/kube/paths.js";
import { startControlPlane } from "../tools/testenv/control-plane.js";
import { httpsJson } from "../tools/testenv/https-json.js";
import { freePort, sleep } from "../tools/testenv/process.js";
import { startOperatorStack } from "../test/harness/operator-stack.js";
import { ECHO_METHOD, startEchoBackend } from "../test/xds/echo-backend.js";
import { startNodeXdsClient } from "../test/xds/node-xds-client.js";
import { v2Route } from "../test/integration/routes.js";
import { counterSeries, type Counts } from "./metrics-text.js";

const STEPS = Number(process.argv[2] ?? 10);
const NS = "default";
const HOST = "count.example.com";
const PORT = 50051;
const BLUE_IP = "192.0.2.1";
/** Counters unchanged this long: whatever the step set off has run. Longer than the watcher's max hold-off (1 s). */
const QUIET_MS = 2_500;
const STEP_BOUND_MS = 30_000;

async function scrape(url: string, names: readonly string[]): Promise<Counts> {
  const res = await fetch(url);
  return counterSeries(await res.text(), names);
}

function delta(after: Counts, before: Counts): Counts {
  const out: Counts = {};
  for (const [k, v] of Object.entries(after)) if (v - (before[k] ?? 0) !== 0) out[k] = v - (before[k] ?? 0);
  return out;
}

async function main(): Promise<void> {
  const load = os.loadavg().map((l) => l.toFixed(2));
  console.log(
    `# bench:pipeline: ${STEPS} creates then ${STEPS} deletes; ${os.cpus().length} CPUs, load ${load.join(" ")}`,
  );
  const cp = await startControlPlane();
  const kube: KubeClient = cp.kube();
  const adsPort = await freePort();
  const watchMetrics = await freePort();
  const blue = await startEchoBackend("blue-1");
  const stack = await startOperatorStack(cp, {
    serveArgs: ["--dataplane", "xds", "--xds-listen", `127.0.0.1:${adsPort}`, "--xds-plaintext"],
    watchArgs: ["--metrics-listen", `127.0.0.1:${watchMetrics}`],
    storageVersion: "v2",
  });
  const client = await startNodeXdsClient({ adsPort, nodeId: "counter", dialMap: `${BLUE_IP}=127.0.0.1` });
  const serveUrl = `${stack.serve.url}/metrics`;
  const read = async (): Promise<Counts> => ({
    ...(await scrape(`http://127.0.0.1:${watchMetrics}/metrics`, [
      "edge_operator_watcher_reconcile_calls_total",
    ])),
    ...(await scrapeServe(serveUrl, stack.serve.caPem)),
  });
  const quiet = async (): Promise<Counts> => {
    let last = await read();
    let still = performance.now();
    const bound = performance.now() + STEP_BOUND_MS;
    while (performance.now() - still < QUIET_MS && performance.now() < bound) {
      await sleep(250);
      const now = await read();
      if (JSON.stringify(now) !== JSON.stringify(last)) {
        last = now;
        still = performance.now();
      }
    }
    return last;
  };
  const routeNow = async (name: string): Promise<EdgeRouteV2 | undefined> => {
    try {
      return await kube.json<EdgeRouteV2>("GET", edgeRoutePath(NS, name));
    } catch (e) {
      if (isNotFound(e)) return undefined;
      throw e;
    }
  };
  const until = async (what: string, ok: () => Promise<boolean>): Promise<void> => {
    const bound = performance.now() + STEP_BOUND_MS;
    while (!(await ok())) {
      if (performance.now() > bound) throw new Error(`${what}: not within ${STEP_BOUND_MS} ms`);
      await sleep(25);
    }
  };
  try {
    await kube.json("POST", `/api/v1/namespaces/${NS}/services`, {
      body: {
        apiVersion: "v1",
        kind: "Service",
        metadata: { name: "blue", namespace: NS },
        spec: { ports: [{ name: "grpc", port: PORT, targetPort: blue.port, protocol: "TCP" }] },
      },
    });
    await kube.json("POST", `/apis/discovery.k8s.io/v1/namespaces/${NS}/endpointslices`, {
      body: {
        apiVersion: "discovery.k8s.io/v1",
        kind: "EndpointSlice",
        metadata: { name: "blue-1", namespace: NS, labels: { "kubernetes.io/service-name": "blue" } },
        addressType: "IPv4",
        ports: [{ name: "grpc", port: blue.port, protocol: "TCP" }],
        endpoints: [{ addresses: [BLUE_IP], conditions: { ready: true } }],
      },
    });
    // The client's channel to the host: a first route it can call, kept for the whole run.
    await kube.json("POST", `/apis/net.10xdev.io/v2/namespaces/${NS}/edgeroutes`, {
      body: route("base", "/echo.Echo"),
    });
    await until("the client reaching blue-1", async () => {
      const r = await client.call({ host: HOST, method: ECHO_METHOD, timeoutMs: 2_000 });
      return r.ok;
    });
    await until("base Programmed", async () => programmed(await routeNow("base")));
    const rows: { step: string; counts: Counts }[] = [];
    let before = await quiet();
    for (let i = 0; i < STEPS; i++) {
      const name = `r-${i}`;
      await kube.json("POST", `/apis/net.10xdev.io/v2/namespaces/${NS}/edgeroutes`, {
        body: route(name, `/p${i}.P`),
      });
      await until(`${name} Programmed`, async () => programmed(await routeNow(name)));
      const after = await quiet();
      rows.push({ step: "create", counts: delta(after, before) });
      before = after;
    }
    for (let i = 0; i < STEPS; i++) {
      const name = `r-${i}`;
      await kube.json("DELETE", edgeRoutePath(NS, name));
      await until(`${name} gone`, async () => (await routeNow(name)) === undefined);
      const after = await quiet();
      rows.push({ step: "delete", counts: delta(after, before) });
      before = after;
    }
    for (const step of ["create", "delete"]) {
      const mine = rows.filter((r) => r.step === step);
      const keys = [...new Set(mine.flatMap((r) => Object.keys(r.counts)))].sort();
      console.log(`\n${step} (${mine.length} steps): per step, min / mean / max`);
      for (const k of keys) {
        const v = mine.map((r) => r.counts[k] ?? 0);
        const mean = v.reduce((a, b) => a + b, 0) / v.length;
        console.log(`  ${k}: ${Math.min(...v)} / ${mean.toFixed(2)} / ${Math.max(...v)}`);
      }
    }
    console.log(
      `\nload after: ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(" ")}`,
    );
  } finally {
    await client.stop();
    await stack.stop();
    blue.stop();
    await cp.stop();
  }
}

const route = (name: string, prefix: string) =>
  v2Route(name, { host: HOST, path: prefix, service: "blue", port: PORT, namespace: NS });

function programmed(r: EdgeRouteV2 | undefined): boolean {
  return (r?.status?.conditions ?? []).some((c) => c.type === "Programmed" && c.status === "True");
}

/** The server's /metrics is HTTPS with the test CA: /reconcile requests and snapshot builds. */
async function scrapeServe(url: string, caPem: string): Promise<Counts> {
  const res = await httpsJson(url, caPem, "GET");
  const text = typeof res.body === "string" ? res.body : "";
  const c = counterSeries(text, [
    "edge_operator_http_request_duration_seconds_count",
    "edge_operator_snapshot_builds_total",
  ]);
  const out: Counts = {};
  for (const [k, v] of Object.entries(c))
    if (!k.startsWith("edge_operator_http") || k.includes('route="/reconcile"')) out[k] = v;
  return out;
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
