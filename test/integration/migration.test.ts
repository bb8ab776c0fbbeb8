// Storage migration v1 → v2 on the real control plane, as a cluster operator
// does it (docs/migration.md): helm installs the chart out of cluster with
// storage on v1; 500 routes are made through v1 and v2 clients; helm switches
// storage to v2; `edge-operator migrate` is killed halfway, run again, and
// finishes; etcd itself shows every object stored as v2; both versions read
// exactly as before; then v1 is deprecated and no longer served.

import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { V1PolicyRule } from "@kubernetes/client-node";
import { parseAllDocuments, stringify as toYaml } from "yaml";
import { V2_SPEC_ANNOTATION, type EdgeRouteV1 } from "../../src/api/types.js";
import { toV2 } from "../../src/conversion/convert.js";
import { storageVersionHash } from "../../src/migrate/storage-migration.js";
import { startControlPlane } from "../harness/control-plane.js";
import type { ControlPlane } from "../../tools/testenv/control-plane.js";
import { CLI, startCli, startServe, type ServeProcess } from "../../tools/testenv/operator.js";
import { run, waitFor } from "../../tools/testenv/process.js";
import { REPO_ROOT } from "../../tools/testenv/testbin.js";

const CHART = path.join(REPO_ROOT, "charts/edge-operator");
const RELEASE = "edge";
const RELEASE_NS = "edge-system";
const CRD = "edgeroutes.net.10xdev.io";
const NAMESPACES = ["shop", "blog", "api", "ops"];
const ROUTES = 500;
/** The last routes in the list's (key) order, changed by clients while migrate runs. */
const TOUCH = Array.from({ length: 12 }, (_, i) => `r${496 - 4 * i}`);
const TOUCHED = "migration.test/touched";

let cp: ControlPlane;
let serve: ServeProcess;
/** A kubeconfig bound to exactly the rules the chart's migrate Job gets. */
let migrateKubeconfig: string;

type Json = Record<string, unknown>;
interface Item {
  apiVersion: string;
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    generation: number;
    annotations?: Record<string, string>;
  };
  spec: Json;
}

async function ok(
  what: string,
  p: Promise<{ code: number; stdout: string; stderr: string }>,
): Promise<string> {
  const r = await p;
  if (r.code !== 0)
    throw new Error(
      `${what} failed (${r.code}): ${r.stderr}\n--- serve ---\n${serve?.output().slice(-2000)}`,
    );
  return r.stdout;
}

const kubectl = (args: string[], input?: string) => cp.kubectl(args, input === undefined ? {} : { input });
const helm = (args: string[]) => cp.helm(args);
const helmUpgrade = (...set: string[]) =>
  helm(["upgrade", RELEASE, CHART, "-n", RELEASE_NS, "--reuse-values", ...set.flatMap((s) => ["--set", s])]);

/** The routes: half written by a v1 client, half by a v2 client, many of those with what only v2 can say. */
function routes(): { v1: Json[]; v2: Json[] } {
  const v1: Json[] = [];
  const v2: Json[] = [];
  for (let i = 0; i < ROUTES; i++) {
    const namespace = NAMESPACES[i % NAMESPACES.length] as string;
    const name = `r${String(i).padStart(3, "0")}`;
    const host = `${name}.${namespace}.example.com`;
    if (i < ROUTES / 2) {
      v1.push({
        apiVersion: "net.10xdev.io/v1",
        kind: "EdgeRoute",
        metadata: { name, namespace, labels: { client: "v1" } },
        spec: {
          ...(i % 5 === 0 ? {} : { host }),
          pathPrefix: `/p${i}`,
          service: `svc-${i % 7}`,
          port: 8080 + (i % 3),
          ...(i % 2 === 0 ? { timeoutSeconds: 1 + (i % 30) } : {}),
        },
      });
      continue;
    }
    const rich = i % 3 !== 0; // two thirds use v2-only features
    const rules: Json[] = [
      {
        matches: [
          {
            path: { type: i % 4 === 0 ? "Exact" : "PathPrefix", value: `/v2/${i}` },
            ...(rich && i % 2 === 0 ? { headers: [{ name: "x-canary", value: String(i % 2) }] } : {}),
          },
        ],
        backends: rich
          ? [
              { name: `svc-${i % 7}`, port: 8080, weight: 90 },
              { name: `svc-${i % 7}-canary`, port: 8080, weight: 10 },
            ]
          : [{ name: `svc-${i % 7}`, port: 8080 }],
        ...(i % 5 === 0 ? { timeout: "1500ms" } : i % 5 === 1 ? { timeout: "30s" } : {}),
      },
    ];
    if (rich && i % 3 === 1) {
      rules.push({
        matches: [{ path: { type: "Exact", value: "/healthz" } }],
        backends: [{ name: "health", port: 80 }],
      });
    }
    v2.push({
      apiVersion: "net.10xdev.io/v2",
      kind: "EdgeRoute",
      metadata: { name, namespace, labels: { client: "v2" } },
      spec: { hostnames: rich && i % 2 === 1 ? [host, `www.${host}`] : [host], rules },
    });
  }
  return { v1, v2 };
}

