// What unrelated TLS Secrets cost the server's watch-fed cache: N
// `kubernetes.io/tls` Secrets (a real certificate and key each, as
// cert-manager writes them) on the real test control plane, none referenced
// by a route. The cache watches their metadata only and reads none, so its
// V8 heap after a full GC should barely move; the floor beside it is the
// same Secrets listed whole and held, which is what caching every Secret costs
// (Contour #6763, Envoy Gateway #4181).
//
//   node --expose-gc --import tsx bench/tls-secrets.bench.ts [N=10000]
//   npm run bench:tls-secrets

import os from "node:os";
import { buildCrd } from "../src/api/crd.js";
import { createCa, issueCertificate } from "../src/certs/pki.js";
import { eachConcurrently } from "../src/kube/each-concurrently.js";
import { silentLogger } from "../src/observability/logger.js";
import { ClusterCache } from "../src/reconcile/cluster-cache.js";
import { startControlPlane } from "../tools/testenv/control-plane.js";
import { fmt } from "./stats.js";

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with node --expose-gc (npm run bench:tls-secrets does)");
const N = Number(process.argv[2] ?? 10_000);
const NAMESPACES = 20;

function heapMiB(): number {
  gc?.();
  gc?.();
  return process.memoryUsage().heapUsed / 2 ** 20;
}

const load = (): string =>
  os
    .loadavg()
    .map((l) => fmt(l, 1))
    .join("/");

console.log(`cores=${os.cpus().length} load=${load()} secrets=${N}`);
const cp = await startControlPlane();
try {
  const kube = cp.kube();
  await cp.kubectl(["apply", "-f", "-"], { input: JSON.stringify(buildCrd({ storageVersion: "v2" })) });
  for (let i = 0; i < NAMESPACES; i++)
    await kube.json("POST", "/api/v1/namespaces", {
      body: { apiVersion: "v1", kind: "Namespace", metadata: { name: `team-${i}` } },
    });
  const ca = createCa();
  const pair = issueCertificate(ca, {
    commonName: "app.example.com",
    dnsNames: ["app.example.com"],
    usage: "server",
  });
  const data = {
    "tls.crt": Buffer.from(pair.cert + ca.cert).toString("base64"),
    "tls.key": Buffer.from(pair.key).toString("base64"),
  };
  const started = Date.now();
  await eachConcurrently(
    Array.from({ length: N }, (_, i) => i),
    16,
    (i) =>
      kube.json("POST", `/api/v1/namespaces/team-${i % NAMESPACES}/secrets`, {
        body: {
          apiVersion: "v1",
          kind: "Secret",
          type: "kubernetes.io/tls",
          metadata: { name: `certificate-for-app-${String(i).padStart(6, "0")}` },
          data,
        },
      }),
  );
  console.log(`created ${N} Secrets in ${fmt((Date.now() - started) / 1000, 1)} s (load ${load()})`);

  const before = heapMiB();
  const stop = new AbortController();
  const cache = new ClusterCache({ client: kube, log: silentLogger() });
  const listStart = Date.now();
  cache.start(stop.signal);
  await cache.waitForSync();
  const last = `certificate-for-app-${String(N - 1).padStart(6, "0")}`;
  if (cache.tlsSecretExists(`team-${(N - 1) % NAMESPACES}`, last) !== true)
    throw new Error("the cache does not know the last Secret");
  const listMs = Date.now() - listStart;
  const after = heapMiB();
  const delta = after - before;
  console.log(
    `cache: heap delta ${fmt(delta)} MiB for ${N} unrelated TLS Secrets (${fmt((delta * 2 ** 20) / N, 0)} bytes each), first list ${listMs} ms, contents held ${cache.secrets().size}`,
  );
  stop.abort();

  // Floor: the same Secrets listed whole and kept, as a cache of every Secret would.
  const floorBefore = heapMiB();
  const whole: unknown[] = [];
  let cont: string | undefined;
  do {
    const page: { items: unknown[]; metadata?: { continue?: string } } = await kube.json(
      "GET",
      "/api/v1/secrets",
      { query: { fieldSelector: "type=kubernetes.io/tls", limit: 500, continue: cont } },
    );
    whole.push(...page.items);
    cont = page.metadata?.continue || undefined;
  } while (cont);
  const floor = heapMiB() - floorBefore;
  console.log(
    `floor: ${whole.length} whole Secrets held: ${fmt(floor)} MiB; the cache holds ${fmt((100 * delta) / floor, 1)}% of that (load ${load()})`,
  );
  console.log(delta <= 10 ? "within the 10 MiB budget" : `OVER the 10 MiB budget: ${fmt(delta)} MiB`);
} finally {
  await cp.stop();
}
