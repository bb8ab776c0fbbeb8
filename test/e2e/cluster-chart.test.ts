// The chart's whole life in a real single-node cluster, with the operator in
// pods from the image built here (npm run image), driven as a user drives it:
// helm and kubectl. `helm install` with the defaults (image and the memory sink aside); `helm
// test`; the admission suite's invalid routes refused and the route lifecycle
// through the in-cluster operator; the leader watcher's pod deleted in a burst
// of creates; a server pod deleted during applies; `helm upgrade` to a new
// image tag, with the storage-migration hook, during applies; `helm uninstall`.
// The tests run in order and share one cluster and one release.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify as toYaml } from "yaml";
import type { EdgeRouteV2 } from "../../src/api/types.js";
import { FINALIZER } from "../../src/api/types.js";
import type { KubeClient } from "../../src/kube/client.js";
import { clusterUnsupported, startCluster, type Cluster } from "../../tools/testenv/cluster.js";
import { buildOperatorImage, type OperatorImage } from "../../tools/testenv/image.js";
import {
  CHART,
  componentPods,
  helmInstall,
  imageValues,
  release,
} from "../../tools/testenv/operator-in-cluster.js";
import { must, waitFor } from "../../tools/testenv/process.js";
import { invalid, NS as ADMISSION_NS } from "../integration/admission-routes.js";
import { service, v1Route, v2Route } from "../integration/routes.js";

const unsupported = clusterUnsupported();
if (unsupported && !process.env.CI)
  process.stderr.write(`\n!!! SKIPPING THE CHART-IN-CLUSTER TESTS: ${unsupported} !!!\n\n`);

const rel = release();
const CRD = "edgeroutes.net.10xdev.io";
const ROUTES = "/apis/net.10xdev.io/v2";
let cluster: Cluster;
let image: OperatorImage;
let kube: KubeClient;

const kubectl = (args: string[], input?: string) =>
  cluster.kubectl(args, input === undefined ? {} : { input });
const applyYaml = (...objects: object[]) =>
  must("kubectl apply", kubectl(["apply", "-f", "-"], objects.map((o) => toYaml(o)).join("---\n")));

function explain(r: { code: number; stdout: string; stderr: string }): string {
  return `exit ${r.code}\nstdout: ${r.stdout.slice(-2000)}\nstderr: ${r.stderr.slice(-2000)}`;
}

async function json<T>(args: string[]): Promise<T> {
  return JSON.parse(await must(`kubectl ${args.join(" ")}`, kubectl([...args, "-o", "json"]))) as T;
}

async function namespace(name: string): Promise<void> {
  if ((await kubectl(["get", "namespace", name])).code !== 0)
    await must(`create namespace ${name}`, kubectl(["create", "namespace", name]));
  await applyYaml(service("checkout", name));
}

async function listRoutes(ns?: string): Promise<EdgeRouteV2[]> {
  const where = ns ? `/namespaces/${ns}` : "";
  return (
    await kube.json<{ items: EdgeRouteV2[] }>("GET", `${ROUTES}${where}/edgeroutes`, { timeoutMs: 30_000 })
  ).items;
}

const condition = (r: EdgeRouteV2, type: string): string | undefined =>
  r.status?.conditions?.find((c) => c.type === type)?.status;

/** Server-side apply of a v2 route through the apiserver, so through /mutate and /validate. */
function applyRoute(ns: string, name: string, i: number): Promise<unknown> {
  const route = v2Route(name, { namespace: ns, path: `/${name}/${i % 5}`, port: 8080 });
  return kube.json("PATCH", `${ROUTES}/namespaces/${ns}/edgeroutes/${name}`, {
    query: { fieldManager: "e2e-load", force: true },
    contentType: "application/apply-patch+yaml",
    body: route,
    timeoutMs: 30_000,
  });
}

interface Load {
  done: number;
  failures: string[];
  stop(): void;
  finished: Promise<void>;
}

