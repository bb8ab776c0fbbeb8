// The chart's whole life on the real control plane, driven the way a user
// drives it, with helm and kubectl: `helm install` out of cluster, with the
// server and watcher running as local processes under the chart's own
// ServiceAccounts (their tokens, nothing else); routes in both versions,
// admission, the lab's lifecycle; `helm upgrade` that keeps every route;
// the documented uninstall that strands nothing; and a forced certificate
// rotation under a load of applies with no failed admission.

import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import tls from "node:tls";
import { promisify } from "node:util";
import {
  CoreV1Api,
  KubernetesObjectApi,
  PatchStrategy,
  type KubernetesObject,
} from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as fromYaml, parseAllDocuments, stringify as toYaml } from "yaml";
import type { EdgeRouteV2 } from "../../src/api/types.js";
import { describeCertificate, issueCertificate } from "../../src/certs/pki.js";
import { materialFromSecret, secretFromMaterial } from "../../src/certs/secret-store.js";
import { startControlPlane } from "../harness/control-plane.js";
import type { ControlPlane, RunResult } from "../../tools/testenv/control-plane.js";
import { CLI, httpsStatus, startCli, startServe, type ServeProcess } from "../../tools/testenv/operator.js";
import type { MemoryState } from "../harness/operator-stack.js";
import { httpsJson } from "../../tools/testenv/https-json.js";
import { freePort, run, sleep, waitFor, type Supervised } from "../../tools/testenv/process.js";
import { REPO_ROOT } from "../../tools/testenv/testbin.js";
import { cond, getRoute, service, v1Route, v2Route, waitForConditions } from "../integration/routes.js";

const execFileAsync = promisify(execFile);
const CHART = path.join(REPO_ROOT, "charts/edge-operator");
const NS = "edge-system";
const RELEASE = "edge";
const FULLNAME = "edge-edge-operator";
const SERVER_SA = `${FULLNAME}-server`;
const WATCHER_SA = `${FULLNAME}-watcher`;
const APPS = "shop";
const TEAM = "team";
const CRD = "edgeroutes.net.10xdev.io";
const DEPRECATION = "net.10xdev.io/v1 EdgeRoute is deprecated; use net.10xdev.io/v2";

let cp: ControlPlane;
let dir: string;

beforeAll(async () => {
  cp = await startControlPlane();
  dir = mkdtempSync(path.join(os.tmpdir(), "edge-e2e-helm-"));
});

afterAll(async () => {
  await cp?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const explain = (r: RunResult): string => `exit ${r.code}\n${r.stderr}${r.stdout}`;

async function must(what: string, p: Promise<RunResult>): Promise<string> {
  const r = await p;
  if (r.code !== 0) throw new Error(`${what} failed: ${explain(r)}`);
  return r.stdout;
}

const kubectl = (args: string[], opts: { input?: string; kubeconfig?: string } = {}) =>
  cp.kubectl(args, opts);
const applyYaml = (objects: object[], kubeconfig?: string) =>
  kubectl(["apply", "-f", "-"], {
    input: objects.map((o) => toYaml(o)).join("---\n"),
    ...(kubeconfig ? { kubeconfig } : {}),
  });

/** The edge-operator CLI run to completion, as a user runs it. */
const edgeOperator = (args: string[]) =>
  run(process.execPath, [CLI, ...args], { env: { ...process.env, LOG_LEVEL: "warn" } });

interface Identity {
  readonly user: string;
  readonly token: string;
  readonly tokenFile: string;
  /** A kubeconfig for the admin's cluster (URL and CA) that authenticates with the token alone. */
  readonly kubeconfig: string;
}

/** Mints a token for one of the chart's ServiceAccounts with `kubectl create token`, and a kubeconfig that uses it. */
async function identity(sa: string): Promise<Identity> {
  const token = (await must(`kubectl create token ${sa}`, kubectl(["create", "token", sa, "-n", NS]))).trim();
  const admin = fromYaml(readFileSync(cp.kubeconfig, "utf8")) as {
    clusters: { cluster: { server: string; "certificate-authority-data": string } }[];
  };
  const cluster = admin.clusters[0]?.cluster;
  if (!cluster) throw new Error("the admin kubeconfig names no cluster");
  const kubeconfig = path.join(dir, `${sa}.kubeconfig`);
  writeFileSync(
    kubeconfig,
    toYaml({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "envtest", cluster }],
      users: [{ name: sa, user: { token } }],
      contexts: [{ name: sa, context: { cluster: "envtest", user: sa, namespace: NS } }],
      "current-context": sa,
    }),
  );
  const tokenFile = path.join(dir, `${sa}.token`);
  writeFileSync(tokenFile, token);
  return { user: `system:serviceaccount:${NS}:${sa}`, token, tokenFile, kubeconfig };
}