/** Every route in one version, sorted, without what legitimately moves on a write (resourceVersion, managedFields). */
async function dump(version: "v1" | "v2"): Promise<Map<string, string>> {
  const out = await ok(
    `kubectl get ${version}`,
    kubectl(["get", `edgeroutes.${version}.net.10xdev.io`, "-A", "-o", "json"]),
  );
  const items = (JSON.parse(out) as { items: (Item & { metadata: Json })[] }).items;
  const byKey = new Map<string, string>();
  for (const o of items) {
    const { resourceVersion: _rv, managedFields: _mf, ...metadata } = o.metadata;
    // The clients' own change made during the migration (checked on its own).
    const { [TOUCHED]: _touched, ...annotations } = o.metadata.annotations ?? {};
    if (_touched !== undefined) {
      if (Object.keys(annotations).length > 0) metadata.annotations = annotations;
      else delete metadata.annotations;
    }
    byKey.set(
      `${o.metadata.namespace}/${o.metadata.name}`,
      JSON.stringify({ ...o, metadata }, (_k, v: unknown) => sortKeys(v)),
    );
  }
  return new Map([...byKey].sort(([a], [b]) => a.localeCompare(b)));
}

/**
 * A v1 object's annotation read for what it means: the v2 spec that v1 → v2
 * gives. A v1 client's edit made while storage was v1 leaves the annotation as
 * it was (the edited v1 fields win over it on conversion); once stored as v2,
 * v1 reads carry an annotation rebuilt from the v2 spec. Same meaning, other bytes.
 */
function meaning(v1Json: string): string {
  const o = JSON.parse(v1Json) as EdgeRouteV1;
  const { [V2_SPEC_ANNOTATION]: _bytes, ...annotations } = o.metadata.annotations ?? {};
  return JSON.stringify(
    { ...o, metadata: { ...o.metadata, annotations }, v2: toV2(o).spec },
    (_k, v: unknown) => sortKeys(v),
  );
}

function sortKeys(v: unknown): unknown {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return v;
  return Object.fromEntries(Object.entries(v as Json).sort(([a], [b]) => a.localeCompare(b)));
}

/** What etcd holds for EdgeRoutes, read through etcd's v3 JSON gateway: key → apiVersion of the stored bytes. */
async function stored(): Promise<Map<string, string>> {
  const b64 = (s: string) => Buffer.from(s).toString("base64");
  const prefix = "/registry/net.10xdev.io/edgeroutes/";
  const res = await fetch(`${cp.etcdEndpoint}/v3/kv/range`, {
    method: "POST",
    body: JSON.stringify({ key: b64(prefix), range_end: b64(prefix.slice(0, -1) + "0") }),
  });
  expect(res.status).toBe(200);
  const body = (await res.json()) as { kvs?: { key: string; value: string }[] };
  const out = new Map<string, string>();
  for (const kv of body.kvs ?? []) {
    const key = Buffer.from(kv.key, "base64").toString("utf8").slice(prefix.length);
    out.set(
      key,
      (JSON.parse(Buffer.from(kv.value, "base64").toString("utf8")) as { apiVersion: string }).apiVersion,
    );
  }
  return out;
}

function countBy(m: Map<string, string>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const v of m.values()) out[v] = (out[v] ?? 0) + 1;
  return out;
}

async function storedVersions(): Promise<string[]> {
  const out = await ok("get crd", kubectl(["get", "crd", CRD, "-o", "jsonpath={.status.storedVersions}"]));
  return JSON.parse(out) as string[];
}

