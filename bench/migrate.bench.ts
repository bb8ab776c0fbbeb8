// Migration benchmark: `edge-operator migrate` (the built CLI, as a process)
// moving N EdgeRoutes from storage v1 to v2 on the real control plane, beside
// a floor measured in the same run: the same no-op writes made directly (list
// every object at v2, page by page, then PUT each back as listed, same
// concurrency, same HTTP client, no other logic). Both go through the same
// apiserver, the same /mutate, /validate and /convert of `edge-operator serve`.
//
// Before each measured pass every object is put back into v1 storage
// (storage switched to v1, every object rewritten, checked in etcd), then
// storage is switched to v2 and the apiserver's discovery is waited on; each
// pass is checked afterwards in etcd (all N stored as v2). The two are timed
// alternately, so both see the same noise.
// Run: npm run build && npm run bench:migrate   (N=2000 RUNS=3 CONCURRENCY=8 by default)

import { spawn } from "node:child_process";
import os from "node:os";
import { stringify as toYaml } from "yaml";
import { buildCrd } from "../src/api/crd.js";
import { CRD_NAME, GROUP, KIND, PLURAL, type Version } from "../src/api/types.js";
import { storageVersionHash } from "../src/migrate/storage-migration.js";
import type { KubeClient } from "../src/kube/client.js";
import { eachConcurrently } from "../src/kube/each-concurrently.js";
import { startControlPlane, type ControlPlane } from "../tools/testenv/control-plane.js";
import { CLI, startServe, type ServeProcess } from "../tools/testenv/operator.js";
import { registerOperator } from "../test/harness/operator-stack.js";
import { fmt, summarize } from "./stats.js";

const N = Number(process.env.N ?? 2000);
const RUNS = Number(process.env.RUNS ?? 3);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 8);
const PAGE = 500;
const NAMESPACES = ["bench-a", "bench-b", "bench-c", "bench-d"];

interface Listed {
  metadata: { name: string; namespace: string };
}

function route(i: number): object {
  const namespace = NAMESPACES[i % NAMESPACES.length] as string;
  const name = `b${i}`;
  if (i % 2 === 0) {
    return {
      apiVersion: `${GROUP}/v1`,
      kind: KIND,
      metadata: { name, namespace },
      spec: {
        host: `${name}.example.com`,
        pathPrefix: `/p${i}`,
        service: "web",
        port: 8080,
        timeoutSeconds: 15,
      },
    };
  }
  return {
    apiVersion: `${GROUP}/v2`,
    kind: KIND,
    metadata: { name, namespace },
    spec: {
      hostnames: [`${name}.example.com`, `www.${name}.example.com`],
      rules: [
        {
          matches: [
            { path: { type: "Exact", value: `/v2/${i}` }, headers: [{ name: "x-canary", value: "1" }] },
          ],
          backends: [
            { name: "web", port: 8080, weight: 90 },
            { name: "web-canary", port: 8080, weight: 10 },
          ],
        },
      ],
    },
  };
}

/** apiVersion → count, of what etcd holds for EdgeRoutes (etcd's v3 JSON gateway). */
async function storedCounts(cp: ControlPlane): Promise<Record<string, number>> {
  const b64 = (s: string) => Buffer.from(s).toString("base64");
  const prefix = `/registry/${GROUP}/${PLURAL}/`;
  const res = await fetch(`${cp.etcdEndpoint}/v3/kv/range`, {
    method: "POST",
    body: JSON.stringify({ key: b64(prefix), range_end: b64(prefix.slice(0, -1) + "0") }),
  });
  const body = (await res.json()) as { kvs?: { value: string }[] };
  const out: Record<string, number> = {};
  for (const kv of body.kvs ?? []) {
    const v = (JSON.parse(Buffer.from(kv.value, "base64").toString("utf8")) as { apiVersion: string })
      .apiVersion;
    out[v] = (out[v] ?? 0) + 1;
  }
  return out;
}

async function expectStored(cp: ControlPlane, version: Version, what: string): Promise<void> {
  const counts = await storedCounts(cp);
  if (counts[`${GROUP}/${version}`] !== N || Object.keys(counts).length !== 1) {
    throw new Error(`${what}: expected all ${N} stored as ${version}, etcd holds ${JSON.stringify(counts)}`);
  }
}

async function setStorage(
  cp: ControlPlane,
  serve: ServeProcess,
  client: KubeClient,
  version: Version,
): Promise<void> {
  const crd = buildCrd({
    storageVersion: version,
    conversion: { url: `${serve.url}/convert`, caBundle: serve.caBundle },
  });
  const r = await cp.kubectl(["apply", "-f", "-"], { input: toYaml(crd) });
  if (r.code !== 0) throw new Error(`kubectl apply crd: ${r.stderr}`);
  const want = storageVersionHash(GROUP, version, KIND);
  for (const deadline = Date.now() + 60_000; ;) {
    const d = await client.json<{ resources: { name: string; storageVersionHash?: string }[] }>(
      "GET",
      `/apis/${GROUP}/${version}`,
    );
    if (d.resources.find((x) => x.name === PLURAL)?.storageVersionHash === want) return;
    if (Date.now() > deadline) throw new Error(`discovery never showed storage ${version}`);
    await new Promise((res) => setTimeout(res, 100));
  }
}

