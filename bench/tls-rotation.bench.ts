// How long a renewed certificate takes to reach what the server serves: R
// rotations of one route's TLS Secret on the real test control plane (a merge
// patch of tls.crt and tls.key, as cert-manager's renewal writes them), each
// timed from the moment the PATCH is sent to
//  - watch:  a plain watch of that Secret seeing the change (the floor: the
//            apiserver's own delivery, which nothing of ours can beat);
//  - cache:  the server's ClusterCache holding the new contents (metadata
//            event, then the GET);
//  - served: the snapshot pipeline's serve loop handing the data plane a
//            snapshot that carries the new certificate (needs the translation
//            to serve Secrets; "n/a" before it does).
//  - ads:    with --ads (needs `npm run build` and the ADS server's SDS): a
//            raw ADS client with the proxies' client pair, subscribed to the
//            Secret on `serve --dataplane xds`, receiving the new certificate.
// p50 and p99 of each, the load average beside them.
//
//   tsx bench/tls-rotation.bench.ts [ROTATIONS=20] [--ads]
//   npm run bench:tls-rotation

import os from "node:os";
import { buildCrd } from "../src/api/crd.js";
import { createCa, issueCertificate, type KeyPair } from "../src/certs/pki.js";
import type { DataPlane } from "../src/dataplane/dataplane.js";
import { MemoryDataPlane } from "../src/dataplane/memory.js";
import { utf8Lines } from "../src/kube/watch-lines.js";
import { silentLogger } from "../src/observability/logger.js";
import { ClusterCache } from "../src/reconcile/cluster-cache.js";
import { SnapshotPipeline } from "../src/reconcile/snapshot-pipeline.js";
import type { Snapshot } from "../src/translate/snapshot.js";
import { startControlPlane } from "../tools/testenv/control-plane.js";
import { waitFor } from "../tools/testenv/process.js";
import { adsSecretClient } from "../test/harness/sds-client.js";
import { fmt, summarize } from "./stats.js";

const ROTATIONS = Number(process.argv.slice(2).find((a) => /^\d+$/.test(a)) ?? 20);
const ADS = process.argv.includes("--ads");
const NS = "rotation";
const HOST = "shop.example.com";
const log = silentLogger();
const ms = (from: bigint, to: bigint): number => Number(to - from) / 1e6;
const load = (): string =>
  os
    .loadavg()
    .map((l) => fmt(l, 1))
    .join("/");

/** A base64 line of a PEM that tells two certificates apart (node-forge ends lines with CRLF). */
const marker = (pem: string): string => pem.split(/\r?\n/)[2] ?? pem;

