// What sharing ACK state through Leases adds between a client's ACK and the
// verdict of another replica: two xds sinks (replicas "a" and "b") in this
// process with ACK records on a real apiserver, a hand-written ADS client on
// each. For each new snapshot, a's client ACKs at once; b's client ACKs, and
// we time from that ACK until replica a's combined verdict says synced
// (b's Lease PUT, a's watch event; changes 200 ms apart, so b's debounce of
// 100 ms between writes does not hold them back). Floor in the same run: a
// Lease PUT until a's reader sees the event (an apiserver write and a watch,
// which any cluster-shared ACK state pays).
//
//   RUNS=3 CHANGES=40 npm run bench:xds-acks

import os from "node:os";
import { startControlPlane } from "../tools/testenv/control-plane.js";
import { adsSnapshot, edgeRoute, endpoints, PORT } from "../test/xds/fixtures.js";
import { adsClient, sotwStream } from "../test/xds/raw-ads-client.js";
import { TYPE_URL } from "../src/envoy/envoy-resources.js";
import { XdsDataPlane } from "../src/dataplane/xds/xds-dataplane.js";
import type { KubeClient } from "../src/kube/client.js";
import { microTime } from "../src/kube/lease.js";
import { fmt, summarize } from "./stats.js";

const RUNS = Number(process.env.RUNS ?? 3);
const CHANGES = Number(process.env.CHANGES ?? 40);
const NS = "bench-acks";

function waitUntil(
  ok: () => boolean,
  subscribe: (f: () => void) => () => void,
  timeoutMs = 10_000,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const done = () => {
      if (!ok()) return;
      clearTimeout(t);
      clearInterval(poll);
      off();
      resolve(performance.now());
    };
    const t = setTimeout(() => {
      clearInterval(poll);
      off();
      reject(new Error(`not within ${timeoutMs} ms`));
    }, timeoutMs);
    const poll = setInterval(done, 5);
    const off = subscribe(done);
    done();
  });
}

async function oneRun(kube: KubeClient, run: number): Promise<{ acks: number[]; floor: number[] }> {
  const identity = (pod: string) => ({ namespace: NS, prefix: `bench-${run}`, pod, durationSeconds: 15 });
  const a = new XdsDataPlane({ ackTimeoutMs: 10_000, acks: { client: kube, identity: identity("a") } });
  const b = new XdsDataPlane({ ackTimeoutMs: 10_000, acks: { client: kube, identity: identity("b") } });
  const ca = adsClient(await a.listen("127.0.0.1", 0));
  const cb = adsClient(await b.listen("127.0.0.1", 0));
  const sa = sotwStream(ca);
  const sb = sotwStream(cb);
  sa.send({ node: { id: "client-a", cluster: "edge" }, type_url: TYPE_URL.cluster });
  sb.send({ node: { id: "client-b", cluster: "edge" }, type_url: TYPE_URL.cluster });
  await a.records?.waitForSync();
  // Timed from here: a knows b's client (a client b has not yet recorded is one a cannot wait for).
  await waitUntil(
    () => a.records?.live().some((r) => r.replica === "b" && r.clients.length === 1) ?? false,
    (f) => a.records?.onChange(f) ?? (() => undefined),
  );
  const acks: number[] = [];
  const floor: number[] = [];
  const leasePath = `/apis/coordination.k8s.io/v1/namespaces/${NS}/leases`;
  let floorLease = await kube.json<{ metadata: Record<string, unknown> }>("POST", leasePath, {
    body: {
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: { name: `floor-${run}`, labels: { "app.kubernetes.io/component": "xds-acks" } },
      spec: { holderIdentity: "floor", leaseDurationSeconds: 15, renewTime: microTime(Date.now()) },
    },
  });
  try {
    for (let i = 1; i <= CHANGES; i++) {
      // Changes apart by more than the writer's debounce (100 ms): each ACK is an isolated change.
      await new Promise((r) => setTimeout(r, 200));
      const routes = [];
      const eps: Record<string, number[]> = {};
      for (let j = 0; j < i; j++) {
        routes.push(
          edgeRoute(
            `r${j}`,
            [`r${j}.example.com`],
            [
              {
                matches: [{ path: { type: "PathPrefix", value: "/" } }],
                backends: [{ name: `s${j}`, port: PORT }],
              },
            ],
          ),
        );
        eps[`s${j}`] = [1000 + j];
      }
      const snapshot = adsSnapshot(routes, endpoints(eps));
      void a.program(snapshot);
      void b.program(snapshot);
      for (const s of [sa, sb]) {
        const m = (await s.next()).message;
        const t0 = performance.now();
        s.send({ type_url: TYPE_URL.cluster, version_info: m.version_info, response_nonce: m.nonce });
        if (s === sb) {
          const t1 = await waitUntil(
            () => a.verdictFor(snapshot.version).kind === "synced",
            (f) => {
              const offRecords = a.records?.onChange(f) ?? (() => undefined);
              const offServer = a.server.watch(f);
              return () => (offRecords(), offServer());
            },
          );
          acks.push(t1 - t0);
        }
      }
      // The floor: one Lease write seen by a's reader.
      let seen = false;
      const off = a.records?.onChange(() => (seen = true)) ?? (() => undefined);
      const f0 = performance.now();
      floorLease = await kube.json("PUT", `${leasePath}/floor-${run}`, {
        body: {
          ...floorLease,
          spec: { holderIdentity: "floor", leaseDurationSeconds: 15, renewTime: microTime(Date.now()) },
        },
      });
      const f1 = await waitUntil(
        () => seen,
        () => () => undefined,
      );
      off();
      floor.push(f1 - f0);
    }
  } finally {
    sa.end();
    sb.end();
    ca.close();
    cb.close();
    await Promise.all([a.stop(), b.stop()]);
  }
  return { acks, floor };
}

console.log(
  `cores=${os.cpus().length} load=${os
    .loadavg()
    .map((l) => fmt(l, 1))
    .join("/")} changes=${CHANGES}`,
);
const cp = await startControlPlane();
try {
  const kube = cp.kube();
  await kube.json("POST", "/api/v1/namespaces", {
    body: { apiVersion: "v1", kind: "Namespace", metadata: { name: NS } },
  });
  for (let run = 1; run <= RUNS; run++) {
    const { acks, floor } = await oneRun(kube, run);
    const s = summarize(acks);
    const f = summarize(floor);
    console.log(
      `run ${run}: b's ACK → a's verdict synced p50=${fmt(s.p50, 1)} ms p99=${fmt(s.p99, 1)} ms; ` +
        `floor (Lease PUT → a's watch) p50=${fmt(f.p50, 1)} ms p99=${fmt(f.p99, 1)} ms; ` +
        `ratio p50=${fmt(s.p50 / f.p50, 2)} load=${fmt(os.loadavg()[0] ?? NaN, 1)}`,
    );
  }
} finally {
  await cp.stop();
}