function migrate(args: string[], kubeconfig = migrateKubeconfig) {
  return run(process.execPath, [CLI, "migrate", "--kubeconfig", kubeconfig, ...args], { timeoutMs: 170_000 });
}

let before: { v1: Map<string, string>; v2: Map<string, string> };
let keys: string[];

beforeAll(async () => {
  cp = await startControlPlane();
  serve = await startServe({ args: ["--kubeconfig", cp.kubeconfig] });
  // The chart's migrate Job's own RBAC, as helm renders it: the migration below runs with it and nothing more.
  const rendered = await ok(
    "helm template",
    helm([
      "template",
      RELEASE,
      CHART,
      "-n",
      RELEASE_NS,
      "--kube-version",
      "1.36.3",
      "--set",
      "migration.job.enabled=true",
      "--show-only",
      "templates/migrate-hook.yaml",
    ]),
  );
  const role = parseAllDocuments(rendered)
    .map((d) => d.toJS() as { kind?: string; rules?: V1PolicyRule[] })
    .find((d) => d.kind === "ClusterRole");
  if (!role?.rules) throw new Error("the chart renders no ClusterRole for the migrate Job");
  migrateKubeconfig = await cp.restrictedKubeconfig("edge-migrate", role.rules);
});

afterAll(async () => {
  await serve?.stop();
  await cp?.stop();
});

describe("the migrate hook Job in the chart", () => {
  it("is a post-upgrade hook running `edge-operator migrate`, only when enabled and only in cluster", async () => {
    const render = async (...set: string[]) =>
      parseAllDocuments(
        await ok(
          "helm template",
          helm([
            "template",
            RELEASE,
            CHART,
            "-n",
            RELEASE_NS,
            "--kube-version",
            "1.36.3",
            ...set.flatMap((s) => ["--set", s]),
          ]),
        ),
      )
        .map(
          (d) =>
            d.toJS() as {
              kind?: string;
              metadata?: { name?: string; annotations?: Record<string, string> };
              spec?: Json;
            },
        )
        .filter((d) => d?.kind === "Job" && d.metadata?.name === "edge-edge-operator-migrate");
    expect(await render()).toEqual([]);
    const [job] = await render("migration.job.enabled=true", "migration.job.concurrency=4");
    expect(job?.metadata?.annotations?.["helm.sh/hook"]).toBe("post-upgrade");
    const container = (job?.spec as { template: { spec: { containers: { args: string[] }[] } } }).template
      .spec.containers[0];
    expect(container?.args).toEqual(["migrate", "--page-size=500", "--concurrency=4"]);
    expect(
      await render(
        "migration.job.enabled=true",
        "webhook.urlOverride=https://127.0.0.1:9443",
        "webhook.caBundle=Q0E=",
      ),
    ).toEqual([]);
  });
});

