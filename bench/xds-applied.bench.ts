// Route applied → ACKed by an xDS client, end to end: the test control plane,
// `serve --dataplane xds` and the watcher as processes, an Envoy-like ADS
// client in this process that ACKs each response as it arrives. Each sample
// creates one route (POST) and times, from the POST, (a) a watch in this
// process seeing it ADDED: the floor, and (b) the client receiving (and at
// once ACKing) a route configuration that holds it. Sequential, bounded.
//
// `npm run bench:xds-applied [-- SAMPLES]` (default 30).

import { createServer } from "node:net";
import { performance } from "node:perf_hooks";
import { TYPE_URL } from "../src/envoy/envoy-resources.js";
import { decodeResource } from "../src/dataplane/xds/proto-codec.js";
import type { KubeClient } from "../src/kube/client.js";
import { startControlPlane } from "../tools/testenv/control-plane.js";
import { startOperatorStack } from "../test/harness/operator-stack.js";
import { adsClient, sotwStream } from "../test/xds/raw-ads-client.js";
import { fmt, summarize } from "./stats.js";

const SAMPLES = Number(process.argv[2] ?? 30);
const NS = "bench";
const ROUTES = `/apis/net.10xdev.io/v2/namespaces/${NS}/edgeroutes`;
const WAIT_MS = 30_000;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

function route(i: number) {
  return {
    apiVersion: "net.10xdev.io/v2",
    kind: "EdgeRoute",
    metadata: { name: `r-${i}`, namespace: NS },
    spec: {
      hostnames: [`h${i % 10}.example.com`],
      rules: [
        {
          matches: [{ path: { type: "PathPrefix", value: `/r/${i}` } }],
          backends: [{ name: "checkout", port: 8080 }],
        },
      ],
    },
  };
}

/** When each name was first seen: by the watch, and in a route configuration the client got. */
const seenByWatch = new Map<string, number>();
const seenByClient = new Map<string, number>();

async function watchRoutes(kube: KubeClient, signal: AbortSignal): Promise<void> {
  const res = await kube.stream(ROUTES, { query: { watch: true }, signal });
  let buf = "";
  res.setEncoding("utf8");
  res.on("data", (chunk: string) => {
    const at = performance.now();
    buf += chunk;
    let nl: number;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      const ev = JSON.parse(line) as { type: string; object: { metadata?: { name?: string } } };
      const name = ev.object.metadata?.name;
      if (ev.type === "ADDED" && name !== undefined && !seenByWatch.has(name)) seenByWatch.set(name, at);
    }
  });
  res.on("error", () => undefined);
}

function envoyLike(port: number): () => void {
  const client = adsClient(port);
  const s = sotwStream(client);
  let clusters: string[] = [];
  let stop = false;
  s.send({ node: { id: "bench-envoy" }, type_url: TYPE_URL.cluster });
  s.send({ type_url: TYPE_URL.listener });
  s.send({ type_url: TYPE_URL.routeConfiguration, resource_names: ["edge"] });
  void (async () => {
    while (!stop) {
      const r = await s.next(600_000).catch(() => undefined);
      if (r === undefined) return;
      const m = r.message;
      if (m.type_url === TYPE_URL.cluster) {
        clusters = m.resources.map((x) => decodeResource(x).name as string);
        s.send({ type_url: m.type_url, response_nonce: m.nonce });
        s.send({ type_url: TYPE_URL.clusterLoadAssignment, resource_names: clusters });
        continue;
      }
      const names =
        m.type_url === TYPE_URL.routeConfiguration
          ? ["edge"]
          : m.type_url === TYPE_URL.clusterLoadAssignment
            ? clusters
            : [];
      s.send({ type_url: m.type_url, response_nonce: m.nonce, resource_names: names });
      if (m.type_url === TYPE_URL.routeConfiguration)
        for (const res of m.resources) {
          const rc = decodeResource(res) as { virtual_hosts?: { routes?: { name?: string }[] }[] };
          for (const vh of rc.virtual_hosts ?? [])
            for (const rt of vh.routes ?? []) {
              const name = (rt.name ?? "").split("/")[1];
              if (name !== undefined && !seenByClient.has(name)) seenByClient.set(name, performance.now());
            }
        }
    }
  })();
  return () => {
    stop = true;
    s.end();
    client.close();
  };
}

async function until(what: string, ok: () => boolean): Promise<void> {
  const end = Date.now() + WAIT_MS;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`${what}: not within ${WAIT_MS} ms`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

async function main(): Promise<void> {
  const cp = await startControlPlane();
  const adsPort = await freePort();
  const stack = await startOperatorStack(cp, {
    serveArgs: ["--dataplane", "xds", "--xds-listen", `127.0.0.1:${adsPort}`, "--xds-plaintext"],
    watchArgs: ["--no-leader-elect", "--resync", "0"],
  });
  const kube = cp.kube();
  const abort = new AbortController();
  const stopClient = envoyLike(adsPort);
  try {
    await kube.json("POST", "/api/v1/namespaces", { body: { metadata: { name: NS } } });
    await kube.json("POST", `/api/v1/namespaces/${NS}/services`, {
      body: { metadata: { name: "checkout" }, spec: { ports: [{ name: "http", port: 8080 }] } },
    });
    await watchRoutes(kube, abort.signal);
    const floor: number[] = [];
    const acked: number[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      const name = `r-${i}`;
      const t0 = performance.now();
      await kube.json("POST", ROUTES, { body: route(i), timeoutMs: WAIT_MS });
      await until(`${name} seen by the watch`, () => seenByWatch.has(name));
      await until(`${name} ACKed by the client`, () => seenByClient.has(name));
      floor.push((seenByWatch.get(name) as number) - t0);
      acked.push((seenByClient.get(name) as number) - t0);
      // Apart, so that each sample is one route's way through, not a coalesced burst.
      await new Promise((r) => setTimeout(r, 300));
    }
    const f = summarize(floor);
    const a = summarize(acked);
    process.stdout.write(
      `# xds applied → ACKed: ${SAMPLES} routes one at a time, node ${process.version}\n` +
        `applied → watch event (floor): p50 ${fmt(f.p50, 1)} ms p99 ${fmt(f.p99, 1)} ms\n` +
        `applied → ACKed by the client: p50 ${fmt(a.p50, 1)} ms p99 ${fmt(a.p99, 1)} ms\n` +
        `ratio p50 ${fmt(a.p50 / f.p50)} p99 ${fmt(a.p99 / f.p99)}\n` +
        `samples, ms, in order: ${acked.map((x) => fmt(x, 0)).join(" ")}\n`,
    );
  } finally {
    abort.abort();
    stopClient();
    await stack.stop();
    await cp.stop();
  }
}

await main();
setTimeout(() => process.exit(0), 200).unref();
