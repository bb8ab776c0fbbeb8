// Memory of the server's watch-fed cache (src/reconcile/cluster-cache.ts)
// holding N EdgeRoutes with 2,000 Services and their EndpointSlices: the V8
// heap after a full GC, before the cache and once it has listed everything,
// and the time its first list took. The lists come from a stub KubeClient
// that serves pages of objects shaped as the apiserver sends them (with
// managedFields and kubectl's last-applied annotation, which the cache drops),
// so the real Informer and ClusterCache run without an apiserver of 50,000
// routes. Floor in the same run: the same routes held as parsed (unslimmed)
// objects in a Map, which is what a cache that keeps whole objects costs.
// Also: one snapshot build from the cache (what an xds replica does per change).
//
//   node --expose-gc --import tsx bench/cache-memory.bench.ts 10000 50000
//   npm run bench:cache-memory

import type { IncomingMessage } from "node:http";
import { PassThrough } from "node:stream";
import type { KubeClient, RequestOptions } from "../src/kube/client.js";
import { silentLogger } from "../src/observability/logger.js";
import { ClusterCache } from "../src/reconcile/cluster-cache.js";
import { buildSnapshot } from "../src/translate/snapshot.js";
import { syntheticInput } from "../test/fixtures/synthetic-routes.js";
import { fmt } from "./stats.js";

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with node --expose-gc (npm run bench:cache-memory does)");

function heapMiB(): number {
  gc?.();
  gc?.();
  return process.memoryUsage().heapUsed / 2 ** 20;
}

/** The routes, Services and slices of a cluster of n routes, as the apiserver lists them. */
function clusterObjects(n: number): Map<string, object[]> {
  const { routes, endpoints } = syntheticInput(n);
  let rv = 1000;
  const managedFields = [
    {
      manager: "kubectl-client-side-apply",
      operation: "Update",
      apiVersion: "net.10xdev.io/v2",
      time: "2026-01-01T00:00:00Z",
      fieldsType: "FieldsV1",
      fieldsV1: {
        "f:spec": { ".": {}, "f:hostnames": {}, "f:rules": {} },
        "f:metadata": { "f:annotations": {} },
      },
    },
    {
      manager: "edge-operator",
      operation: "Update",
      apiVersion: "net.10xdev.io/v2",
      subresource: "status",
      time: "2026-01-01T00:00:01Z",
      fieldsType: "FieldsV1",
      fieldsV1: { "f:status": { ".": {}, "f:conditions": {}, "f:observedGeneration": {} } },
    },
  ];
  const now = "2026-01-01T00:00:01Z";
  const listedRoutes = routes.map((r) => ({
    ...r,
    metadata: {
      ...r.metadata,
      resourceVersion: String(rv++),
      finalizers: ["net.10xdev.io/deprogram"],
      annotations: { "kubectl.kubernetes.io/last-applied-configuration": JSON.stringify(r) + "\n" },
      managedFields,
    },
    status: {
      observedGeneration: 1,
      conditions: ["Accepted", "Programmed"].map((type) => ({
        type,
        status: "True",
        reason: type === "Accepted" ? "Valid" : "Synced",
        message: type === "Accepted" ? "the route is valid" : "the data plane serves this route",
        observedGeneration: 1,
        lastTransitionTime: now,
      })),
    },
  }));
  const services: object[] = [];
  const slices: object[] = [];
  for (const [key, se] of endpoints) {
    const [namespace, name] = key.split("/") as [string, string];
    services.push({
      metadata: { namespace, name, uid: `svc-${key}`, resourceVersion: String(rv++), managedFields },
      spec: {
        ports: se.ports.map((p) => ({ name: "http", port: p.port, targetPort: 8080, protocol: "TCP" })),
      },
    });
    slices.push({
      metadata: {
        namespace,
        name: `${name}-abcde`,
        resourceVersion: String(rv++),
        labels: { "kubernetes.io/service-name": name, "endpointslice.kubernetes.io/managed-by": "x" },
        managedFields,
      },
      addressType: "IPv4",
      ports: [{ name: "http", port: 8080, protocol: "TCP" }],
      endpoints: (se.ports[0]?.addresses ?? []).map((a, i) => ({
        addresses: [a.ip],
        conditions: { ready: true, serving: true, terminating: false },
        nodeName: `node-${i}`,
        targetRef: { kind: "Pod", namespace, name: `${name}-pod-${i}`, uid: `pod-${name}-${i}` },
      })),
    });
  }
  return new Map<string, object[]>([
    ["edgeroutes", listedRoutes],
    ["services", services],
    ["endpointslices", slices],
  ]);
}

