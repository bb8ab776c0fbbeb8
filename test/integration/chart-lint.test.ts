// The chart through the linters its users run: `helm lint --strict` and
// kube-score 1.20 on the default render and on each main toggle's. A critical
// finding fails unless charts/edge-operator/LINT.md lists it with its reason;
// a row there that no render produces fails too. Then what the fixes are for:
// PodDisruptionBudgets, Envoy's probes on its admin /ready, priority classes,
// the ClusterRoles aggregated into view/edit/admin, pods that stay hardened.
// No apiserver: helm renders and lints on its own.

import { readFileSync } from "node:fs";
import path from "node:path";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { parse as parseYaml, parseAllDocuments } from "yaml";
import { criticalFindings, ensureKubeScore, type Finding } from "../harness/kube-score.js";
import { EnvoyProtos } from "../envoy/envoy-proto.js";
import { envoyBootstrap } from "../../src/translate/envoy-files.js";
import { TYPE_URL } from "../../src/envoy/envoy-resources.js";
import { encodeResource } from "../../src/dataplane/xds/proto-codec.js";
import { validateResources } from "../harness/xds-go.js";
import { run } from "../../tools/testenv/process.js";
import { REPO_ROOT } from "../../tools/testenv/testbin.js";

const CHART = path.join(REPO_ROOT, "charts/edge-operator");
const KUBE_VERSION = ["--kube-version", "1.36.3"];
const NS = "edge-system";
const RELEASE = "edge";
const FULLNAME = "edge-edge-operator";

/** The main toggles, as `--set` flags. */
const RENDERS: Record<string, string[]> = {
  default: [],
  "Envoy over ADS": ["--set", "envoy.enabled=true"],
  "Envoy from the ConfigMap": ["--set", "envoy.enabled=true", "--set", "dataPlane.sink=envoy-configmap"],
  "cert-manager with Envoy": ["--set", "certs.mode=certManager", "--set", "envoy.enabled=true"],
  "the migration Job": ["--set", "migration.job.enabled=true"],
  "your own ADS CA, the plaintext port": [
    "--set",
    "envoy.enabled=true",
    "--set",
    "dataPlane.xds.mutualTLS.clientCASecret=proxies-ca",
    "--set",
    "envoy.xdsClientCertSecret=envoy-client",
    "--set",
    "dataPlane.xds.plaintext.enabled=true",
  ],
  "NetworkPolicies, every pod": [
    "--set",
    "networkPolicy.enabled=true",
    "--set",
    "networkPolicy.apiServerCIDRs={10.0.0.0/28}",
    "--set",
    "envoy.enabled=true",
    "--set",
    "migration.job.enabled=true",
  ],
  "out of cluster": ["--set", "webhook.urlOverride=https://127.0.0.1:9443", "--set", "webhook.caBundle=Q0E="],
};

type Doc = {
  kind?: string;
  metadata?: { name?: string; labels?: Record<string, string> };
  spec?: Record<string, unknown>;
  rules?: Rule[];
  [k: string]: unknown;
};
type Rule = { apiGroups?: string[]; resources?: string[]; resourceNames?: string[]; verbs: string[] };
type Probe = { httpGet?: { path?: string; port?: unknown }; tcpSocket?: unknown };
type Container = {
  name: string;
  args?: string[];
  ports?: { name: string; containerPort: number }[];
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  resources?: { requests?: Record<string, unknown>; limits?: Record<string, unknown> };
  securityContext?: Record<string, unknown>;
};
type PodSpec = {
  containers: Container[];
  priorityClassName?: string;
  securityContext?: Record<string, unknown>;
};

let helm: string;
let kubeScore: string;

async function helmRun(args: string[]): Promise<{ code: number; out: string }> {
  const res = await run(helm, args, { timeoutMs: 120_000 });
  return { code: res.code, out: res.stdout + res.stderr };
}

async function template(args: string[]): Promise<string> {
  const res = await run(helm, ["template", RELEASE, CHART, "-n", NS, ...KUBE_VERSION, ...args], {
    timeoutMs: 120_000,
  });
  if (res.code !== 0) throw new Error(`helm template ${args.join(" ")} failed:\n${res.stderr}`);
  return res.stdout;
}