/** The floor: list at `version` page by page, then PUT every object back as listed. Returns seconds. */
async function directWrites(client: KubeClient, version: Version): Promise<number> {
  const t0 = performance.now();
  const items: Listed[] = [];
  let cont: string | undefined;
  do {
    const page = await client.json<{ metadata: { continue?: string }; items: Listed[] }>(
      "GET",
      `/apis/${GROUP}/${version}/${PLURAL}`,
      {
        query: { limit: PAGE, continue: cont },
      },
    );
    items.push(...page.items);
    cont = page.metadata.continue;
  } while (cont);
  await eachConcurrently(items, CONCURRENCY, (o) =>
    client.json(
      "PUT",
      `/apis/${GROUP}/${version}/namespaces/${o.metadata.namespace}/${PLURAL}/${o.metadata.name}`,
      { body: o },
    ),
  );
  return (performance.now() - t0) / 1000;
}

/** `edge-operator migrate` as a user runs it; wall-clock seconds, and its own summary line. */
function migrateCli(kubeconfig: string): Promise<{ seconds: number; line: string }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(
      process.execPath,
      [
        CLI,
        "migrate",
        "--kubeconfig",
        kubeconfig,
        "--concurrency",
        String(CONCURRENCY),
        "--page-size",
        String(PAGE),
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let out = "";
    let err = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString()));
    child.stderr.on("data", (c: Buffer) => (err += c.toString()));
    child.on("error", reject);
    child.on("close", (code) => {
      const seconds = (performance.now() - t0) / 1000;
      if (code !== 0) reject(new Error(`migrate exited ${code}: ${err}`));
      else resolve({ seconds, line: out.trim() });
    });
  });
}

async function main(): Promise<void> {
  const cp = await startControlPlane();
  const serve = await startServe();
  try {
    await registerOperator(cp, serve);
    const client = cp.kube();
    for (const ns of NAMESPACES)
      await client.json("POST", "/api/v1/namespaces", { body: { metadata: { name: ns } } });
    const t0 = performance.now();
    await eachConcurrently(
      Array.from({ length: N }, (_, i) => i),
      CONCURRENCY,
      (i) => {
        const o = route(i) as { apiVersion: string; metadata: { namespace: string } };
        return client.json("POST", `/apis/${o.apiVersion}/namespaces/${o.metadata.namespace}/${PLURAL}`, {
          body: o,
        });
      },
    );
    process.stderr.write(`created ${N} routes in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);
    await expectStored(cp, "v1", "after create");

    const resetToV1 = async (): Promise<void> => {
      await setStorage(cp, serve, client, "v1");
      await directWrites(client, "v1");
      await expectStored(cp, "v1", "reset");
      await setStorage(cp, serve, client, "v2");
    };

    const direct: number[] = [];
    const migrate: number[] = [];
    const migrateInside: number[] = [];
    const ratios: number[] = [];
    const loads: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      let d = 0;
      let m = 0;
      for (const which of run % 2 === 0 ? ["direct", "migrate"] : ["migrate", "direct"]) {
        await resetToV1();
        loads.push(os.loadavg()[0] ?? NaN);
        if (which === "direct") {
          d = await directWrites(client, "v2");
          direct.push(N / d);
        } else {
          const r = await migrateCli(cp.kubeconfig);
          m = r.seconds;
          migrate.push(N / m);
          const inside = /in ([\d.]+) s/.exec(r.line);
          if (inside?.[1]) migrateInside.push(N / Number(inside[1]));
          process.stderr.write(`  ${r.line}\n`);
          const stored = await client.json<{ status: { storedVersions: string[] } }>(
            "GET",
            `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${CRD_NAME}`,
          );
          if (stored.status.storedVersions.join() !== "v2")
            throw new Error(`storedVersions ${stored.status.storedVersions.join()}`);
        }
        await expectStored(cp, "v2", which);
      }
      ratios.push(m / d);
      process.stderr.write(
        `run ${run + 1}/${RUNS}: direct ${(N / d).toFixed(0)}/s, migrate ${(N / m).toFixed(0)}/s, time ratio ${(m / d).toFixed(2)}×\n`,
      );
    }

    const row = (name: string, xs: number[]) => {
      const s = summarize(xs);
      return `| ${name} | ${fmt(s.min, 0)} | ${fmt(s.p50, 0)} | ${fmt(s.max, 0)} |`;
    };
    const r = summarize(ratios);
    const l = summarize(loads);
    process.stdout.write(
      [
        `N=${N} routes (half v1, half v2 with v2-only features) in ${NAMESPACES.length} namespaces, concurrency ${CONCURRENCY}, page ${PAGE}, ${RUNS} runs`,
        `machine: ${os.cpus().length} cores, ${os.cpus()[0]?.model ?? "?"}, Node ${process.version}, load 1-min avg ${fmt(l.min, 1)} – ${fmt(l.max, 1)}`,
        "",
        "| objects/s | min | p50 | max |",
        "| --- | --- | --- | --- |",
        row("direct no-op writes (list + PUT), the floor", direct),
        row("`edge-operator migrate`, wall clock of the process", migrate),
        row("`edge-operator migrate`, its own timer (after CRD read and discovery)", migrateInside),
        "",
        `migrate time / direct time, per run: min ${fmt(r.min)}× p50 ${fmt(r.p50)}× max ${fmt(r.max)}× (goal ≤ 1.5×)`,
        "",
      ].join("\n"),
    );
  } finally {
    await serve.stop();
    await cp.stop();
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`${(e as Error).stack ?? String(e)}\n`);
  process.exitCode = 1;
});