/** Serves LIST pages of `objects` as JSON text parsed fresh (as the client does); watches stay open and silent. */
function stubClient(objects: Map<string, object[]>): KubeClient {
  const kindOf = (path: string): string => path.split("/").pop() ?? "";
  return {
    json<T>(_method: string, path: string, opts: RequestOptions = {}): Promise<T> {
      const all = objects.get(kindOf(path)) ?? [];
      const q = (opts.query ?? {}) as { limit?: number; continue?: string };
      const from = Number(q.continue ?? 0);
      const limit = q.limit ?? 500;
      const items = all.slice(from, from + limit);
      const next = from + limit < all.length ? String(from + limit) : undefined;
      const text = JSON.stringify({
        metadata: { resourceVersion: "999999", ...(next ? { continue: next } : {}) },
        items,
      });
      return Promise.resolve(JSON.parse(text) as T);
    },
    stream(_path: string, opts: RequestOptions & { signal: AbortSignal }): Promise<IncomingMessage> {
      const body = new PassThrough();
      opts.signal.addEventListener("abort", () => body.end(), { once: true });
      return Promise.resolve(body as unknown as IncomingMessage);
    },
  };
}

async function measure(n: number): Promise<void> {
  const objects = clusterObjects(n);
  const base = heapMiB();
  // Floor: the same routes kept whole, as a cache of unslimmed objects would.
  const whole = new Map<string, object>();
  for (const r of objects.get("edgeroutes") ?? []) {
    const copy = JSON.parse(JSON.stringify(r)) as { metadata: { namespace: string; name: string } };
    whole.set(`${copy.metadata.namespace}/${copy.metadata.name}`, copy);
  }
  const wholeMiB = heapMiB() - base;
  whole.clear();

  const before = heapMiB();
  const stop = new AbortController();
  const state = new ClusterCache({ client: stubClient(objects), log: silentLogger() });
  const started = process.hrtime.bigint();
  state.start(stop.signal);
  await state.waitForSync();
  const listMs = Number(process.hrtime.bigint() - started) / 1e6;
  const cacheMiB = heapMiB() - before;
  const b0 = process.hrtime.bigint();
  const live = state.routes().filter((r) => !r.metadata.deletionTimestamp);
  const snap = buildSnapshot(live, state.endpoints());
  const buildMs = Number(process.hrtime.bigint() - b0) / 1e6;
  console.log(
    `routes=${n} services=${objects.get("services")?.length} cache heap=${fmt(cacheMiB, 1)} MiB ` +
      `(${fmt((cacheMiB * 2 ** 20) / n / 1024, 2)} KiB/route) whole-object floor=${fmt(wholeMiB, 1)} MiB ` +
      `ratio=${fmt(cacheMiB / wholeMiB, 2)} first list=${fmt(listMs, 0)} ms ` +
      `snapshot build=${fmt(buildMs, 0)} ms (${snap.outcomes.length} outcomes) rss=${fmt(process.memoryUsage().rss / 2 ** 20, 0)} MiB`,
  );
  stop.abort();
}

const sizes = process.argv.slice(2).map(Number);
for (const n of sizes.length > 0 ? sizes : [10_000, 50_000]) await measure(n);