async function render(args: string[]): Promise<Doc[]> {
  return parseAllDocuments(await template(args))
    .map((d) => d.toJS() as Doc | null)
    .filter((d): d is Doc => d !== null);
}

const find = (docs: Doc[], kind: string, name: string): Doc | undefined =>
  docs.find((d) => d.kind === kind && d.metadata?.name === name);

function podOf(doc: Doc): PodSpec | undefined {
  if (doc.kind === "Pod") return doc.spec as PodSpec;
  const template = (doc.spec as { template?: { spec?: PodSpec } } | undefined)?.template;
  return doc.kind === "Deployment" || doc.kind === "Job" ? template?.spec : undefined;
}

/** LINT.md's table: each check and the objects (names after the full name) it is kept for. */
function acceptedFindings(): Map<string, Set<string>> {
  const text = readFileSync(path.join(CHART, "LINT.md"), "utf8");
  const rows = new Map<string, Set<string>>();
  for (const line of text.split("\n")) {
    const m = /^\| `([a-z0-9-]+)` \| ([^|]+) \| (.+) \|$/.exec(line.trim());
    if (!m) continue;
    const [, check = "", objects = "", why = ""] = m;
    expect(why.trim().length, `LINT.md: ${check} has no reason`).toBeGreaterThan(40);
    rows.set(check, new Set([...objects.matchAll(/`([a-z0-9-]+)`/g)].map((o) => o[1] ?? "")));
  }
  return rows;
}