/** `{ "ns/name": { uid, spec } }` of every route, read in `version`. */
async function routesIn(version: "v1" | "v2") {
  const out = await must(
    `kubectl get edgeroutes.${version}`,
    kubectl(["get", `edgeroutes.${version}.net.10xdev.io`, "-A", "-o", "json"]),
  );
  type Item = { metadata: { namespace: string; name: string; uid: string }; spec: unknown };
  const items = (JSON.parse(out) as { items: Item[] }).items;
  return Object.fromEntries(
    items.map((r) => [`${r.metadata.namespace}/${r.metadata.name}`, { uid: r.metadata.uid, spec: r.spec }]),
  );
}

describe("out of cluster, with the server and the watcher as the chart's ServiceAccounts", () => {
  let port: number;
  let certDir: string;
  let caPem: string;
  let serve: ServeProcess | undefined;
  let watcher: Supervised | undefined;
  let server: Identity;
  let watch: Identity;

  const dataPlane = async (): Promise<MemoryState> => {
    const r = await httpsJson(`${serve?.url}/debug/dataplane`, caPem, "GET", undefined, watch.token);
    if (r.status !== 200) throw new Error(`GET /debug/dataplane: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body as MemoryState;
  };

  afterAll(async () => {
    await watcher?.stop();
    await serve?.stop();
  });

  it("installs with urlOverride and caBundle, and the processes run with the chart's ServiceAccounts' tokens", async () => {
    // The documented steps: local certificates, then the chart pointed at the local server.
    certDir = path.join(dir, "certs");
    await must(
      "edge-operator certs",
      edgeOperator(["certs", "--ip", "127.0.0.1", "--dns", "localhost", "--out", certDir]),
    );
    caPem = readFileSync(path.join(certDir, "ca.crt"), "utf8");
    port = await freePort();
    const url = `https://127.0.0.1:${port}`;
    const install = await cp.helm([
      "install",
      RELEASE,
      CHART,
      "-n",
      NS,
      "--create-namespace",
      "--set",
      `webhook.urlOverride=${url}`,
      "--set",
      `webhook.caBundle=${Buffer.from(caPem).toString("base64")}`,
      // Storage on v1 (an install from before v2 became the default): the
      // uninstall steps below read kept routes in the version they are stored in.
      "--set",
      "crd.storageVersion=v1",
    ]);
    expect(install.code, explain(install)).toBe(0);
    await must(
      "kubectl wait crd",
      kubectl(["wait", "--for=condition=Established", `crd/${CRD}`, "--timeout=60s"]),
    );

    server = await identity(SERVER_SA);
    watch = await identity(WATCHER_SA);
    // The kubeconfigs carry nothing but the ServiceAccounts' tokens.
    for (const id of [server, watch]) {
      const who = await kubectl(["auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"], {
        kubeconfig: id.kubeconfig,
      });
      expect(who.stdout, explain(who)).toBe(id.user);
    }

    serve = await startServe({
      port,
      tls: {
        caPem,
        certFile: path.join(certDir, "tls.crt"),
        keyFile: path.join(certDir, "tls.key"),
      },
      args: ["--kubeconfig", server.kubeconfig, "--dataplane", "memory", "--debug-routes"],
    });
    watcher = startCli("watch", [
      "watch",
      "--kubeconfig",
      watch.kubeconfig,
      "--reconcile-url",
      `${url}/reconcile`,
      "--token-file",
      watch.tokenFile,
      "--reconcile-ca",
      path.join(certDir, "ca.crt"),
      // The Lease the chart's Role allows, by name, in the release namespace.
      "--lease-namespace",
      NS,
      "--lease-name",
      `${FULLNAME}-watcher`,
    ]);
    // The watcher leads on the chart's Lease: it could create and renew it.
    const holder = await waitFor(
      "the watcher to hold its Lease",
      async () => {
        const r = await kubectl([
          "get",
          "lease",
          `${FULLNAME}-watcher`,
          "-n",
          NS,
          "-o",
          "jsonpath={.spec.holderIdentity}",
        ]);
        return r.code === 0 && r.stdout ? r.stdout : undefined;
      },
      30_000,
      200,
    ).catch((e: Error) => {
      throw new Error(`${e.message}\n--- watcher ---\n${watcher?.output().slice(-3000)}`);
    });
    expect(holder).not.toBe("");
  });

  it("serves v1 and v2 routes side by side, each read in the other version", async () => {
    await must("create namespaces", kubectl(["create", "namespace", APPS]));
    await must("create namespaces", kubectl(["create", "namespace", TEAM]));
    const applied = await applyYaml([
      service("checkout", APPS),
      service("checkout", TEAM),
      v1Route("one", { namespace: APPS, path: "/one" }),
      v2Route("two", { namespace: APPS, path: "/two" }),
      v2Route("three", { namespace: TEAM, path: "/three" }),
    ]);
    expect(applied.code, explain(applied)).toBe(0);
    const asV2 = await kubectl([
      "get",
      "edgeroutes.v2.net.10xdev.io",
      "one",
      "-n",
      APPS,
      "-o",
      "jsonpath={.spec.rules[0].matches[0].path.value} {.spec.rules[0].backends[0].name}:{.spec.rules[0].backends[0].port}",
    ]);
    expect(asV2.stdout, explain(asV2)).toBe("/one checkout:8080");
    const asV1 = await kubectl([
      "get",
      "edgeroutes.v1.net.10xdev.io",
      "two",
      "-n",
      APPS,
      "-o",
      "jsonpath={.spec.pathPrefix} {.spec.service}:{.spec.port}",
    ]);
    expect(asV1.stdout, explain(asV1)).toBe("/two checkout:8080");
    // Reconciled by the watcher and the server under their own identities.
    const one = await waitForConditions(cp, "one", "True(Valid)", "True(Synced)", APPS);
    await waitForConditions(cp, "two", "True(Valid)", "True(Synced)", APPS);
    expect(one.metadata.finalizers).toContain("net.10xdev.io/deprogram");
    await waitFor("the data plane to hold both routes", async () => {
      const dp = await dataPlane();
      return dp.routes.includes(`${APPS}/one`) && dp.routes.includes(`${APPS}/two`) ? true : undefined;
    });
  });

  it.each([
    {
      what: "a v1 port out of range (the CRD schema)",
      route: v1Route("bad-port", { namespace: APPS, port: 70000 }),
      expect: ["spec.port", "65535"],
    },
    {
      what: "a v1 path with '//' (the validating webhook)",
      route: v1Route("bad-path", { namespace: APPS, path: "/a//b" }),
      expect: ["denied the request", "spec.pathPrefix", "must not contain '//'"],
    },
    {
      what: "a v2 timeout over 1h (the validating webhook)",
      route: {
        ...v2Route("bad-timeout", { namespace: APPS }),
        spec: {
          hostnames: ["bad-timeout.example.com"],
          rules: [
            {
              matches: [{ path: { type: "PathPrefix", value: "/t" } }],
              backends: [{ name: "checkout", port: 8080 }],
              timeout: "2h",
            },
          ],
        },
      },
      expect: ["denied the request", "spec.rules[0].timeout", "must be at most 1h"],
    },
  ])("refuses $what at admission, names the field, and stores nothing", async ({ route, expect: want }) => {
    const r = await applyYaml([route]);
    expect(r.code, explain(r)).toBe(1);
    for (const text of want) expect(r.stderr).toContain(text);
    expect(await getRoute(cp, route.metadata.name, APPS)).toBeUndefined();
  });

  it("runs the lab's lifecycle: ServiceNotFound, then Valid and Synced, then gone only after the deprogramming push", async () => {
    const applied = await applyYaml([v1Route("lab", { namespace: APPS, service: "cart", path: "/lab" })]);
    expect(applied.code, explain(applied)).toBe(0);
    await waitFor("lab to be Accepted=False(ServiceNotFound)", async () =>
      cond(await getRoute(cp, "lab", APPS), "Accepted") === "False(ServiceNotFound)" ? true : undefined,
    );
    expect((await dataPlane()).routes).not.toContain(`${APPS}/lab`);

    // Self-heal: nobody touches the route, the Service appears.
    expect((await applyYaml([service("cart", APPS)])).code).toBe(0);
    await waitForConditions(cp, "lab", "True(Valid)", "True(Synced)", APPS);
    expect((await dataPlane()).routes).toContain(`${APPS}/lab`);

    // The data plane refuses every push until told otherwise (one refusal alone
    // races the watcher's quick retry): the deleted route must wait behind its finalizer.
    const failNext = (count: number) =>
      httpsJson(`${serve?.url}/debug/dataplane/fail-next`, caPem, "POST", { count }, watch.token);
    expect((await failNext(1_000_000)).status).toBe(200);
    const before = await dataPlane();
    const del = await kubectl(["delete", "edgeroute", "lab", "-n", APPS, "--wait=false"]);
    expect(del.code, explain(del)).toBe(0);
    const terminating = await waitFor("lab to be Terminating", async () => {
      const r = await getRoute(cp, "lab", APPS);
      return r?.metadata.deletionTimestamp ? r : undefined;
    });
    expect(terminating.metadata.finalizers).toContain("net.10xdev.io/deprogram");
    // A push without it was tried and refused, and the route is still served and still held.
    await waitFor("a refused push", async () =>
      (await dataPlane()).failures > before.failures ? true : undefined,
    );
    expect((await dataPlane()).routes).toContain(`${APPS}/lab`);
    expect((await getRoute(cp, "lab", APPS))?.metadata.finalizers).toContain("net.10xdev.io/deprogram");
    expect((await failNext(0)).status).toBe(200);
    await waitFor(
      "lab to be gone",
      async () => ((await getRoute(cp, "lab", APPS)) === undefined ? true : undefined),
      60_000,
      200,
    );
    const after = await dataPlane();
    expect(after.routes).not.toContain(`${APPS}/lab`);
    expect(after.routes).toEqual(expect.arrayContaining([`${APPS}/one`, `${APPS}/two`]));
    expect(after.failures).toBeGreaterThan(before.failures);
    expect(after.pushes).toBeGreaterThan(before.pushes);
  });

  it("forbids what the ServiceAccounts were not granted", async () => {
    const asServer = (args: string[]) => kubectl(args, { kubeconfig: server.kubeconfig });
    const asWatcher = (args: string[]) => kubectl(args, { kubeconfig: watch.kubeconfig });
    const refused: [string, RunResult][] = [
      [
        "server: delete an edgeroute",
        await asServer(["delete", "edgeroute", "one", "-n", APPS, "--wait=false"]),
      ],
      // It reads TLS Secrets in any namespace (routes reference them), but writes none outside its own.
      [
        "server: create a Secret in kube-system",
        await kubectl(["create", "-f", "-"], {
          input: JSON.stringify({
            apiVersion: "v1",
            kind: "Secret",
            metadata: { name: "sneaky", namespace: "kube-system" },
            stringData: { a: "b" },
          }),
          kubeconfig: server.kubeconfig,
        }),
      ],
      [
        "server: delete a Secret in its own namespace",
        await asServer(["delete", "secret", "does-not-matter", "-n", NS, "--wait=false"]),
      ],
      [
        "server: create a route",
        await applyYaml([v1Route("sneaky", { namespace: APPS })], server.kubeconfig),
      ],
      [
        "watcher: patch edgeroutes/status",
        await asWatcher([
          "patch",
          "edgeroute",
          "one",
          "-n",
          APPS,
          "--subresource=status",
          "--type=merge",
          "-p",
          '{"status":{"observedGeneration":99}}',
        ]),
      ],
      [
        "watcher: patch an edgeroute",
        await asWatcher([
          "patch",
          "edgeroute",
          "one",
          "-n",
          APPS,
          "--type=merge",
          "-p",
          '{"spec":{"port":9090}}',
        ]),
      ],
      ["watcher: read a Secret", await asWatcher(["get", "secrets", "-n", NS])],
    ];
    for (const [what, r] of refused) {
      expect(r.code, `${what}: ${explain(r)}`).toBe(1);
      expect(r.stderr, what).toContain("Forbidden");
    }
    // Nothing changed.
    expect((await getRoute(cp, "one", APPS))?.metadata.deletionTimestamp).toBeUndefined();
    expect(await getRoute(cp, "sneaky", APPS)).toBeUndefined();
  });

  it("upgrades with changed values and keeps every route: same uids and specs, and v1 reads now warn", async () => {
    const v2Before = await routesIn("v2");
    const v1Before = await routesIn("v1");
    expect(Object.keys(v2Before).sort()).toEqual([`${APPS}/one`, `${APPS}/two`, `${TEAM}/three`]);
    const up = await cp.helm([
      "upgrade",
      RELEASE,
      CHART,
      "-n",
      NS,
      "--reuse-values",
      "--set",
      "crd.v1.deprecated=true",
      "--set",
      "webhook.timeoutSeconds=10",
    ]);
    expect(up.code, explain(up)).toBe(0);
    const timeouts = await kubectl([
      "get",
      "validatingwebhookconfiguration",
      `${FULLNAME}-validate`,
      "-o",
      "jsonpath={.webhooks[*].timeoutSeconds}",
    ]);
    expect(timeouts.stdout).toBe("10 10");

    expect(await routesIn("v2")).toEqual(v2Before);
    const v1 = await kubectl(["get", "edgeroutes.v1.net.10xdev.io", "-A"]);
    expect(v1.code, explain(v1)).toBe(0);
    expect(v1.stderr).toContain(`Warning: ${DEPRECATION}`);
    expect(await routesIn("v1")).toEqual(v1Before);
    // v2 reads do not warn; the routes are still served.
    expect((await kubectl(["get", "edgeroutes.v2.net.10xdev.io", "-A"])).stderr).not.toContain("deprecated");
    await waitForConditions(cp, "one", "True(Valid)", "True(Synced)", APPS);
    await waitForConditions(cp, "two", "True(Valid)", "True(Synced)", APPS);
  });

  it("renders the in-cluster pre-delete hook that releases the finalizers", async () => {
    const out = await must(
      "helm template",
      cp.helm([
        "template",
        RELEASE,
        CHART,
        "-n",
        NS,
        "--kube-version",
        "1.36.3",
        "--show-only",
        "templates/uninstall-hook.yaml",
      ]),
    );
    type Job = {
      kind: string;
      metadata: { annotations: Record<string, string> };
      spec: { template: { spec: { serviceAccountName: string; containers: { args: string[] }[] } } };
    };
    const jobs = parseAllDocuments(out)
      .map((d) => d.toJS() as Job | null)
      .filter((d): d is Job => d?.kind === "Job");
    expect(jobs).toHaveLength(1);
    const job = jobs[0] as Job;
    expect(job.metadata.annotations["helm.sh/hook"]).toBe("pre-delete");
    expect(job.spec.template.spec.serviceAccountName).toBe(SERVER_SA);
    const args = job.spec.template.spec.containers[0]?.args ?? [];
    expect(args.slice(0, 3)).toEqual(["finalizer", "release", "--all"]);
    expect(args[3]).toMatch(/^--reason=helm uninstall/);
  });

  it("uninstalls by the documented steps: no route is left behind a finalizer", async () => {
    const routes = Object.keys(await routesIn("v2")).sort();
    expect(routes).toEqual([`${APPS}/one`, `${APPS}/two`, `${TEAM}/three`]);
    // 1. Stop the watcher.
    await watcher?.stop();
    watcher = undefined;
    // 2. What the in-cluster pre-delete hook runs, as the identity it has (the
    //    server's ServiceAccount), while the webhooks are still registered: the
    //    release marks each route released, so the mutating webhook lets it be.
    const release = await edgeOperator([
      "finalizer",
      "release",
      "--all",
      "--reason",
      "helm uninstall",
      "--kubeconfig",
      server.kubeconfig,
    ]);
    expect(release.code, explain(release)).toBe(0);
    expect(release.stdout).toContain(`released the finalizer of ${routes.length} EdgeRoute(s)`);
    // 3. helm uninstall: the webhooks go, the CRD and the routes stay.
    const un = await cp.helm(["uninstall", RELEASE, "-n", NS]);
    expect(un.code, explain(un)).toBe(0);
    expect(un.stdout + un.stderr).toContain("kept due to the resource policy");
    const hooks = await kubectl([
      "get",
      "mutatingwebhookconfigurations,validatingwebhookconfigurations",
      "-o",
      "name",
    ]);
    expect(hooks.code, explain(hooks)).toBe(0);
    expect(hooks.stdout).not.toContain(FULLNAME);
    expect((await kubectl(["get", "crd", CRD])).code).toBe(0);
    expect(Object.keys(await routesIn("v2")).sort()).toEqual(routes);
    const kept = JSON.parse(
      await must("get routes", kubectl(["get", "edgeroutes.v2.net.10xdev.io", "-A", "-o", "json"])),
    ) as { items: EdgeRouteV2[] };
    expect(kept.items.map((r) => `${r.metadata.namespace}/${r.metadata.name}`).sort()).toEqual(routes);
    for (const r of kept.items) expect(r.metadata.finalizers ?? [], r.metadata.name).toEqual([]);
    const events = await kubectl([
      "get",
      "events",
      "-A",
      "--field-selector",
      "reason=FinalizerReleasedByHand",
      "-o",
      "jsonpath={.items[*].involvedObject.name}",
    ]);
    expect([...new Set(events.stdout.split(" "))].sort()).toEqual(["one", "three", "two"]);

    // Deleting a namespace that holds routes completes. This control plane has no
    // kube-controller-manager, so the test does the namespace controller's part:
    // a deletecollection of the routes in the preferred version, then /finalize.
    const ns = await kubectl(["delete", "namespace", APPS, "--wait=false"]);
    expect(ns.code, explain(ns)).toBe(0);
    const collection = await kubectl([
      "delete",
      "--raw",
      `/apis/net.10xdev.io/v2/namespaces/${APPS}/edgeroutes`,
    ]);
    expect(collection.code, explain(collection)).toBe(0);
    await waitFor(
      `no route left in ${APPS}`,
      async () =>
        Object.keys(await routesIn("v2")).some((k) => k.startsWith(`${APPS}/`)) ? undefined : true,
      5_000,
    );
    const terminating = JSON.parse(
      await must("get ns", kubectl(["get", "namespace", APPS, "-o", "json"])),
    ) as {
      spec?: { finalizers?: string[] };
    };
    const finalized = await kubectl(["replace", "--raw", `/api/v1/namespaces/${APPS}/finalize`, "-f", "-"], {
      input: JSON.stringify({ ...terminating, spec: { ...terminating.spec, finalizers: [] } }),
    });
    expect(finalized.code, explain(finalized)).toBe(0);
    await waitFor("the namespace to be gone", async () =>
      (await kubectl(["get", "namespace", APPS])).stderr.includes("NotFound") ? true : undefined,
    );

    // 4. `kubectl delete edgeroutes --all -A` returns at once: nothing holds the rest.
    const started = Date.now();
    const all = await kubectl(["delete", "edgeroutes", "--all", "-A", "--timeout=30s"]);
    expect(all.code, explain(all)).toBe(0);
    expect(all.stdout).toContain(`"three" deleted`);
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(await routesIn("v2")).toEqual({});
    // 5. Stop the server.
    await serve?.stop();
    serve = undefined;
  });

  it("after the server is gone, a kept route is read and deleted in its stored version only (docs/install.md)", async () => {
    // Created with no webhooks left, stored as v1 like every kept route.
    expect((await applyYaml([v1Route("kept", { namespace: TEAM })])).code).toBe(0);
    // v2 needs the conversion webhook that the kept CRD still names: what the
    // namespace controller would call fails, so the namespace could not finish.
    const v2 = await kubectl(["delete", "--raw", `/apis/net.10xdev.io/v2/namespaces/${TEAM}/edgeroutes`]);
    expect(v2.code).toBe(1);
    expect(v2.stderr).toContain("conversion webhook for net.10xdev.io/v1, Kind=EdgeRoute failed");
    const v1 = await kubectl(["delete", "edgeroutes.v1.net.10xdev.io", "--all", "-A", "--timeout=15s"]);
    expect(v1.code, explain(v1)).toBe(0);
    expect(v1.stdout).toContain(`"kept" deleted`);
    expect((await kubectl(["get", "edgeroutes.v1.net.10xdev.io", "-A", "-o", "name"])).stdout).toBe("");
  });
});