describe("storage migration v1 → v2, with helm and kubectl", () => {
  it("installs the chart out of cluster, storage on v1, and takes 500 routes from v1 and v2 clients", async () => {
    // An install from before v2 became the chart's default storage version.
    await ok(
      "helm install",
      helm([
        "install",
        RELEASE,
        CHART,
        "-n",
        RELEASE_NS,
        "--create-namespace",
        "--set",
        `webhook.urlOverride=${serve.url}`,
        "--set",
        `webhook.caBundle=${serve.caBundle}`,
        "--set",
        "crd.storageVersion=v1",
      ]),
    );
    await ok("wait crd", kubectl(["wait", "--for=condition=Established", `crd/${CRD}`, "--timeout=60s"]));
    await waitFor("v2 served through /convert", async () =>
      (await kubectl(["get", "edgeroutes.v2.net.10xdev.io", "-A"])).code === 0 ? true : undefined,
    );
    for (const ns of NAMESPACES) await ok(`create ns ${ns}`, kubectl(["create", "namespace", ns]));

    const { v1, v2 } = routes();
    const half = (xs: Json[], k: number) => xs.filter((_, i) => i % 2 === k);
    // Four clients at once: two speak v1, two speak v2.
    await Promise.all(
      [half(v1, 0), half(v1, 1), half(v2, 0), half(v2, 1)].map((batch, i) =>
        ok(
          `kubectl create batch ${i}`,
          kubectl(["create", "-f", "-"], batch.map((o) => toYaml(o)).join("---\n")),
        ),
      ),
    );
    // A v1 client edits routes that say more than v1 can: what it cannot see is kept.
    for (const name of ["r253", "r256"]) {
      const ns = NAMESPACES[Number(name.slice(1)) % NAMESPACES.length] as string;
      await ok(
        "v1 patch",
        kubectl([
          "patch",
          "edgeroutes.v1.net.10xdev.io",
          name,
          "-n",
          ns,
          "--type=merge",
          "-p",
          '{"spec":{"port":9090}}',
        ]),
      );
      const got = JSON.parse(
        await ok("get v2", kubectl(["get", "edgeroutes.v2.net.10xdev.io", name, "-n", ns, "-o", "json"])),
      ) as Item;
      const rules = got.spec.rules as { backends: { port: number; weight: number }[] }[];
      expect(rules[0]?.backends.map((b) => [b.port, b.weight])).toEqual([
        [9090, 90],
        [8080, 10],
      ]);
      expect(rules).toHaveLength(2);
    }

    const etcd = await stored();
    expect(etcd.size).toBe(ROUTES);
    expect(countBy(etcd)).toEqual({ "net.10xdev.io/v1": ROUTES });
    expect(await storedVersions()).toEqual(["v1"]);
    keys = [...etcd.keys()].sort();
    before = { v1: await dump("v1"), v2: await dump("v2") };
    const v1Items = [...before.v1.values()].map((j) => JSON.parse(j) as Item);
    expect(v1Items).toHaveLength(ROUTES);
    // The v2-only features ride in the annotation on the v1 side.
    expect(
      v1Items.filter((o) => o.metadata.annotations?.["net.10xdev.io/v2-spec"] !== undefined).length,
    ).toBeGreaterThan(100);
  }, 300_000);

  it("with storage still on v1 there is nothing to migrate", async () => {
    const r = await migrate(["--dry-run"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe(
      "dry run: nothing to migrate: status.storedVersions is [v1], every EdgeRoute is stored as net.10xdev.io/v1",
    );
  });

  it("helm upgrade switches storage to v2: new writes are v2, old objects stay v1 until migrated", async () => {
    await ok("helm upgrade storage v2", helmUpgrade("crd.storageVersion=v2"));
    expect(await storedVersions()).toEqual(["v1", "v2"]);
    // Discovery publishes the hash of the version the apiserver now writes: migrate waits for this.
    const want = storageVersionHash("net.10xdev.io", "v2", "EdgeRoute");
    await waitFor("discovery to show storage v2", async () => {
      const d = JSON.parse(await ok("discovery", kubectl(["get", "--raw", "/apis/net.10xdev.io/v1"]))) as {
        resources: { name: string; storageVersionHash?: string }[];
      };
      return d.resources.find((r) => r.name === "edgeroutes")?.storageVersionHash === want ? true : undefined;
    });
    expect(countBy(await stored())).toEqual({ "net.10xdev.io/v1": ROUTES });
  });

  it("--dry-run says what it would do and writes nothing", async () => {
    const r = await migrate(["--dry-run", "--page-size", "100"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe(
      `dry run: would rewrite ${ROUTES} EdgeRoutes in ${NAMESPACES.length} namespaces to net.10xdev.io/v2, ` +
        "then set status.storedVersions [v1, v2] → [v2]; nothing was written",
    );
    expect(countBy(await stored())).toEqual({ "net.10xdev.io/v1": ROUTES });
    expect(await storedVersions()).toEqual(["v1", "v2"]);
  });

  it("fails with exit 1 and a one-line reason, and trims nothing, when it may not write", async () => {
    const readOnly = await cp.restrictedKubeconfig("edge-migrate-read-only", [
      { apiGroups: ["net.10xdev.io"], resources: ["edgeroutes"], verbs: ["get", "list"] },
      { apiGroups: ["apiextensions.k8s.io"], resources: ["customresourcedefinitions"], verbs: ["get"] },
    ]);
    const r = await migrate([], readOnly);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toMatch(
      /^edge-operator migrate: rewriting EdgeRoute [a-z]+\/r\d{3} failed: PUT \/apis\/net\.10xdev\.io\/v2\/namespaces\/[a-z]+\/edgeroutes\/r\d{3}: 403 .*User "edge-migrate-read-only" cannot update resource "edgeroutes"[^\n]*\n$/,
    );
    expect(countBy(await stored())).toEqual({ "net.10xdev.io/v1": ROUTES });
    expect(await storedVersions()).toEqual(["v1", "v2"]);
  });

  it("refuses to drop v1 while status.storedVersions holds it: the apiserver, and the chart before it stops serving v1", async () => {
    const crd = JSON.parse(await ok("get crd", kubectl(["get", "crd", CRD, "-o", "json"]))) as {
      spec: { versions: { name: string }[] };
    };
    crd.spec.versions = crd.spec.versions.filter((v) => v.name !== "v1");
    const replace = await kubectl(["replace", "-f", "-"], JSON.stringify(crd));
    expect(replace.code).not.toBe(0);
    expect(replace.stderr, replace.stderr).toContain(
      `The CustomResourceDefinition "${CRD}" is invalid: status.storedVersions[0]: Invalid value: "v1": ` +
        "missing from spec.versions; v1 was previously a storage version, and must remain in spec.versions until a storage " +
        "migration ensures no data remains persisted in v1 and removes v1 from status.storedVersions",
    );
    const unserve = await helmUpgrade("crd.v1.served=false");
    expect(unserve.code).not.toBe(0);
    expect(unserve.stderr).toContain(
      `crd.v1.served=false refused: status.storedVersions of ${CRD} is [v1 v2], so some routes may still be stored as v1; ` +
        "run `edge-operator migrate`",
    );
    expect(await storedVersions()).toEqual(["v1", "v2"]);
  });

  it("migrate killed halfway leaves storedVersions alone; run again it completes, nothing lost or duplicated", async () => {
    const first = startCli("migrate", [
      "migrate",
      "--kubeconfig",
      migrateKubeconfig,
      "--page-size",
      "25",
      "--concurrency",
      "1",
      "--progress-every",
      "40",
    ]);
    await waitFor(
      "a progress line",
      async () => (/migrate: rewrote \d+ of ~500/.test(first.output()) ? true : undefined),
      60_000,
      20,
    );
    await first.kill();
    expect(first.output()).not.toContain("migrated ");

    const halfway = countBy(await stored());
    expect(halfway["net.10xdev.io/v2"], JSON.stringify(halfway)).toBeGreaterThanOrEqual(40);
    expect(halfway["net.10xdev.io/v1"], JSON.stringify(halfway)).toBeGreaterThan(0);
    expect(await storedVersions()).toEqual(["v1", "v2"]);

    // The second run takes the whole list in one page, then writes one object at a time;
    // meanwhile v1 and v2 clients change the last routes in the list. The migration's
    // writes carry the resourceVersion they read, so they meet a conflict, re-read,
    // and the clients' changes stay.
    const second = startCli("migrate", [
      "migrate",
      "--kubeconfig",
      migrateKubeconfig,
      "--page-size",
      "500",
      "--concurrency",
      "1",
      "--progress-every",
      "50",
    ]);
    await waitFor(
      "a progress line",
      async () => (/migrate: rewrote \d+ of ~500/.test(second.output()) ? true : undefined),
      60_000,
      20,
    );
    await Promise.all(
      (["v1", "v2"] as const).map((v, k) =>
        ok(
          `annotate through ${v}`,
          kubectl([
            "annotate",
            `edgeroutes.${v}.net.10xdev.io`,
            "-n",
            "shop",
            ...TOUCH.filter((_, i) => i % 2 === k),
            `${TOUCHED}=${v}`,
          ]),
        ),
      ),
    );
    expect(await second.exited, second.output()).toBe(0);
    expect(second.output()).toMatch(
      /migrated 500 EdgeRoutes to net\.10xdev\.io\/v2 in [\d.]+ s \(\d+\/s; \d+ conflicts re-read\); status\.storedVersions \[v1, v2\] → \[v2\]\n/,
    );
    for (const [i, name] of TOUCH.entries()) {
      const got = await ok(
        "get",
        kubectl([
          "get",
          "edgeroutes.v2.net.10xdev.io",
          name,
          "-n",
          "shop",
          "-o",
          `jsonpath={.metadata.annotations.migration\\.test/touched}`,
        ]),
      );
      expect(got, name).toBe(i % 2 === 0 ? "v1" : "v2");
    }

    expect(await storedVersions()).toEqual(["v2"]);
    const etcd = await stored();
    expect([...etcd.keys()].sort()).toEqual(keys);
    expect(countBy(etcd)).toEqual({ "net.10xdev.io/v2": ROUTES });
  }, 240_000);

  it("both versions read as before: specs, labels, annotations, finalizers, uids, generations", async () => {
    const after = { v1: await dump("v1"), v2: await dump("v2") };
    expect([...after.v2.keys()]).toEqual([...before.v2.keys()]);
    expect([...after.v2.values()].join("\n")).toBe([...before.v2.values()].join("\n"));
    // v1: byte for byte too. The two routes a v1 client edited while storage was v1
    // (blog/r253, shop/r256) had their v2-spec annotation refreshed by the mutating
    // webhook at the edit, so the annotation v1 shows after migration is the same text.
    const differ = [...before.v1.keys()].filter((k) => after.v1.get(k) !== before.v1.get(k));
    expect(differ).toEqual([]);
    for (const k of ["blog/r253", "shop/r256"])
      expect(meaning(after.v1.get(k) ?? "")).toBe(meaning(before.v1.get(k) ?? ""));
  });

  it("a third run has nothing to do", async () => {
    const r = await migrate([]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe(
      "nothing to migrate: status.storedVersions is [v2], every EdgeRoute is stored as net.10xdev.io/v2",
    );
  });

  it("v1 clients keep working while v1 is served, and are warned once it is deprecated", async () => {
    await ok("helm upgrade deprecate v1", helmUpgrade("crd.v1.deprecated=true"));
    const ns = "shop";
    const patched = await kubectl([
      "patch",
      "edgeroutes.v1.net.10xdev.io",
      "r000",
      "-n",
      ns,
      "--type=merge",
      "-p",
      '{"spec":{"timeoutSeconds":42}}',
    ]);
    expect(patched.code, patched.stderr).toBe(0);
    expect(patched.stderr).toContain(
      "Warning: net.10xdev.io/v1 EdgeRoute is deprecated; use net.10xdev.io/v2",
    );
    const v2 = await ok(
      "get",
      kubectl([
        "get",
        "edgeroutes.v2.net.10xdev.io",
        "r000",
        "-n",
        ns,
        "-o",
        "jsonpath={.spec.rules[0].timeout}",
      ]),
    );
    expect(v2).toBe("42s");
    expect((await stored()).get(`${ns}/r000`)).toBe("net.10xdev.io/v2");
  });

  it("v1 no longer served: v2 reads every route, a v1 request gets a clear error", async () => {
    await ok("helm upgrade unserve v1", helmUpgrade("crd.v1.served=false"));
    const served = await ok(
      "get crd",
      kubectl(["get", "crd", CRD, "-o", "jsonpath={.spec.versions[*].served}"]),
    );
    expect(served).toBe("false true");
    await waitFor("v1 to be gone from discovery", async () =>
      (await kubectl(["get", "--raw", "/apis/net.10xdev.io/v1"])).code !== 0 ? true : undefined,
    );

    const names = await ok("get v2", kubectl(["get", "edgeroutes.v2.net.10xdev.io", "-A", "-o", "name"]));
    expect(names.trim().split("\n")).toHaveLength(ROUTES);
    const raw = await kubectl(["get", "--raw", "/apis/net.10xdev.io/v1/namespaces/shop/edgeroutes/r000"]);
    expect(raw.code).not.toBe(0);
    expect(raw.stderr).toContain(
      "Error from server (NotFound): the server could not find the requested resource",
    );
    const typed = await kubectl(["get", "edgeroutes.v1.net.10xdev.io", "-A"]);
    expect(typed.code).not.toBe(0);
    expect(typed.stderr).toMatch(
      /the server doesn't have a resource type "edgeroutes"|could not find the requested resource/,
    );
    const create = await kubectl(
      ["create", "-f", "-"],
      toYaml({
        apiVersion: "net.10xdev.io/v1",
        kind: "EdgeRoute",
        metadata: { name: "late", namespace: "shop" },
        spec: { pathPrefix: "/", service: "web", port: 80 },
      }),
    );
    expect(create.code).not.toBe(0);
    expect(create.stderr).toContain(
      "the server could not find the requested resource (post edgeroutes.net.10xdev.io)",
    );
  });
});