/**
 * `total` applies (or more, until stop(), at most `max`), `workers` at a time,
 * over `names` route names; every failure is kept with its message.
 */
function startLoad(ns: string, opts: { total: number; max?: number; workers: number; names: number }): Load {
  const deadline = Date.now() + 8 * 60_000;
  let next = 0;
  let stopped = false;
  const load: Load = {
    done: 0,
    failures: [],
    stop: () => (stopped = true),
    finished: Promise.resolve(),
  };
  const limit = opts.max ?? opts.total;
  const worker = async (): Promise<void> => {
    for (;;) {
      const more = next < opts.total || (!stopped && next < limit);
      if (!more || Date.now() > deadline) return;
      const i = next++;
      try {
        await applyRoute(ns, `load-${i % opts.names}`, i);
      } catch (e) {
        load.failures.push(`apply ${i}: ${(e as Error).message}`);
      }
      load.done++;
    }
  };
  load.finished = Promise.all(Array.from({ length: opts.workers }, worker)).then(() => undefined);
  return load;
}

async function allPodsReady(): Promise<void> {
  await waitFor(
    "every pod of the release Ready",
    async () => {
      const pods = [
        ...(await componentPods(cluster, rel, "server")),
        ...(await componentPods(cluster, rel, "watcher")),
      ];
      return pods.length === 4 && pods.every((p) => p.ready && !p.terminating) ? true : undefined;
    },
    180_000,
    1000,
  );
}

