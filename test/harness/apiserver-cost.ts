// What the apiserver does per route change, from its own /metrics: requests
// (apiserver_request_total) and response bytes (apiserver_response_sizes) on
// the three resources the reconcile reads (edgeroutes, services,
// endpointslices), watches left out (long-running: counted once when opened).
// Shared by test/integration/apiserver-cost.test.ts and bench/cache-cost.bench.ts.

import type { KubeClient } from "../../src/kube/client.js";
import { eachConcurrently } from "../../src/kube/each-concurrently.js";
import type { ControlPlane } from "../../tools/testenv/control-plane.js";
import type { OperatorStack } from "./operator-stack.js";
import { sleep, waitFor } from "../../tools/testenv/process.js";

const RESOURCES = new Set(["edgeroutes", "services", "endpointslices"]);

export interface ApiserverCost {
  /** Requests other than WATCH on the three resources. */
  readonly requests: number;
  /** Of which LIST. */
  readonly lists: number;
  /** Response bytes of those requests (the apiserver records them for reads: GET, LIST). */
  readonly bytes: number;
  /** Status writes (PATCH edgeroutes/status). */
  readonly statusWrites: number;
}

export interface Sample {
  readonly labels: Record<string, string>;
  readonly value: number;
}

/** The samples of one metric family in Prometheus text. */
export function samples(text: string, name: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`)) continue;
    const close = line.lastIndexOf("}");
    const labels: Record<string, string> = {};
    for (const m of line.slice(name.length + 1, close).matchAll(/([a-z_]+)="((?:[^"\\]|\\.)*)"/g))
      labels[m[1] as string] = m[2] as string;
    out.push({ labels, value: Number(line.slice(close + 1).trim()) });
  }
  return out;
}

export async function scrapeCost(cp: ControlPlane): Promise<ApiserverCost> {
  const r = await cp.kubectl(["get", "--raw", "/metrics"]);
  if (r.code !== 0) throw new Error(`kubectl get --raw /metrics: ${r.stderr}`);
  const ours = (s: Sample): boolean => RESOURCES.has(s.labels.resource ?? "") && s.labels.verb !== "WATCH";
  let requests = 0;
  let lists = 0;
  let statusWrites = 0;
  for (const s of samples(r.stdout, "apiserver_request_total").filter(ours)) {
    requests += s.value;
    if (s.labels.verb === "LIST") lists += s.value;
    if (s.labels.verb === "PATCH" && s.labels.subresource === "status") statusWrites += s.value;
  }
  let bytes = 0;
  for (const s of samples(r.stdout, "apiserver_response_sizes_sum").filter(ours)) bytes += s.value;
  return { requests, lists, bytes, statusWrites };
}

export function costDelta(after: ApiserverCost, before: ApiserverCost, per: number): ApiserverCost {
  return {
    requests: (after.requests - before.requests) / per,
    lists: (after.lists - before.lists) / per,
    bytes: (after.bytes - before.bytes) / per,
    statusWrites: (after.statusWrites - before.statusWrites) / per,
  };
}

export function costRoute(ns: string, i: number, generation = 0) {
  return {
    apiVersion: "net.10xdev.io/v2",
    kind: "EdgeRoute",
    metadata: { name: `r-${i}`, namespace: ns },
    spec: {
      hostnames: [`h${i % 50}.example.com`],
      rules: [
        {
          matches: [{ path: { type: "PathPrefix", value: `/r/${i}/g${generation}` } }],
          backends: [{ name: "backend", port: 8080 }],
        },
      ],
    },
  };
}

const routesPath = (ns: string): string => `/apis/net.10xdev.io/v2/namespaces/${ns}/edgeroutes`;

/** The namespace and its Service (made once), then routes `from` to `to - 1`. */
export async function createCostRoutes(
  kube: KubeClient,
  ns: string,
  from: number,
  to: number,
): Promise<void> {
  if (from === 0) {
    await kube.json("POST", "/api/v1/namespaces", { body: { metadata: { name: ns } } });
    await kube.json("POST", `/api/v1/namespaces/${ns}/services`, {
      body: { metadata: { name: "backend" }, spec: { ports: [{ name: "http", port: 8080 }] } },
    });
  }
  await eachConcurrently(
    Array.from({ length: to - from }, (_, k) => from + k),
    16,
    async (i) => {
      await kube.json("POST", routesPath(ns), { body: costRoute(ns, i), timeoutMs: 60_000 });
    },
  );
}

interface Listed {
  items: {
    metadata: { generation?: number };
    status?: { conditions?: { type: string; status: string; observedGeneration?: number }[] };
  }[];
}

/**
 * Until the memory data plane holds `n` routes of `ns`, every one of them says
 * Programmed=True for its generation (checked with LISTs, so only before a
 * measurement, never inside one: `checkStatuses` false), and no status write
 * happened for `quietMs`.
 */
export async function settle(
  cp: ControlPlane,
  stack: OperatorStack,
  ns: string,
  n: number,
  timeoutMs = 300_000,
  quietMs = 3_000,
  checkStatuses = true,
): Promise<void> {
  await waitFor(
    `${n} routes of ${ns} served`,
    async () =>
      (await stack.dataPlane()).routes.filter((k) => k.startsWith(`${ns}/`)).length === n ? true : undefined,
    timeoutMs,
    250,
  );
  if (checkStatuses) {
    const kube = cp.kube();
    await waitFor(
      `every route of ${ns} Programmed for its generation`,
      async () => {
        const list = await kube.json<Listed>("GET", routesPath(ns), { timeoutMs: 120_000 });
        const done = list.items.every((r) =>
          r.status?.conditions?.some(
            (c) =>
              c.type === "Programmed" &&
              c.status === "True" &&
              c.observedGeneration === r.metadata.generation,
          ),
        );
        return list.items.length === n && done ? true : undefined;
      },
      timeoutMs,
      1_000,
    );
  }
  const deadline = Date.now() + timeoutMs;
  let last = (await scrapeCost(cp)).statusWrites;
  for (;;) {
    await sleep(quietMs);
    const now = (await scrapeCost(cp)).statusWrites;
    if (now === last) return;
    if (Date.now() > deadline) throw new Error(`status writes still going after ${timeoutMs} ms`);
    last = now;
  }
}

/**
 * `changes` route changes, one after another, each waited for until the data
 * plane serves a new snapshot; then settled. The apiserver's cost per change.
 */
export async function costPerChange(
  cp: ControlPlane,
  stack: OperatorStack,
  kube: KubeClient,
  ns: string,
  n: number,
  changes: number,
  round: number,
): Promise<ApiserverCost> {
  const before = await scrapeCost(cp);
  for (let c = 0; c < changes; c++) {
    const i = (c * 97) % n;
    const was = (await stack.dataPlane()).version;
    await kube.json("PATCH", `${routesPath(ns)}/r-${i}`, {
      contentType: "application/merge-patch+json",
      body: { spec: costRoute(ns, i, round * 1000 + c + 1).spec },
    });
    await waitFor(
      `the change to r-${i} served`,
      async () => ((await stack.dataPlane()).version !== was ? true : undefined),
      60_000,
      25,
    );
  }
  await settle(cp, stack, ns, n, 300_000, 3_000, false);
  return costDelta(await scrapeCost(cp), before, changes);
}