console.log(`cores=${os.cpus().length} load=${load()} rotations=${ROTATIONS}`);
const cp = await startControlPlane();
try {
  const kube = cp.kube();
  await cp.kubectl(["apply", "-f", "-"], { input: JSON.stringify(buildCrd({ storageVersion: "v2" })) });
  await cp.kubectl(["wait", "--for=condition=Established", "crd/edgeroutes.net.10xdev.io", "--timeout=60s"]);
  await kube.json("POST", "/api/v1/namespaces", {
    body: { apiVersion: "v1", kind: "Namespace", metadata: { name: NS } },
  });
  const ca = createCa();
  const issue = (): KeyPair => issueCertificate(ca, { commonName: HOST, dnsNames: [HOST], usage: "server" });
  const data = (p: KeyPair) => ({
    "tls.crt": Buffer.from(p.cert).toString("base64"),
    "tls.key": Buffer.from(p.key).toString("base64"),
  });
  await kube.json("POST", `/api/v1/namespaces/${NS}/secrets`, {
    body: {
      apiVersion: "v1",
      kind: "Secret",
      type: "kubernetes.io/tls",
      metadata: { name: "shop-tls" },
      data: data(issue()),
    },
  });
  await kube.json("POST", `/api/v1/namespaces/${NS}/services`, {
    body: { apiVersion: "v1", kind: "Service", metadata: { name: "shop" }, spec: { ports: [{ port: 80 }] } },
  });
  await kube.json("POST", `/apis/net.10xdev.io/v2/namespaces/${NS}/edgeroutes`, {
    body: {
      apiVersion: "net.10xdev.io/v2",
      kind: "EdgeRoute",
      metadata: { name: "shop" },
      spec: {
        hostnames: [HOST],
        tls: { secretName: "shop-tls" },
        rules: [{ matches: [{ path: { value: "/" } }], backends: [{ name: "shop", port: 80 }] }],
      },
    },
  });

  const stop = new AbortController();
  const cache = new ClusterCache({ client: kube, log });
  cache.start(stop.signal);
  await cache.waitForSync();
  const referenced = await waitFor(
    "the cache to read the route's Secret",
    async () => (cache.secrets().has(`${NS}/shop-tls`) ? true : undefined),
    15_000,
    50,
  ).catch(() => false);
  if (!referenced)
    console.log(
      "the cache does not read the Secret: the CRD keeps no spec.tls yet; only the watch floor is measured",
    );

  // The serve loop, into a data plane that notes when a snapshot carries the certificate waited for.
  let waitingFor: { marker: string; resolve: (at: bigint) => void } | undefined;
  const memory = new MemoryDataPlane();
  const plane: DataPlane = {
    kind: memory.kind,
    program: (snapshot: Snapshot, opts?: Parameters<DataPlane["program"]>[1]) => {
      const w = waitingFor;
      if (w && JSON.stringify(snapshot.resources).includes(w.marker)) w.resolve(process.hrtime.bigint());
      return memory.program(snapshot, opts);
    },
    current: () => memory.current(),
  };
  const stopServe = new SnapshotPipeline().serve(cache, plane, { log, minIntervalMs: 0 });

  // The floor: a watch of that one Secret.
  let watchSeen: ((at: bigint) => void) | undefined;
  const watch = await kube.stream(`/api/v1/namespaces/${NS}/secrets`, {
    query: { watch: true, fieldSelector: "metadata.name=shop-tls", resourceVersion: "" },
    signal: stop.signal,
    timeoutMs: 3_600_000,
  });
  void (async () => {
    try {
      for await (const line of utf8Lines(watch))
        if (line.includes('"MODIFIED"')) watchSeen?.(process.hrtime.bigint());
    } catch {
      // the end of the bench aborts it
    }
  })();

  const ads = ADS ? await adsSecretClient(cp, NS, "shop-tls") : undefined;
  if (ads) await ads.seen(cache.secrets().get(`${NS}/shop-tls`)?.certificate ?? "", 30_000);
  const samples = {
    watch: [] as number[],
    cache: [] as number[],
    served: [] as number[],
    ads: [] as number[],
  };
  let servedMissing = 0;
  const within = <T>(p: Promise<T>, limitMs: number): Promise<T | undefined> =>
    Promise.race([p, new Promise<undefined>((r) => setTimeout(() => r(undefined), limitMs))]);
  for (let i = 0; i < ROTATIONS; i++) {
    const next = issue();
    const m = marker(next.cert);
    const watched = new Promise<bigint>((r) => (watchSeen = r));
    const served = new Promise<bigint>((r) => (waitingFor = { marker: m, resolve: r }));
    const cached = referenced
      ? waitFor(
          "the new contents",
          async () =>
            cache.secrets().get(`${NS}/shop-tls`)?.certificate === next.cert
              ? process.hrtime.bigint()
              : undefined,
          10_000,
          1,
        )
      : Promise.resolve(undefined);
    const t0 = process.hrtime.bigint();
    await kube.json("PATCH", `/api/v1/namespaces/${NS}/secrets/shop-tls`, {
      body: { data: data(next) },
      contentType: "application/merge-patch+json",
    });
    const adsSeen = ads
      ? ads.seen(next.cert, 10_000).then(
          () => process.hrtime.bigint(),
          () => undefined,
        )
      : Promise.resolve(undefined);
    const [w, c, s, a] = await Promise.all([
      within(watched, 10_000),
      cached,
      within(served, referenced ? 3_000 : 0),
      adsSeen,
    ]);
    if (a !== undefined) samples.ads.push(Math.max(0, ms(t0, a)));
    if (w !== undefined) samples.watch.push(Math.max(0, ms(t0, w)));
    if (c !== undefined) samples.cache.push(Math.max(0, ms(t0, c)));
    if (s !== undefined) samples.served.push(Math.max(0, ms(t0, s)));
    else servedMissing++;
    await new Promise((r) => setTimeout(r, 200));
  }
  stopServe();
  stop.abort();
  await ads?.close();

  const line = (what: string, xs: number[]): string => {
    if (xs.length === 0) return `${what}: n/a`;
    const s = summarize(xs);
    return `${what}: p50=${fmt(s.p50, 1)} ms p99=${fmt(s.p99, 1)} ms (n=${s.n})`;
  };
  console.log(line("floor, Secret PATCH → a watch of it", samples.watch));
  console.log(line("Secret PATCH → the cache's contents", samples.cache));
  console.log(
    line("Secret PATCH → a served snapshot with the new certificate", samples.served) +
      (servedMissing > 0 ? ` (${servedMissing} rotation(s) never reached a snapshot)` : ""),
  );
  if (ADS) console.log(line("Secret PATCH → an ADS client receiving the new certificate (SDS)", samples.ads));
  console.log(`load=${load()}`);
} finally {
  await cp.stop();
}