// ---- certificate rotation under load ----

/** The test's own connections (by client address), so that counting the apiserver's leaves them out. */
const probes = new Set<string>();

/** The serial of the certificate the server presents on a new TLS connection. */
function servedSerial(port: number, caPem: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host: "127.0.0.1", port, ca: caPem }, () => {
      probes.add(`${s.localAddress}:${s.localPort}`);
      const serial = s.getPeerCertificate().serialNumber;
      s.end();
      resolve(serial.toLowerCase().replace(/^0+/, ""));
    });
    s.on("error", reject);
  });
}

const serialOf = (pem: string): string => describeCertificate(pem).serial.toLowerCase().replace(/^0+/, "");

describe("certificate rotation while a load generator applies routes", () => {
  const LOAD = "load";
  const SECRET = `${FULLNAME}-tls`;
  const TOTAL = 300;
  const WORKERS = 6;
  const NAMES = 50;
  // ~20 s in all: each worker paces itself to this many ms per apply.
  const PACE_MS = Math.round((20_000 * WORKERS) / TOTAL);
  let server: Supervised | undefined;

  afterAll(async () => {
    await server?.stop();
  });

  it("renews the served certificate with no failed admission", async () => {
    // The server keeps its CA and serving pair in a Secret, checked every second.
    // It runs as the admin: out of cluster the chart renders no Secret RBAC (the
    // built-in certificates are an in-cluster mode; chart.test.ts checks that RBAC).
    // (The namespace is left from the release above; create it when this test runs alone.)
    if ((await kubectl(["get", "namespace", NS])).code !== 0) {
      await must("create namespace", kubectl(["create", "namespace", NS]));
    }
    const port = await freePort();
    server = startCli("serve-managed", [
      "serve",
      "--listen",
      `127.0.0.1:${port}`,
      "--kubeconfig",
      cp.kubeconfig,
      "--dataplane",
      "memory",
      "--cert-secret",
      `${NS}/${SECRET}`,
      "--cert-ip",
      "127.0.0.1",
      "--cert-dns",
      "localhost",
      "--cert-check-interval",
      "1",
    ]);
    const core = cp.kubeConfig().makeApiClient(CoreV1Api);
    const secret = await waitFor(
      "the certificate Secret",
      async () => {
        try {
          return await core.readNamespacedSecret({ name: SECRET, namespace: NS });
        } catch {
          return undefined;
        }
      },
      30_000,
      100,
    ).catch((e: Error) => {
      throw new Error(`${e.message}\n${server?.output().slice(-3000)}`);
    });
    const material = materialFromSecret(secret);
    if (!material) throw new Error("the Secret holds no certificate material");
    const caPem = material.caBundle;
    await waitFor("serve /readyz", async () =>
      (await httpsStatus(`https://127.0.0.1:${port}/readyz`, caPem)) === 200 ? true : undefined,
    );
    const first = await servedSerial(port, caPem);
    expect(first).toBe(serialOf(material.serving.cert));

    // The chart, reinstalled out of cluster with the CA from that Secret (the kept CRD is adopted).
    const install = await cp.helm([
      "install",
      RELEASE,
      CHART,
      "-n",
      NS,
      "--set",
      `webhook.urlOverride=https://127.0.0.1:${port}`,
      "--set",
      `webhook.caBundle=${Buffer.from(caPem).toString("base64")}`,
    ]);
    expect(install.code, explain(install)).toBe(0);
    await must("create namespace", kubectl(["create", "namespace", LOAD]));
    await must("service", applyYaml([service("checkout", LOAD)]));
    const probe = v2Route("probe", { namespace: LOAD });
    await waitFor("the webhooks to answer", async () => {
      const r = await kubectl(["apply", "--dry-run=server", "-o", "json", "-f", "-"], {
        input: toYaml(probe),
      });
      return r.code === 0 && r.stdout.includes("net.10xdev.io/deprogram") ? true : undefined;
    });

    // The load: server-side applies of v2 routes, creating and then updating them.
    const objects = KubernetesObjectApi.makeApiClient(cp.kubeConfig());
    const failures: string[] = [];
    let started = 0;
    let done = 0;
    const routeFor = (i: number): KubernetesObject => {
      const n = i % NAMES;
      const r = v2Route(`load-${n}`, { namespace: LOAD, path: `/load/${n}`, port: 8080 + (i % 7) });
      return r as KubernetesObject;
    };
    const applyOne = async (i: number): Promise<void> => {
      try {
        await objects.patch(
          routeFor(i),
          undefined,
          undefined,
          "load-generator",
          true,
          PatchStrategy.ServerSideApply,
        );
      } catch (e) {
        failures.push(`apply ${i}: ${(e as Error).message.slice(0, 300)}`);
      }
      done++;
    };
    const worker = async (): Promise<void> => {
      while (started < TOTAL) {
        const t0 = Date.now();
        await applyOne(started++);
        await sleep(Math.max(0, PACE_MS - (Date.now() - t0)));
      }
    };
    const t0 = Date.now();
    const load = Promise.all(Array.from({ length: WORKERS }, () => worker()));

    // A third of the way in, make the stored certificate nearly expired: the
    // next check renews it from the same CA and reloads it in the live server.
    await waitFor("a third of the load", async () => (done >= TOTAL / 3 ? true : undefined), 60_000, 20);
    const short = issueCertificate(material.ca, {
      commonName: "localhost",
      dnsNames: ["localhost"],
      ips: ["127.0.0.1"],
      usage: "server",
      days: 10,
    });
    // The apiserver's connections before the rotation: it keeps them alive, and
    // the server answers each one's next request with Connection: close, so the
    // rest of the load has to run on connections opened after it, each of which
    // had to accept the new certificate (ss shows which connections are new).
    const before = await peers(port);
    const current = await core.readNamespacedSecret({ name: SECRET, namespace: NS });
    await core.replaceNamespacedSecret({
      name: SECRET,
      namespace: NS,
      body: secretFromMaterial(
        { namespace: NS, name: SECRET },
        { ...material, serving: short },
        {},
        current.metadata?.resourceVersion,
      ),
    });
    const renewed = await waitFor(
      "the served certificate to change",
      async () => {
        const serial = await servedSerial(port, caPem);
        return serial !== first && serial !== serialOf(short.cert) ? serial : undefined;
      },
      30_000,
      100,
    );
    const doneAtRotation = done;
    await load;
    const opened = [...(await peers(port))].filter((p) => !before.has(p) && !probes.has(p));
    const seconds = (Date.now() - t0) / 1000;

    expect(failures).toEqual([]);
    expect(done).toBe(TOTAL);
    // The rotation happened inside the load, with applies on both sides of it.
    expect(doneAtRotation).toBeGreaterThan(TOTAL / 3 - 1);
    expect(doneAtRotation).toBeLessThan(TOTAL - 30);
    expect(opened.length, "connections the apiserver opened after the rotation").toBeGreaterThan(0);
    const now = materialFromSecret(await core.readNamespacedSecret({ name: SECRET, namespace: NS }));
    expect(renewed).toBe(serialOf(now?.serving.cert ?? ""));
    expect(now?.ca.cert).toBe(material.ca.cert);
    expect(await servedSerial(port, caPem)).not.toBe(first);
    expect(server.child.exitCode).toBeNull();
    // Every route landed (stored as v1), with the finalizer the mutating webhook adds, and reads back as v2 through /convert.
    const stored = JSON.parse(
      await must("get routes", kubectl(["get", "edgeroutes.v2.net.10xdev.io", "-n", LOAD, "-o", "json"])),
    ) as { items: { metadata: { finalizers?: string[] } }[] };
    expect(stored.items).toHaveLength(NAMES);
    for (const r of stored.items) expect(r.metadata.finalizers).toContain("net.10xdev.io/deprogram");
    console.log(
      `rotation under load: ${done} applies in ${seconds.toFixed(1)} s, ${WORKERS} in parallel; rotated after ${doneAtRotation}; ` +
        `${before.size} apiserver connections before the rotation, ${opened.length} opened after it and open at the end`,
    );
  });
});

/** Client addresses of the TCP connections established to a local port, from `ss`. */
async function peers(port: number): Promise<Set<string>> {
  // execFile, not run(): ss never reads its stdin, and writing to it can fail with EPIPE.
  const { stdout } = await execFileAsync("ss", ["-tnH", "state", "established", `( sport = :${port} )`]);
  return new Set(
    stdout
      .split("\n")
      .map((l) => l.trim().split(/\s+/).pop() ?? "")
      .filter(Boolean),
  );
}
