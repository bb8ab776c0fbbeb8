// The client's metrics as a scrape shows them: what a call did, by verb,
// resource and code, with retries and 429 waits, and no object name in any label.

import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { Registry } from "prom-client";
import { kubeClient } from "./client.js";
import { callLabels, kubeClientMetrics } from "./client-metrics.js";
import type { ClusterAccess } from "./kubeconfig.js";

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});

/** An apiserver stand-in that answers request n (from 1) with `answer(n)`: a status and its headers. */
async function scripted(answer: (n: number) => [number, http.OutgoingHttpHeaders?]): Promise<ClusterAccess> {
  let n = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    const [code, headers] = answer(++n);
    res
      .writeHead(code, { "content-type": "application/json", ...headers })
      .end(JSON.stringify(code < 300 ? { kind: "Lease" } : { kind: "Status", code, reason: "Scripted" }));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  closers.push(() => new Promise((r) => server.close(() => r())));
  return {
    source: "test",
    server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    tls: { rejectUnauthorized: true },
    credentials: () => Promise.resolve({ headers: {} }),
  };
}

async function sample(registry: Registry, name: string, labels: Record<string, string>): Promise<number> {
  // A histogram's _count and _bucket samples sit under its own name.
  const values = (await registry.getMetricsAsJSON()).flatMap((m) =>
    m.values.map((v) => ({ ...v, name: (v as { metricName?: string }).metricName ?? m.name })),
  );
  const found = values.find(
    (v) => v.name === name && Object.entries(labels).every(([k, want]) => String(v.labels[k]) === want),
  );
  return found?.value ?? 0;
}

describe("callLabels", () => {
  it.each([
    ["GET", "/apis/net.10xdev.io/v2/edgeroutes", false, "list", "edgeroutes", ""],
    ["GET", "/apis/net.10xdev.io/v2/edgeroutes", true, "watch", "edgeroutes", ""],
    ["GET", "/apis/net.10xdev.io/v2/namespaces/shop/edgeroutes/checkout", false, "get", "edgeroutes", ""],
    [
      "PUT",
      "/apis/net.10xdev.io/v2/namespaces/shop/edgeroutes/checkout/status",
      false,
      "update",
      "edgeroutes",
      "status",
    ],
    ["PATCH", "/apis/coordination.k8s.io/v1/namespaces/edge-system/leases/w", false, "patch", "leases", ""],
    ["POST", "/apis/authentication.k8s.io/v1/tokenreviews", false, "create", "tokenreviews", ""],
    ["DELETE", "/api/v1/namespaces/shop/events", false, "deletecollection", "events", ""],
    ["GET", "/api/v1/namespaces/shop", false, "get", "namespaces", ""],
    ["GET", "/api/v1/services", false, "list", "services", ""],
    ["GET", "/version", false, "get", "nonresource", ""],
  ])("%s %s (watch %s) is %s %s/%s", (method, path, watch, verb, resource, subresource) => {
    expect(callLabels(method, path, watch)).toEqual({ verb, resource, subresource });
  });

  it("never puts a namespace or an object's name in a label", () => {
    const l = callLabels("GET", "/apis/net.10xdev.io/v2/namespaces/secret-ns/edgeroutes/secret-name?x=1");
    expect(JSON.stringify(l)).not.toMatch(/secret/);
  });
});

describe("kubeClientMetrics", () => {
  it("counts each attempt by verb, resource and code, the retry, and the 429's wait", async () => {
    const access = await scripted((n) => (n === 1 ? [429, { "retry-after": "0" }] : [200]));
    const registry = new Registry();
    const client = kubeClient(access, {
      metrics: kubeClientMetrics(registry),
      backoff: { baseMs: 1, capMs: 5 },
    });
    await client.json("GET", "/apis/coordination.k8s.io/v1/namespaces/edge-system/leases/watcher");

    const get = { verb: "get", resource: "leases" };
    expect(await sample(registry, "edge_operator_kube_requests_total", { ...get, code: "429" })).toBe(1);
    expect(await sample(registry, "edge_operator_kube_requests_total", { ...get, code: "200" })).toBe(1);
    expect(
      await sample(registry, "edge_operator_kube_request_retries_total", { ...get, reason: "429" }),
    ).toBe(1);
    expect(await sample(registry, "edge_operator_kube_throttle_wait_seconds_count", get)).toBe(1);
    expect(await sample(registry, "edge_operator_kube_request_duration_seconds_count", get)).toBe(2);
    const text = await registry.metrics();
    expect(text).not.toContain("watcher");
    expect(text).not.toContain("edge-system");
  });

  it("a 503 retried is a retry, not a throttling wait; a connection refused is code <error>", async () => {
    const access = await scripted((n) => (n === 1 ? [503] : [200]));
    const registry = new Registry();
    const client = kubeClient(access, {
      metrics: kubeClientMetrics(registry),
      backoff: { baseMs: 1, capMs: 5 },
    });
    await client.json("GET", "/api/v1/services");
    const list = { verb: "list", resource: "services" };
    expect(
      await sample(registry, "edge_operator_kube_request_retries_total", { ...list, reason: "503" }),
    ).toBe(1);
    expect(await sample(registry, "edge_operator_kube_throttle_wait_seconds_count", list)).toBe(0);

    const down = kubeClient(
      { ...access, server: "http://127.0.0.1:1" },
      { metrics: kubeClientMetrics(registry), backoff: { baseMs: 1, capMs: 5 } },
    );
    await expect(down.json("GET", "/api/v1/services", { timeoutMs: 200 })).rejects.toThrow();
    expect(
      await sample(registry, "edge_operator_kube_requests_total", { ...list, code: "<error>" }),
    ).toBeGreaterThan(0);
  });

  it("registers once per registry, however many clients share it", () => {
    const registry = new Registry();
    expect(kubeClientMetrics(registry)).toBe(kubeClientMetrics(registry));
    expect(registry.getMetricsAsArray()).toHaveLength(4);
  });
});