const shortName = (f: Finding): string => f.object.replace(/^[^/]+\//, "").replace(`${FULLNAME}-`, "");

beforeAll(() => {
  helm = path.join(inject("testbinDir"), "helm");
  kubeScore = ensureKubeScore();
});

describe("helm lint --strict and kube-score", () => {
  const seen = new Map<string, Set<string>>();

  it.each(Object.entries(RENDERS))(
    "%s: lint clean, no critical finding LINT.md does not explain",
    async (mode, args) => {
      const lint = await helmRun(["lint", CHART, "--strict", ...KUBE_VERSION, ...args]);
      expect(lint.code, lint.out).toBe(0);
      expect(lint.out).not.toMatch(/\[(WARNING|ERROR)\]/);

      const accepted = acceptedFindings();
      const findings = criticalFindings(kubeScore, await template(args));
      const unexplained = findings.filter((f) => !accepted.get(f.check)?.has(shortName(f)));
      expect(
        unexplained.map((f) => `${f.object} ${f.check}: ${f.path ? `(${f.path}) ` : ""}${f.summary}`),
        `critical findings of the "${mode}" render that LINT.md does not list`,
      ).toEqual([]);
      for (const f of findings) {
        const objects = seen.get(f.check) ?? new Set<string>();
        objects.add(shortName(f));
        seen.set(f.check, objects);
      }
      process.stderr.write(`kube-score, ${mode}: ${findings.length} critical (all in LINT.md)\n`);
    },
  );

  it("LINT.md lists nothing that no render produces any more", () => {
    expect(seen.size, "the renders above ran first").toBeGreaterThan(0);
    const stale: string[] = [];
    for (const [check, objects] of acceptedFindings())
      for (const o of objects) if (!seen.get(check)?.has(o)) stale.push(`${check} on ${o}`);
    expect(stale).toEqual([]);
  });

  it("with networkPolicy.enabled every pod of the chart is under a NetworkPolicy", async () => {
    const findings = criticalFindings(kubeScore, await template(RENDERS["NetworkPolicies, every pod"] ?? []));
    expect(findings.filter((f) => f.check === "pod-networkpolicy")).toEqual([]);
  });
});

describe("what the linters asked for", () => {
  it("a PodDisruptionBudget for each Deployment with more than one replica, and none for one replica", async () => {
    const selects = (pdb: Doc, dep: Doc): boolean => {
      const want = (pdb.spec as { selector: { matchLabels: Record<string, string> } }).selector.matchLabels;
      const labels = (dep.spec as { template: { metadata: { labels: Record<string, string> } } }).template
        .metadata.labels;
      return Object.entries(want).every(([k, v]) => labels[k] === v);
    };
    const docs = await render(["--set", "envoy.enabled=true"]);
    for (const name of ["server", "watcher", "envoy"]) {
      const dep = find(docs, "Deployment", `${FULLNAME}-${name}`);
      expect(dep, name).toBeDefined();
      const pdbs = docs.filter((d) => d.kind === "PodDisruptionBudget" && dep && selects(d, dep));
      expect(pdbs.map((p) => p.metadata?.name)).toEqual([`${FULLNAME}-${name}`]);
      expect(pdbs[0]?.spec?.minAvailable).toBe(1);
    }
    const single = await render([
      "--set",
      "envoy.enabled=true",
      "--set",
      "envoy.replicas=1",
      "--set",
      "watcher.replicas=1",
    ]);
    // One replica with minAvailable 1 would block every node drain.
    expect(find(single, "PodDisruptionBudget", `${FULLNAME}-watcher`)).toBeUndefined();
    expect(find(single, "PodDisruptionBudget", `${FULLNAME}-envoy`)).toBeUndefined();
  });

  it.each([
    ["Envoy over ADS", ["--set", "envoy.enabled=true"]],
    ["Envoy from the ConfigMap", ["--set", "envoy.enabled=true", "--set", "dataPlane.sink=envoy-configmap"]],
  ])(
    "%s: ready on its admin /ready, alive on a separate /live, through a listener the kubelet reaches",
    async (_mode, args) => {
      const docs = await render(args);
      const dep = find(docs, "Deployment", `${FULLNAME}-envoy`);
      const c = dep && podOf(dep)?.containers[0];
      if (!c) throw new Error("no Envoy container rendered");
      const probePort = c.ports?.find((p) => p.name === "probes")?.containerPort;
      expect(probePort).toBe(19003);
      expect(c.readinessProbe?.httpGet).toEqual({ path: "/ready", port: "probes" });
      expect(c.livenessProbe?.httpGet).toEqual({ path: "/live", port: "probes" });

      // The fragment Envoy merges into its bootstrap is a valid Bootstrap.
      const args2 = c.args ?? [];
      const fragment = parseYaml(args2[args2.indexOf("--config-yaml") + 1] ?? "") as Record<string, unknown>;
      const protos = EnvoyProtos.load();
      expect(protos.check("envoy.config.bootstrap.v3.Bootstrap", fragment)).toEqual([]);
      type Sock = { socket_address: { address: string; port_value: number } };
      const { static_resources: sr } = fragment as {
        static_resources: {
          listeners: { address: Sock; filter_chains: unknown[] }[];
          clusters: { name: string; load_assignment: unknown }[];
        };
      };
      expect(sr.listeners[0]?.address.socket_address).toEqual({ address: "0.0.0.0", port_value: probePort });
      // And by the rules Envoy enforces on load (protoc-gen-validate, through go-control-plane).
      const resources = [
        ...sr.listeners.map((l) => ({ "@type": TYPE_URL.listener, ...l })),
        ...sr.clusters.map((c) => ({ "@type": TYPE_URL.cluster, ...c })),
      ].map((r) => {
        const any = encodeResource(r);
        return { typeUrl: any.type_url, value: any.value };
      });
      expect(await validateResources(resources)).toEqual([]);
      const routes = JSON.stringify(sr.listeners[0]?.filter_chains);
      // Only /ready goes to the admin interface: nothing else of it (config_dump, quitquitquit) is reachable.
      expect(routes).toContain(`{"match":{"path":"/ready"},"route":{"cluster":"${sr.clusters[0]?.name}"`);
      expect(routes.match(/"route":\{/g)).toHaveLength(1);
      expect(routes).toContain('"match":{"path":"/live"}');

      // ...where the admin interface listens, in the bootstrap this mode reads.
      const adminAt = JSON.stringify(sr.clusters[0]?.load_assignment);
      const bootstrapCm = find(docs, "ConfigMap", `${FULLNAME}-envoy-bootstrap`) as
        { data: Record<string, string> } | undefined;
      const bootstrap = bootstrapCm
        ? (parseYaml(bootstrapCm.data["envoy.yaml"] ?? "") as { admin: { address: Sock } })
        : (envoyBootstrap() as { admin: { address: Sock } });
      const admin = bootstrap.admin.address.socket_address;
      expect(admin.address).toBe("127.0.0.1");
      expect(adminAt).toContain(`"socket_address":{"address":"127.0.0.1","port_value":${admin.port_value}}`);
    },
  );

  it("priorityClassName: none by default, the given class on the server, watcher and Envoy pods", async () => {
    const pods = (docs: Doc[]) =>
      ["server", "watcher", "envoy"].map((n) => {
        const dep = find(docs, "Deployment", `${FULLNAME}-${n}`);
        return dep && podOf(dep);
      });
    for (const pod of pods(await render(["--set", "envoy.enabled=true"])))
      expect(pod).not.toHaveProperty("priorityClassName");
    const set = await render([
      "--set",
      "envoy.enabled=true",
      "--set",
      "server.priorityClassName=system-cluster-critical",
      "--set",
      "watcher.priorityClassName=edge-watcher",
      "--set",
      "envoy.priorityClassName=edge-proxy",
    ]);
    expect(pods(set).map((p) => p?.priorityClassName)).toEqual([
      "system-cluster-critical",
      "edge-watcher",
      "edge-proxy",
    ]);
  });

  it("aggregates EdgeRoutes into view (read), edit and admin (write), never status writes", async () => {
    const docs = await render([]);
    const AGG = "rbac.authorization.k8s.io/aggregate-to-";
    const verbs = (role: string) => {
      const rules = docs.filter(
        (d) => d.kind === "ClusterRole" && d.metadata?.labels?.[`${AGG}${role}`] === "true",
      );
      const of = (resource: string) =>
        new Set(
          rules
            .flatMap((d) => d.rules ?? [])
            .filter((r) => r.apiGroups?.includes("net.10xdev.io") && r.resources?.includes(resource))
            .flatMap((r) => r.verbs),
        );
      return { routes: [...of("edgeroutes")].sort(), status: [...of("edgeroutes/status")].sort() };
    };
    const read = ["get", "list", "watch"];
    const write = ["create", "delete", "deletecollection", "patch", "update"];
    expect(verbs("view")).toEqual({ routes: read, status: read });
    expect(verbs("edit")).toEqual({ routes: [...read, ...write].sort(), status: read });
    expect(verbs("admin")).toEqual({ routes: [...read, ...write].sort(), status: read });
    const off = await render(["--set", "rbac.aggregateClusterRoles=false"]);
    expect(off.filter((d) => Object.keys(d.metadata?.labels ?? {}).some((k) => k.startsWith(AGG)))).toEqual(
      [],
    );
  });

  it.each(Object.entries(RENDERS))("%s: every pod stays hardened", async (_mode, args) => {
    for (const doc of await render(args)) {
      const pod = podOf(doc);
      if (!pod) continue;
      const what = `${doc.kind}/${doc.metadata?.name}`;
      expect(pod.securityContext, what).toMatchObject({
        runAsNonRoot: true,
        seccompProfile: { type: "RuntimeDefault" },
      });
      // Above 10000: no host account shares the IDs.
      expect(Number(pod.securityContext?.runAsUser), what).toBeGreaterThan(10_000);
      expect(Number(pod.securityContext?.runAsGroup), what).toBeGreaterThan(10_000);
      for (const c of pod.containers) {
        expect(c.securityContext, `${what} ${c.name}`).toMatchObject({
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          capabilities: { drop: ["ALL"] },
        });
        expect(c.resources?.requests, `${what} ${c.name}`).toHaveProperty("memory");
        expect(c.resources?.limits, `${what} ${c.name}`).toHaveProperty("memory");
        // No ephemeral-storage by default: a node without local storage isolation could not schedule it (LINT.md).
        expect(c.resources?.requests ?? {}, `${what} ${c.name}`).not.toHaveProperty("ephemeral-storage");
      }
    }
  });
});