describe.skipIf(unsupported !== undefined && !process.env.CI)("the chart in a real cluster", () => {
  beforeAll(async () => {
    cluster = await startCluster({
      progress: (l) => process.stderr.write(`cluster: ${l}\n`),
      waitForOtherMs: 900_000,
    });
    kube = cluster.kube();
    image = await buildOperatorImage();
    await cluster.ctrImport(image.tar);
  }, 1_800_000);

  afterAll(async () => {
    await cluster?.stop();
  }, 120_000);

  it("runs `edge-operator --help` to completion in a pod of the image", async () => {
    const pod = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "image-help", namespace: "default" },
      spec: {
        restartPolicy: "Never",
        automountServiceAccountToken: false,
        containers: [{ name: "main", image: image.ref, imagePullPolicy: "Never" }],
      },
    };
    await applyYaml(pod);
    const phase = await waitFor(
      "the pod to finish",
      async () => {
        const p = await json<{ status: { phase?: string } }>(["get", "pod", "image-help", "-n", "default"]);
        return p.status.phase === "Succeeded" || p.status.phase === "Failed" ? p.status.phase : undefined;
      },
      120_000,
      500,
    );
    const logs = await must("kubectl logs", kubectl(["logs", "image-help", "-n", "default"]));
    expect(phase, logs).toBe("Succeeded");
    expect(logs).toMatch(/\bserve\b/);
    expect(logs).toMatch(/\bwatch\b/);
    const uid = await must(
      "kubectl get pod",
      kubectl([
        "get",
        "pod",
        "image-help",
        "-n",
        "default",
        "-o",
        "jsonpath={.status.containerStatuses[0].state.terminated.exitCode}",
      ]),
    );
    expect(uid).toBe("0");
    await kubectl(["delete", "pod", "image-help", "-n", "default", "--wait=false"]);
  });

  it("helm install with the defaults: every pod Ready, the serving Secret made by the server, its CA injected", async () => {
    const started = performance.now();
    // The memory sink stands in for a data plane: these routes go Programmed
    // with no proxy running. The chart's default, the xds sink, says
    // NoDataPlane until a client connects (cluster-xds.test.ts runs one).
    // Storage on v1, as an install from before v2 became the default: the
    // upgrade test below migrates it with the chart's hook.
    await helmInstall(cluster, rel, image, [
      "--set",
      "dataPlane.sink=memory",
      "--set",
      "crd.storageVersion=v1",
    ]);
    await allPodsReady();
    const seconds = (performance.now() - started) / 1000;
    process.stderr.write(`install to all pods Ready: ${seconds.toFixed(1)} s\n`);

    // On 1.36 the finalizer is the apiserver's (webhook.finalizerPolicy: auto), and the
    // post-install Job held the install until a create passed it: a create right after
    // is admitted, with the finalizer. The Job and its right to create routes are gone.
    const policy = await kubectl([
      "get",
      "mutatingadmissionpolicy",
      `${rel.fullname}-finalizer`,
      "-o",
      "name",
    ]);
    expect(policy.code, policy.stderr).toBe(0);
    const first = await kubectl(
      ["create", "-f", "-", "-o", "jsonpath={.metadata.finalizers}"],
      toYaml(v2Route("first", { namespace: "default" })),
    );
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toBe(`["${FINALIZER}"]`);
    expect((await kubectl(["delete", "edgeroute", "first", "-n", "default", "--wait=false"])).code).toBe(0);
    for (const [kind, ns] of [
      ["job", rel.namespace],
      ["serviceaccount", rel.namespace],
      ["role", "default"],
      ["rolebinding", "default"],
    ] as const) {
      const gone = await kubectl(["get", kind, `${rel.fullname}-admission-wait`, "-n", ns]);
      expect(gone.stderr, `${kind} ${rel.fullname}-admission-wait`).toContain("NotFound");
    }
    // Gone because it ran to its end: its events outlive it (an hour by default).
    const completed = await kubectl([
      "get",
      "events",
      "-n",
      rel.namespace,
      "--field-selector",
      `involvedObject.kind=Job,involvedObject.name=${rel.fullname}-admission-wait,reason=Completed`,
      "-o",
      "name",
    ]);
    expect(completed.code, completed.stderr).toBe(0);
    expect(completed.stdout.trim().split("\n").filter(Boolean)).toHaveLength(1);

    const secret = await json<{
      data: Record<string, string>;
      metadata: {
        labels?: Record<string, string>;
        managedFields?: { manager: string }[];
        ownerReferences?: { kind: string; name: string }[];
      };
    }>(["get", "secret", `${rel.fullname}-tls`, "-n", rel.namespace, "--show-managed-fields"]);
    // Made by the server at run time, not rendered by helm.
    expect(secret.metadata.labels?.["app.kubernetes.io/managed-by"]).not.toBe("Helm");
    expect(secret.metadata.managedFields?.map((f) => f.manager) ?? []).not.toContain("helm");
    // Owned by the chart's Service, so that `helm uninstall` takes it too.
    expect(secret.metadata.ownerReferences?.map((o) => `${o.kind}/${o.name}`)).toEqual([
      `Service/${rel.fullname}`,
    ]);
    const ca = secret.data["ca.crt"] ?? "";
    expect(Buffer.from(ca, "base64").toString()).toContain("BEGIN CERTIFICATE");
    for (const k of ["tls.crt", "tls.key"]) expect(secret.data[k]?.length ?? 0).toBeGreaterThan(100);

    const bundles = async (): Promise<string[]> => {
      const v = await json<{ webhooks: { clientConfig: { caBundle?: string } }[] }>([
        "get",
        "validatingwebhookconfiguration",
        `${rel.fullname}-validate`,
      ]);
      const m = await json<{ webhooks: { clientConfig: { caBundle?: string } }[] }>([
        "get",
        "mutatingwebhookconfiguration",
        `${rel.fullname}-mutate`,
      ]);
      const crd = await json<{
        spec: { conversion?: { webhook?: { clientConfig?: { caBundle?: string } } } };
      }>(["get", "crd", CRD]);
      return [
        ...v.webhooks.map((w) => w.clientConfig.caBundle ?? ""),
        ...m.webhooks.map((w) => w.clientConfig.caBundle ?? ""),
        crd.spec.conversion?.webhook?.clientConfig?.caBundle ?? "",
      ];
    };
    const injected = await waitFor(
      "the CA in both webhook registrations and the CRD's conversion",
      async () => {
        const b = await bundles();
        return b.length >= 3 && b.every((x) => x === ca) ? b : undefined;
      },
      60_000,
      500,
    ).catch(async (e: Error) => {
      throw new Error(`${e.message}: ${JSON.stringify(await bundles())}`);
    });
    expect(injected.length).toBeGreaterThanOrEqual(3);
  });

  it("helm test passes with a real test pod", async () => {
    const r = await cluster.helm(["test", rel.name, "-n", rel.namespace, "--timeout", "3m"]);
    expect(r.code, explain(r)).toBe(0);
    expect(r.stdout).toMatch(/Phase:\s+Succeeded/);
  });

  it("refuses the admission suite's invalid routes through the in-cluster webhooks", async () => {
    await namespace(ADMISSION_NS);
    expect(invalid.length).toBeGreaterThanOrEqual(15);
    for (const { name, obj, by, expect: words } of invalid) {
      const r = await kubectl(["apply", "-f", "-"], toYaml(obj));
      expect(r.code, `${name}: ${explain(r)}`).toBe(1);
      for (const w of words) expect(r.stderr, name).toContain(w);
      if (by === "webhook")
        expect(r.stderr, name).toContain(
          `admission webhook "validate.edgeroutes.net.10xdev.io" denied the request`,
        );
      expect((await kubectl(["get", "edgeroute", name, "-n", ADMISSION_NS])).code, `${name} was stored`).toBe(
        1,
      );
    }
  });

  it("plays the route lifecycle and reads v1 and v2 side by side through the operator in pods", async () => {
    const ns = "lifecycle";
    if ((await kubectl(["get", "namespace", ns])).code !== 0)
      await must("ns", kubectl(["create", "namespace", ns]));
    await applyYaml(v1Route("shop", { namespace: ns, service: "checkout" }));
    const read = () =>
      kube.json<EdgeRouteV2>("GET", `${ROUTES}/namespaces/${ns}/edgeroutes/shop`, { timeoutMs: 30_000 });
    const reason = (r: EdgeRouteV2, t: string) => r.status?.conditions?.find((c) => c.type === t)?.reason;
    await waitFor("Accepted=False(ServiceNotFound)", async () =>
      reason(await read(), "Accepted") === "ServiceNotFound" ? true : undefined,
    );
    expect(condition(await read(), "Programmed")).toBe("False");
    await applyYaml(service("checkout", ns));
    await waitFor(
      "Accepted=True Programmed=True after the Service appears",
      async () => {
        const r = await read();
        return condition(r, "Accepted") === "True" && condition(r, "Programmed") === "True"
          ? true
          : undefined;
      },
      60_000,
      250,
    );
    expect((await read()).metadata.finalizers).toContain(FINALIZER);

    await applyYaml({
      ...v2Route("canary", { namespace: ns }),
      spec: {
        hostnames: ["canary.example.com"],
        rules: [
          {
            matches: [{ path: { type: "PathPrefix", value: "/" } }],
            backends: [
              { name: "checkout", port: 8080, weight: 90 },
              { name: "checkout", port: 8081, weight: 10 },
            ],
          },
        ],
      },
    });
    const asV1 = await json<{ apiVersion: string; spec: { host: string; service: string } }>([
      "get",
      "edgeroutes.v1.net.10xdev.io",
      "canary",
      "-n",
      ns,
    ]);
    expect(asV1.apiVersion).toBe("net.10xdev.io/v1");
    expect(asV1.spec.host).toBe("canary.example.com");
    const asV2 = await json<EdgeRouteV2>(["get", "edgeroutes.v2.net.10xdev.io", "shop", "-n", ns]);
    expect(asV2.spec.hostnames).toEqual(["shop.example.com"]);

    await must("delete", kubectl(["delete", "edgeroutes", "--all", "-n", ns, "--wait=false"]));
    await waitFor(
      "the routes gone (finalizer released after deprogramming)",
      async () => ((await listRoutes(ns)).length === 0 ? true : undefined),
      60_000,
      250,
    );
  });

  it("converges with no finalizer left when the leader watcher's pod is deleted in a burst of 300 creates", async () => {
    const ns = "burst";
    await namespace(ns);
    const lease = await json<{ spec: { holderIdentity?: string } }>([
      "get",
      "lease",
      `${rel.fullname}-watcher`,
      "-n",
      rel.namespace,
    ]);
    const leaderPod = (lease.spec.holderIdentity ?? "").split("_")[0] ?? "";
    const watchers = await componentPods(cluster, rel, "watcher");
    expect(watchers.map((p) => p.name)).toContain(leaderPod);

    const load = startLoad(ns, { total: 300, workers: 6, names: 300 });
    await waitFor("100 creates", async () => (load.done >= 100 ? true : undefined), 120_000, 50);
    await must(
      "delete the leader's pod",
      kubectl(["delete", "pod", leaderPod, "-n", rel.namespace, "--wait=false"]),
    );
    const doneAtDelete = load.done;
    await load.finished;
    expect(load.failures).toEqual([]);
    expect(doneAtDelete).toBeLessThan(300);

    const newLeader = await waitFor(
      "another watcher to lead",
      async () => {
        const l = await json<{ spec: { holderIdentity?: string } }>([
          "get",
          "lease",
          `${rel.fullname}-watcher`,
          "-n",
          rel.namespace,
        ]);
        const pod = (l.spec.holderIdentity ?? "").split("_")[0];
        return pod && pod !== leaderPod ? pod : undefined;
      },
      120_000,
      500,
    );
    expect(newLeader).not.toBe(leaderPod);
    await waitFor(
      "all 300 routes Accepted and Programmed",
      async () => {
        const routes = await listRoutes(ns);
        const ok = routes.filter(
          (r) => condition(r, "Accepted") === "True" && condition(r, "Programmed") === "True",
        );
        return routes.length === 300 && ok.length === 300 ? true : undefined;
      },
      240_000,
      1000,
    );
    await must("delete the routes", kubectl(["delete", "edgeroutes", "--all", "-n", ns, "--wait=false"]));
    await waitFor(
      "every route deleted (no finalizer left)",
      async () => ((await listRoutes(ns)).length === 0 ? true : undefined),
      240_000,
      1000,
    ).catch(async (e: Error) => {
      const left = await listRoutes(ns);
      throw new Error(`${e.message}: ${left.length} left, e.g. ${JSON.stringify(left[0]?.metadata)}`);
    });
    await allPodsReady();
  });

  it("admits every one of 300 applies while a server pod is deleted", async () => {
    const ns = "server-loss";
    await namespace(ns);
    const servers = await componentPods(cluster, rel, "server");
    expect(servers.filter((p) => p.ready).length).toBe(2);
    const victim = servers[0]?.name ?? "";
    const load = startLoad(ns, { total: 300, workers: 4, names: 60 });
    await waitFor("50 applies", async () => (load.done >= 50 ? true : undefined), 120_000, 50);
    await must(
      "delete a server pod",
      kubectl(["delete", "pod", victim, "-n", rel.namespace, "--wait=false"]),
    );
    const doneAtDelete = load.done;
    // The pod is gone (its endpoints removed) while applies still run.
    await waitFor(
      "the deleted server pod gone",
      async () =>
        (await componentPods(cluster, rel, "server")).some((p) => p.name === victim) ? undefined : true,
      120_000,
      250,
    );
    const doneAtGone = load.done;
    await load.finished;
    process.stderr.write(
      `server pod deleted after ${doneAtDelete} applies, gone after ${doneAtGone}; ${load.done} in all\n`,
    );
    expect(load.failures).toEqual([]);
    expect(doneAtDelete).toBeLessThan(300);
    await allPodsReady();
  });

  it("admits every apply during helm upgrade to a new image tag, and the migration hook leaves storedVersions [v2]", async () => {
    const ns = "upgrade";
    await namespace(ns);
    const next = `${image.tag}-next`;
    await must("ctr tag", cluster.ctr(["images", "tag", image.ref, `${image.repository}:${next}`]));
    const before = await json<{ status: { storedVersions: string[] } }>(["get", "crd", CRD]);
    expect(before.status.storedVersions).toEqual(["v1"]);

    const load = startLoad(ns, { total: 300, max: 5000, workers: 4, names: 60 });
    await waitFor("30 applies", async () => (load.done >= 30 ? true : undefined), 120_000, 50);
    const upgrade = await cluster.helm(
      [
        "upgrade",
        rel.name,
        CHART,
        "-n",
        rel.namespace,
        "--reuse-values",
        ...imageValues({ repository: image.repository, tag: next }),
        "--set",
        "crd.storageVersion=v2",
        "--set",
        "migration.job.enabled=true",
        "--wait",
        "--timeout",
        "5m",
      ],
      { timeoutMs: 330_000 },
    );
    const doneAtUpgrade = load.done;
    load.stop();
    await load.finished;
    expect(upgrade.code, explain(upgrade)).toBe(0);
    process.stderr.write(`upgrade: ${doneAtUpgrade} applies while it ran, ${load.done} in all\n`);
    expect(load.failures).toEqual([]);
    expect(load.done).toBeGreaterThanOrEqual(300);

    for (const d of ["server", "watcher"]) {
      const img = await must(
        "kubectl get deploy",
        kubectl([
          "get",
          "deploy",
          `${rel.fullname}-${d}`,
          "-n",
          rel.namespace,
          "-o",
          "jsonpath={.spec.template.spec.containers[0].image}",
        ]),
      );
      expect(img).toBe(`${image.repository}:${next}`);
    }
    await allPodsReady();
    // The runbook (docs/migration.md): after `migrate`, storedVersions is [v2].
    const after = await json<{ status: { storedVersions: string[] } }>(["get", "crd", CRD]);
    expect(after.status.storedVersions).toEqual(["v2"]);
    expect((await listRoutes(ns)).length).toBe(60);
  });

  it("helm uninstall leaves no route behind a finalizer, and nothing of the release but the kept CRD", async () => {
    expect(
      (await listRoutes()).filter((r) => r.metadata.finalizers?.includes(FINALIZER)).length,
    ).toBeGreaterThan(0);
    const r = await cluster.helm(["uninstall", rel.name, "-n", rel.namespace, "--wait", "--timeout", "3m"]);
    expect(r.code, explain(r)).toBe(0);
    const withFinalizer = (await listRoutes()).filter((x) => (x.metadata.finalizers ?? []).length > 0);
    expect(withFinalizer.map((x) => `${x.metadata.namespace}/${x.metadata.name}`)).toEqual([]);

    await waitFor(
      "the release's pods gone",
      async () => {
        const pods = await must("pods", kubectl(["get", "pods", "-n", rel.namespace, "-o", "name"]));
        return pods.trim() === "" ? true : undefined;
      },
      120_000,
      500,
    );
    const namespaced = await must(
      "kubectl get",
      kubectl([
        "get",
        "deploy,rs,pods,svc,endpointslices,secrets,configmaps,serviceaccounts,roles,rolebindings,leases,pdb,jobs",
        "-n",
        rel.namespace,
        "-o",
        "name",
      ]),
    );
    const left = namespaced
      .split("\n")
      .filter(Boolean)
      // What Kubernetes itself puts in every namespace.
      .filter((n) => n !== "serviceaccount/default" && n !== "configmap/kube-root-ca.crt");
    expect(left).toEqual([]);
    const clusterScoped = await must(
      "kubectl get",
      kubectl([
        "get",
        "clusterroles,clusterrolebindings,validatingwebhookconfigurations,mutatingwebhookconfigurations",
        "-o",
        "name",
      ]),
    );
    expect(clusterScoped.split("\n").filter((n) => n.includes(rel.fullname))).toEqual([]);
    expect((await kubectl(["get", "crd", CRD])).code).toBe(0);
  });
});
