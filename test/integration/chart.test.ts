// The Helm chart, with the real helm, kubectl and apiserver: it lints and
// renders in every documented mode, refuses bad values with a clear message,
// renders the CRD and webhooks that the TypeScript builders make, installs and
// upgrades out of cluster with routes kept, and grants exactly the RBAC the
// server and watcher need.

import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml, parseAllDocuments, stringify as toYaml } from "yaml";
import { buildCrd, type CrdOptions } from "../../src/api/crd.js";
import {
  finalizerPolicy,
  mutatingWebhookConfiguration,
  validatingWebhookConfiguration,
  type WebhookClient,
} from "../harness/registration.js";
import { startControlPlane } from "../harness/control-plane.js";
import type { ControlPlane } from "../../tools/testenv/control-plane.js";
import { startServe, type ServeProcess } from "../../tools/testenv/operator.js";
import { httpsJson } from "../../tools/testenv/https-json.js";
import { waitFor } from "../../tools/testenv/process.js";
import { FINALIZER } from "../../src/api/types.js";
import { EnvoyProtos } from "../envoy/envoy-proto.js";
import { REPO_ROOT } from "../../tools/testenv/testbin.js";
import { v1Route, v2Route } from "./routes.js";

const CHART = path.join(REPO_ROOT, "charts/edge-operator");
const KUBE_VERSION = ["--kube-version", "1.36.3"];
const NS = "edge-system";
const RELEASE = "edge";
const POLICY_NS = "policy";
const FULLNAME = "edge-edge-operator";
const URL_MODE = ["--set", "webhook.urlOverride=https://127.0.0.1:9443", "--set", "webhook.caBundle=Q0E="];

/** Each documented option, as `--set` flags. */
const MODES: Record<string, string[]> = {
  default: [],
  "out-of-cluster": URL_MODE,
  "cert-manager": ["--set", "certs.mode=certManager"],
  "envoy enabled": ["--set", "envoy.enabled=true"],
  "envoy from the ConfigMap": ["--set", "envoy.enabled=true", "--set", "dataPlane.sink=envoy-configmap"],
  "xds with mutual TLS and a plaintext port": [
    "--set",
    "envoy.enabled=true",
    "--set",
    "dataPlane.xds.mutualTLS.enabled=true",
    "--set",
    "dataPlane.xds.mutualTLS.clientCASecret=proxies-ca",
    "--set",
    "envoy.xdsClientCertSecret=envoy-client",
    "--set",
    "dataPlane.xds.plaintext.enabled=true",
    "--set",
    "networkPolicy.enabled=true",
  ],
  "xds without mutual TLS": ["--set", "envoy.enabled=true", "--set", "dataPlane.xds.mutualTLS.enabled=false"],
  "cert-manager with Envoy": ["--set", "certs.mode=certManager", "--set", "envoy.enabled=true"],
  "storage v1": ["--set", "crd.storageVersion=v1"],
  "v1 not served": ["--set", "crd.storageVersion=v2", "--set", "crd.v1.served=false"],
  "v1 deprecated": ["--set", "crd.v1.deprecated=true"],
  "network policy and client CA": [
    "--set",
    "networkPolicy.enabled=true",
    "--set",
    "networkPolicy.apiServerCIDRs={10.0.0.0/28}",
    "--set-string",
    "webhook.clientCA=-----BEGIN CERTIFICATE-----",
  ],
};

let cp: ControlPlane;
let serve: ServeProcess | undefined;

type Doc = {
  kind?: string;
  metadata?: { name?: string; annotations?: Record<string, string> };
  [k: string]: unknown;
};

async function render(args: string[]): Promise<Doc[]> {
  const res = await cp.helm(["template", RELEASE, CHART, "-n", NS, ...KUBE_VERSION, ...args]);
  if (res.code !== 0) throw new Error(`helm template ${args.join(" ")} failed:\n${res.stderr}`);
  return parseAllDocuments(res.stdout)
    .map((d) => d.toJS() as Doc | null)
    .filter((d): d is Doc => d !== null);
}

const find = (docs: Doc[], kind: string, name?: string): Doc => {
  const d = docs.find((x) => x.kind === kind && (name === undefined || x.metadata?.name === name));
  if (!d) throw new Error(`no ${kind} ${name ?? ""} rendered`);
  return d;
};

beforeAll(async () => {
  cp = await startControlPlane();
});

afterAll(async () => {
  await serve?.stop();
  await cp?.stop();
});

describe("helm lint and helm template", () => {
  it.each(Object.entries(MODES))("pass with %s values", async (_mode, args) => {
    const lint = await cp.helm(["lint", CHART, "--strict", ...KUBE_VERSION, ...args]);
    expect(lint.code, lint.stdout + lint.stderr).toBe(0);
    const docs = await render(args);
    expect(docs.length).toBeGreaterThan(5);
    // No wildcard anywhere in the RBAC.
    for (const role of docs.filter((d) => d.kind === "ClusterRole" || d.kind === "Role")) {
      expect(JSON.stringify(role.rules)).not.toContain('"*"');
    }
  });

  it("lets the server list and watch what its cache holds: EdgeRoutes, Services, EndpointSlices", async () => {
    const role = find(await render([]), "ClusterRole", `${FULLNAME}-server`) as Doc & {
      rules: { apiGroups: string[]; resources: string[]; verbs: string[] }[];
    };
    const verbsOn = (group: string, resource: string): string[] =>
      role.rules
        .filter((r) => r.apiGroups.includes(group) && r.resources.includes(resource))
        .flatMap((r) => r.verbs);
    for (const [group, resource] of [
      ["net.10xdev.io", "edgeroutes"],
      ["", "services"],
      ["discovery.k8s.io", "endpointslices"],
    ] as const)
      expect(verbsOn(group, resource), `${resource}`).toEqual(expect.arrayContaining(["list", "watch"]));
  });

  it("gives the server pod its name, uid and namespace (downward API) and its ACK records' Lease prefix", async () => {
    const dep = find(await render([]), "Deployment", `${FULLNAME}-server`) as Doc & {
      spec: { template: { spec: { containers: { env: { name: string }[] }[] } } };
    };
    const env = dep.spec.template.spec.containers[0]?.env ?? [];
    const byName = Object.fromEntries(env.map((e) => [e.name, e]));
    expect(byName.POD_NAME).toEqual({
      name: "POD_NAME",
      valueFrom: { fieldRef: { fieldPath: "metadata.name" } },
    });
    expect(byName.POD_UID).toEqual({
      name: "POD_UID",
      valueFrom: { fieldRef: { fieldPath: "metadata.uid" } },
    });
    expect(byName.POD_NAMESPACE).toEqual({
      name: "POD_NAMESPACE",
      valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } },
    });
    expect(byName.EDGE_OPERATOR_XDS_ACK_LEASE_PREFIX).toEqual({
      name: "EDGE_OPERATOR_XDS_ACK_LEASE_PREFIX",
      value: `${FULLNAME}-xds`,
    });
    // The ACK records go in Leases the chart makes, which RBAC then names.
    expect(byName.EDGE_OPERATOR_XDS_ACK_LEASE_SLOTS).toEqual({
      name: "EDGE_OPERATOR_XDS_ACK_LEASE_SLOTS",
      value: "5",
    });
    const leases = (docs: Doc[]) =>
      docs.filter((d) => d.kind === "Lease" && d.metadata?.name?.startsWith(`${FULLNAME}-xds-`)).length;
    expect(leases(await render([]))).toBe(5);
    expect(leases(await render(["--set", "server.replicas=3"]))).toBe(7);
    expect(leases(await render(["--set", "server.ackLeaseSlots=12"]))).toBe(12);
    expect(leases(await render(["--set", "dataPlane.sink=envoy-configmap"]))).toBe(0);
  });

  it("renders the in-cluster parts only in cluster, and cert-manager's only in certManager mode", async () => {
    const kinds = (docs: Doc[]) => docs.map((d) => `${d.kind}/${d.metadata?.name}`);
    const inCluster = kinds(await render([]));
    expect(inCluster).toContain(`Deployment/${FULLNAME}-server`);
    expect(inCluster).toContain(`Deployment/${FULLNAME}-watcher`);
    expect(inCluster).toContain(`PodDisruptionBudget/${FULLNAME}-server`);
    expect(inCluster).toContain(`Job/${FULLNAME}-release-finalizers`);
    expect(inCluster).not.toContain(`Deployment/${FULLNAME}-envoy`);
    const hook = find(await render([]), "Job", `${FULLNAME}-release-finalizers`) as Doc & {
      metadata: { annotations: Record<string, string> };
      spec: { template: { spec: { containers: { args: unknown[] }[] } } };
    };
    expect(hook.metadata.annotations["helm.sh/hook"]).toBe("pre-delete");
    expect(hook.spec.template.spec.containers[0]?.args).toEqual([
      "finalizer",
      "release",
      "--all",
      `--reason=helm uninstall of release ${RELEASE}: the data plane is removed with it`,
    ]);
    const outside = kinds(await render(URL_MODE));
    expect(
      outside.filter((k) => k.startsWith("Deployment/") || k.startsWith("Job/") || k.startsWith("Service/")),
    ).toEqual([]);
    expect(outside).toContain(`ServiceAccount/${FULLNAME}-server`);
    const cm = await render(MODES["cert-manager"] ?? []);
    expect(kinds(cm)).toContain(`Certificate/${FULLNAME}-serving`);
    for (const kind of [
      "CustomResourceDefinition",
      "MutatingWebhookConfiguration",
      "ValidatingWebhookConfiguration",
    ]) {
      expect(find(cm, kind).metadata?.annotations?.["cert-manager.io/inject-ca-from"]).toBe(
        `${NS}/${FULLNAME}-serving`,
      );
    }
    expect(kinds(await render(MODES["envoy enabled"] ?? []))).toContain(`Service/${FULLNAME}-envoy`);
  });

  it("hardens the server pod and probes real health over HTTPS", async () => {
    const dep = find(await render([]), "Deployment", `${FULLNAME}-server`) as Doc & {
      spec: {
        replicas: number;
        template: { spec: Record<string, unknown> & { containers: Record<string, unknown>[] } };
      };
    };
    expect(dep.spec.replicas).toBe(2);
    const pod = dep.spec.template.spec;
    expect(pod.securityContext).toMatchObject({
      runAsNonRoot: true,
      seccompProfile: { type: "RuntimeDefault" },
    });
    expect(pod.topologySpreadConstraints).toHaveLength(1);
    const c = pod.containers[0] ?? {};
    expect(c.securityContext).toMatchObject({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      capabilities: { drop: ["ALL"] },
    });
    expect(c.readinessProbe).toMatchObject({ httpGet: { path: "/readyz", scheme: "HTTPS" } });
    expect(c.livenessProbe).toMatchObject({ httpGet: { path: "/healthz", scheme: "HTTPS" } });
    // Ready as soon as it serves, not a readiness period after its start.
    expect(c.startupProbe).toMatchObject({
      httpGet: { path: "/healthz", scheme: "HTTPS" },
      periodSeconds: 1,
    });
    expect(c.resources).toMatchObject({ requests: { cpu: "100m" } });
    expect(c.args).toEqual(
      expect.arrayContaining([
        `--cert-secret=${NS}/${FULLNAME}-tls`,
        "--inject-ca",
        `--webhook-config-name=${FULLNAME}`,
      ]),
    );
    const watcher = find(await render([]), "Deployment", `${FULLNAME}-watcher`) as Doc & {
      spec: { replicas: number; template: { spec: { containers: { args: string[] }[] } } };
    };
    expect(watcher.spec.replicas).toBe(2);
    expect(watcher.spec.template.spec.containers[0]?.args).toContain(
      `--reconcile-url=https://${FULLNAME}.${NS}.svc:443/reconcile`,
    );
  });

  it("probes the watcher: ready when its caches have synced, alive while /reconcile answers", async () => {
    type Probe = { httpGet?: { path?: string; port?: unknown; scheme?: string } };
    type Container = {
      args: string[];
      ports: { name: string; containerPort: number }[];
      readinessProbe?: Probe & { periodSeconds?: number; failureThreshold?: number };
      livenessProbe?: Probe;
    };
    const container = async (args: string[]): Promise<Container> => {
      const dep = find(await render(args), "Deployment", `${FULLNAME}-watcher`) as Doc & {
        spec: { template: { spec: { containers: Container[] } } };
      };
      const c = dep.spec.template.spec.containers[0];
      if (!c) throw new Error("the watcher Deployment has no container");
      return c;
    };
    const c = await container([]);
    // Both probes reach the plain-HTTP listener the watcher is told to open.
    const metricsPort = c.ports.find((p) => p.name === "metrics")?.containerPort;
    // The pod IP only (the watcher reads POD_IP): nothing else on the node reaches it.
    expect(c.args).toContain(`--metrics-listen=:${metricsPort}`);
    expect(c.readinessProbe?.httpGet).toEqual({ path: "/readyz", port: "metrics" });
    // Ready within a second of its lists; unready only after 10 s of failures.
    expect(c.readinessProbe).toMatchObject({ periodSeconds: 1, failureThreshold: 10 });
    expect(c.livenessProbe?.httpGet).toEqual({ path: "/healthz", port: "metrics" });
    expect(c.args).toContain("--unhealthy-after=2m");
    expect((await container(["--set", "watcher.unhealthyAfter=5m"])).args).toContain("--unhealthy-after=5m");
    const bad = await cp.helm([
      "template",
      RELEASE,
      CHART,
      ...KUBE_VERSION,
      "--set",
      "watcher.unhealthyAfter=soon",
    ]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain("unhealthyAfter");
  });
});

describe("the data plane: xds by default, Envoy's bootstrap pointed at the ADS Service", () => {
  type Container = {
    args: string[];
    ports: { name: string; containerPort: number }[];
    volumeMounts?: { name: string; mountPath: string }[];
  };
  type PodSpec = { containers: Container[]; volumes: Record<string, unknown>[] };
  const podOf = (docs: Doc[], name: string): PodSpec =>
    (find(docs, "Deployment", name) as Doc & { spec: { template: { spec: PodSpec } } }).spec.template.spec;
  const serverArgs = (docs: Doc[]) => podOf(docs, `${FULLNAME}-server`).containers[0]?.args ?? [];
  const ADS_HOST = `${FULLNAME}-ads.${NS}.svc`;
  let protos: EnvoyProtos;
  beforeAll(() => {
    protos = EnvoyProtos.load();
  });

  it("the default sink is xds, with Envoy or without; memory only when asked (tests, the demo)", async () => {
    for (const args of [[], ["--set", "envoy.enabled=true"]]) {
      const a = serverArgs(await render(args));
      expect(a).toContain("--dataplane=xds");
      expect(a).toContain("--xds-listen=0.0.0.0:18000");
      // The serving certificate names the ADS Service: Envoy checks that name.
      expect(a).toContain(`--cert-dns=${ADS_HOST}`);
    }
    expect(serverArgs(await render(["--set", "dataPlane.sink=memory"]))).toContain("--dataplane=memory");
    const cm = await render(["--set", "dataPlane.sink=envoy-configmap"]);
    expect(serverArgs(cm)).toContain("--dataplane=envoy-configmap");
    expect(serverArgs(cm).join(" ")).not.toContain("--xds-listen");
    expect(cm.filter((d) => d.kind === "Service" && d.metadata?.name === `${FULLNAME}-ads`)).toEqual([]);
    // The cert-manager Certificate names it as well.
    const cert = find(
      await render(MODES["cert-manager"] ?? []),
      "Certificate",
      `${FULLNAME}-serving`,
    ) as Doc & {
      spec: { dnsNames: string[] };
    };
    expect(cert.spec.dnsNames).toContain(ADS_HOST);
  });

  it("the debug routes are off unless asked for", async () => {
    expect(serverArgs(await render([]))).not.toContain("--debug-routes");
    expect(serverArgs(await render(["--set", "server.debugRoutes=true"]))).toContain("--debug-routes");
  });

  it("a Service for the ADS port(s) reaches the server pods' xds ports", async () => {
    const docs = await render(MODES["xds with mutual TLS and a plaintext port"] ?? []);
    const svc = find(docs, "Service", `${FULLNAME}-ads`) as Doc & {
      spec: { selector: Record<string, string>; ports: { name: string; port: number; targetPort: string }[] };
    };
    const server = podOf(docs, `${FULLNAME}-server`);
    const container = server.containers[0] as Container;
    const named = new Map(container.ports.map((p) => [p.name, p.containerPort]));
    expect(svc.spec.ports.map((p) => [p.name, p.port, named.get(p.targetPort)])).toEqual([
      ["xds", 18000, 18000],
      ["xds-plaintext", 18001, 18001],
    ]);
    expect(svc.spec.selector["app.kubernetes.io/component"]).toBe("server");
    expect(container.args).toEqual(
      expect.arrayContaining([
        "--xds-plaintext-listen=0.0.0.0:18001",
        "--xds-client-ca=/etc/edge-operator/xds-client-ca/ca.crt",
      ]),
    );
    expect(JSON.stringify(server.volumes)).toContain('"secretName":"proxies-ca"');
    // The NetworkPolicy lets the Envoy pods in to both ADS ports.
    const np = find(docs, "NetworkPolicy", `${FULLNAME}-server`) as Doc & {
      spec: { ingress: { ports: { port: number }[]; from: unknown[] }[] };
    };
    const ads = np.spec.ingress.find((r) => r.ports.some((p) => p.port === 18000));
    expect(ads?.ports.map((p) => p.port)).toEqual([18000, 18001]);
    expect(JSON.stringify(ads?.from)).toContain('"app.kubernetes.io/component":"envoy"');
    // The real apiserver takes the Service and the policy (server-side dry run).
    if ((await cp.kubectl(["get", "namespace", NS])).code !== 0)
      await cp.kubectl(["create", "namespace", NS]);
    const input = [svc, np].map((d) => toYaml(d)).join("---\n");
    const dry = await cp.kubectl(["apply", "--dry-run=server", "-n", NS, "-f", "-"], { input });
    expect(dry.code, dry.stderr).toBe(0);
  });

  it("mutual TLS on the ADS port by default: the operator's CA checks the proxies, the server keeps their pair", async () => {
    const CLIENT_SECRET = `${FULLNAME}-envoy-ads-client`;
    for (const args of [[], ["--set", "envoy.enabled=true"]]) {
      const a = serverArgs(await render(args));
      expect(a).toContain("--xds-client-auth=required");
      expect(a).toContain(`--xds-client-cert-secret=${CLIENT_SECRET}`);
      // The client CA is the managed one, not a file.
      expect(a.join(" ")).not.toContain("--xds-client-ca");
    }
    // Turned off: said so to the server, which would otherwise require certificates with --cert-secret.
    const off = serverArgs(await render(MODES["xds without mutual TLS"] ?? []));
    expect(off).toContain("--xds-client-auth=none");
    expect(off.join(" ")).not.toContain("--xds-client-cert-secret");
    // Your own CA: the server reads it from your Secret and keeps no pair.
    const own = await render(MODES["xds with mutual TLS and a plaintext port"] ?? []);
    expect(serverArgs(own)).toContain("--xds-client-ca=/etc/edge-operator/xds-client-ca/ca.crt");
    expect(serverArgs(own).join(" ")).not.toContain("--xds-client-cert-secret");
    expect(own.filter((d) => d.metadata?.name === CLIENT_SECRET)).toEqual([]);
    // cert-manager: a client Certificate from the serving one's Issuer, whose CA is the client CA.
    const cm = await render(MODES["cert-manager with Envoy"] ?? []);
    expect(serverArgs(cm)).toEqual(
      expect.arrayContaining(["--xds-client-auth=required", "--xds-client-ca=/etc/edge-operator/tls/ca.crt"]),
    );
    type Cert = Doc & {
      spec: { secretName: string; commonName?: string; usages: string[]; issuerRef: unknown };
    };
    const client = find(cm, "Certificate", CLIENT_SECRET) as Cert;
    const serving = find(cm, "Certificate", `${FULLNAME}-serving`) as Cert;
    expect(client.spec).toMatchObject({ secretName: CLIENT_SECRET, commonName: "envoy" });
    expect(client.spec.usages).toContain("client auth");
    expect(client.spec.usages).not.toContain("server auth");
    expect(client.spec.issuerRef).toEqual(serving.spec.issuerRef);
    expect(podOf(cm, `${FULLNAME}-envoy`).volumes.find((v) => v.name === "ads-client")).toMatchObject({
      secret: { secretName: CLIENT_SECRET },
    });
  });

  it.each([
    ["TLS only", MODES["xds without mutual TLS"] ?? [], undefined],
    [
      "mutual TLS, the chart's pair (the default)",
      ["--set", "envoy.enabled=true"],
      `${FULLNAME}-envoy-ads-client`,
    ],
    [
      "mutual TLS, your own CA and pair",
      MODES["xds with mutual TLS and a plaintext port"] ?? [],
      "envoy-client",
    ],
  ])(
    "Envoy's bootstrap (%s) is a valid Bootstrap: ADS over gRPC to the ADS Service, trusting the operator's CA",
    async (_mode, args, clientSecret) => {
      const mutual = clientSecret !== undefined;
      const docs = await render(args);
      const cm = find(docs, "ConfigMap", `${FULLNAME}-envoy-bootstrap`) as Doc & {
        data: Record<string, string>;
      };
      const bootstrap = parseYaml(cm.data["envoy.yaml"] ?? "") as Record<string, unknown>;
      const TYPE = "envoy.config.bootstrap.v3.Bootstrap";
      expect(protos.check(TYPE, bootstrap)).toEqual([]);
      expect(protos.roundTrip(TYPE, bootstrap)).toEqual(bootstrap);
      expect(bootstrap).toMatchObject({
        dynamic_resources: {
          ads_config: {
            api_type: "GRPC",
            grpc_services: [{ envoy_grpc: { cluster_name: "edge-operator-ads" } }],
          },
          lds_config: { ads: {} },
          cds_config: { ads: {} },
        },
      });
      const text = JSON.stringify(bootstrap);
      const cluster = (bootstrap as { static_resources: { clusters: Record<string, unknown>[] } })
        .static_resources.clusters[0];
      expect(JSON.stringify(cluster?.load_assignment)).toContain(
        `"socket_address":{"address":"${ADS_HOST}","port_value":18000}`,
      );
      // The CA and the pair come from the mounted files through SDS, re-read when the kubelet swaps them.
      const sds = (name: string) => ({
        name,
        sds_config: { path_config_source: { path: `/etc/envoy/bootstrap/${name}-sds.yaml` } },
      });
      expect(cluster?.transport_socket).toMatchObject({
        typed_config: {
          sni: ADS_HOST,
          common_tls_context: {
            combined_validation_context: {
              default_validation_context: {
                match_typed_subject_alt_names: [{ san_type: "DNS", matcher: { exact: ADS_HOST } }],
              },
              validation_context_sds_secret_config: sds("ads-ca"),
            },
            ...(mutual ? { tls_certificate_sds_secret_configs: [sds("ads-client")] } : {}),
          },
        },
      });
      expect(text.includes("tls_certificate")).toBe(mutual);
      // Each SDS file is what Envoy's file subscription reads: a DiscoveryResponse of one named Secret.
      const RESPONSE = "envoy.service.discovery.v3.DiscoveryResponse";
      const files: Record<string, Record<string, unknown>> = {
        "ads-ca": {
          name: "ads-ca",
          validation_context: {
            trusted_ca: { filename: "/etc/envoy/ads-ca/ca.crt" },
            watched_directory: { path: "/etc/envoy/ads-ca" },
          },
        },
        "ads-client": {
          name: "ads-client",
          tls_certificate: {
            certificate_chain: { filename: "/etc/envoy/ads-client/tls.crt" },
            private_key: { filename: "/etc/envoy/ads-client/tls.key" },
            watched_directory: { path: "/etc/envoy/ads-client" },
          },
        },
      };
      for (const [name, want] of Object.entries(files)) {
        const file = cm.data[`${name}-sds.yaml`];
        if (name === "ads-client" && !mutual) {
          expect(file).toBeUndefined();
          continue;
        }
        const response = parseYaml(file ?? "") as Record<string, unknown>;
        expect(protos.check(RESPONSE, response), name).toEqual([]);
        expect(protos.roundTrip(RESPONSE, response)).toEqual(response);
        expect(response).toEqual({
          resources: [
            { "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret", ...want },
          ],
        });
      }

      // The Envoy pod reads that bootstrap, and mounts the CA bundle, not the Secret's keys.
      const envoy = podOf(docs, `${FULLNAME}-envoy`);
      const c = envoy.containers[0] as Container;
      expect(c.args.slice(0, 2)).toEqual(["-c", "/etc/envoy/bootstrap/envoy.yaml"]);
      const mounts = new Map((c.volumeMounts ?? []).map((m) => [m.name, m.mountPath]));
      expect(mounts.get("ads-ca")).toBe("/etc/envoy/ads-ca");
      expect(envoy.volumes.find((v) => v.name === "ads-ca")).toEqual({
        name: "ads-ca",
        secret: { secretName: `${FULLNAME}-tls`, items: [{ key: "ca.crt", path: "ca.crt" }] },
      });
      expect(mounts.has("ads-client")).toBe(mutual);
      if (mutual)
        expect(envoy.volumes.find((v) => v.name === "ads-client")).toEqual({
          name: "ads-client",
          secret: {
            secretName: clientSecret,
            items: [
              { key: "tls.crt", path: "tls.crt" },
              { key: "tls.key", path: "tls.key" },
            ],
          },
        });
    },
  );

  it("Envoy exposes the HTTPS listener of routes with TLS: container port 8443, Service port envoy.service.httpsPort", async () => {
    for (const [args, port] of [
      [MODES["envoy enabled"] ?? [], 443],
      [[...(MODES["envoy enabled"] ?? []), "--set", "envoy.service.httpsPort=8443"], 8443],
    ] as const) {
      const docs = await render([...args]);
      const c = podOf(docs, `${FULLNAME}-envoy`).containers[0] as Container;
      expect(new Map(c.ports.map((p) => [p.name, p.containerPort])).get("https")).toBe(8443);
      const svc = find(docs, "Service", `${FULLNAME}-envoy`) as Doc & {
        spec: { ports: { name: string; port: number; targetPort: string }[] };
      };
      expect(svc.spec.ports.find((p) => p.name === "https")).toMatchObject({ port, targetPort: "https" });
    }
  });

  it("Envoy from the ConfigMap sink reads the server-written files as before", async () => {
    const docs = await render(MODES["envoy from the ConfigMap"] ?? []);
    const c = podOf(docs, `${FULLNAME}-envoy`).containers[0] as Container;
    expect(c.args.slice(0, 2)).toEqual(["-c", "/etc/envoy/xds/envoy.yaml"]);
    expect(docs.filter((d) => d.metadata?.name === `${FULLNAME}-envoy-bootstrap`)).toEqual([]);
  });
});

describe("the server's V8 heap sizing", () => {
  type Env = { name: string; value?: string }[];
  const serverEnv = async (args: string[]): Promise<Env> => {
    const dep = find(await render(args), "Deployment", `${FULLNAME}-server`) as Doc & {
      spec: { template: { spec: { containers: { env: Env }[] } } };
    };
    return dep.spec.template.spec.containers[0]?.env ?? [];
  };

  it("sets NODE_OPTIONS that this Node accepts there, and caps the old generation", async () => {
    const opts = (await serverEnv([])).find((e) => e.name === "NODE_OPTIONS")?.value ?? "";
    expect(opts).toMatch(/--max-old-space-size=\d+/);
    // The env replaces the image's NODE_OPTIONS: what the Dockerfile sets must stay.
    const image = /NODE_OPTIONS=(\S+)/.exec(readFileSync(path.join(REPO_ROOT, "Dockerfile"), "utf8"))?.[1];
    expect(image).toBeDefined();
    for (const flag of (image ?? "").split(/\s+/)) expect(opts.split(/\s+/)).toContain(flag);
    // Not every V8 flag is allowed in NODE_OPTIONS (--trace-gc is not): Node must start with these.
    const run = spawnSync(
      process.execPath,
      ["-e", "process.stdout.write(require('v8').getHeapStatistics().heap_size_limit + ' ' + typeof gc)"],
      {
        env: { ...process.env, NODE_OPTIONS: opts },
        encoding: "utf8",
      },
    );
    expect(run.status, run.stderr).toBe(0);
    const [limit, gc] = run.stdout.split(" ");
    // The xDS server collects written frames through it (write-budget.ts).
    expect(gc).toBe("function");
    const limitMiB = Number(limit) / 1024 / 1024;
    const oldMiB = Number(/--max-old-space-size=(\d+)/.exec(opts)?.[1]);
    // The heap limit is the old generation plus the young one: the flag took effect.
    expect(limitMiB).toBeGreaterThanOrEqual(oldMiB);
    expect(limitMiB).toBeLessThan(oldMiB + 64);
  });

  it("leaves Node's and glibc's defaults when asked", async () => {
    const env = await serverEnv(["--set", "server.nodeOptions=", "--set", "server.mallocArenaMax=0"]);
    expect(env.map((e) => e.name)).not.toContain("NODE_OPTIONS");
    expect(env.map((e) => e.name)).not.toContain("MALLOC_ARENA_MAX");
  });

  it("limits glibc's malloc arenas", async () => {
    expect((await serverEnv([])).find((e) => e.name === "MALLOC_ARENA_MAX")?.value).toBe("2");
  });
});

describe("values that break the schema", () => {
  it.each([
    [["--set", "crd.storageVersio=v2"], "at '/crd': additional properties 'storageVersio' not allowed"],
    [["--set", "crd.storageVersion=v3"], "at '/crd/storageVersion': value must be one of 'v1', 'v2'"],
    [["--set", "server.replicas=0"], "at '/server/replicas': minimum: got 0, want 1"],
    [["--set", "certs.mode=vault"], "at '/certs/mode': value must be one of 'builtin', 'certManager'"],
    [
      ["--set", "webhook.urlOverride=http://127.0.0.1:9443", "--set", "webhook.caBundle=Q0E="],
      "at '/webhook/urlOverride'",
    ],
    [
      ["--set", "webhook.urlOverride=https://127.0.0.1:9443"],
      "webhook.caBundle is required with webhook.urlOverride",
    ],
    [
      ["--set", "crd.storageVersion=v1", "--set", "crd.v1.served=false"],
      "crd.v1.served=false needs crd.storageVersion=v2",
    ],
    [
      ["--set", "envoy.enabled=true", "--set", "dataPlane.sink=memory"],
      "envoy.enabled=true needs dataPlane.sink=xds (or auto) or envoy-configmap",
    ],
    [
      ["--set", "envoy.enabled=true", "--set", "dataPlane.xds.mutualTLS.clientCASecret=ca"],
      "envoy.xdsClientCertSecret is required with dataPlane.xds.mutualTLS.clientCASecret",
    ],
    [["--set", "dataPlane.sink=grpc"], "at '/dataPlane/sink': value must be one of"],
    [["--set", "dataPlane.xds.port=0"], "at '/dataPlane/xds/port': minimum: got 0, want 1"],
  ])("%j is refused: %s", async (args, message) => {
    const res = await cp.helm(["template", RELEASE, CHART, "-n", NS, ...KUBE_VERSION, ...args]);
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain(message);
  });
});

describe("the rendered objects equal what the TypeScript builders make", () => {
  const service = { name: FULLNAME, namespace: NS, path: "/convert", port: 443 };
  const cases: [string, string[], CrdOptions][] = [
    // A fresh install stores v2, the version the operator reads (BENCHMARKS.md, "Write path").
    ["default", [], { storageVersion: "v2", conversion: { service } }],
    [
      "out-of-cluster",
      URL_MODE,
      { storageVersion: "v2", conversion: { url: "https://127.0.0.1:9443/convert", caBundle: "Q0E=" } },
    ],
    ["storage v1", ["--set", "crd.storageVersion=v1"], { storageVersion: "v1", conversion: { service } }],
    [
      "v1 not served",
      ["--set", "crd.storageVersion=v2", "--set", "crd.v1.served=false"],
      { storageVersion: "v2", served: ["v2"], conversion: { service } },
    ],
    [
      "v1 deprecated",
      ["--set", "crd.v1.deprecated=true", "--set", "crd.v1.deprecationWarning=use v2"],
      { storageVersion: "v2", deprecated: { v1: "use v2" }, conversion: { service } },
    ],
  ];

  it.each(cases)("the CRD, %s", async (_mode, args, opts) => {
    const crd = find(await render(args), "CustomResourceDefinition");
    const want = buildCrd(opts);
    expect(crd.metadata?.name).toBe(want.metadata.name);
    expect(crd.metadata?.annotations?.["helm.sh/resource-policy"]).toBe("keep");
    expect(crd.spec).toEqual(want.spec);
  });

  it.each([
    ["in cluster", [], { service: { name: FULLNAME, namespace: NS, port: 443 } }],
    ["out of cluster", URL_MODE, { url: "https://127.0.0.1:9443", caBundle: "Q0E=" }],
  ] as [string, string[], WebhookClient][])("the webhook configurations, %s", async (_mode, args, client) => {
    const docs = await render([...args, "--set", "webhook.finalizerPolicy=enabled"]);
    const opts = {
      client,
      name: FULLNAME,
      operatorUsers: [`system:serviceaccount:${NS}:${FULLNAME}-server`],
      finalizerPolicy: true,
      namespaceSelector: {
        matchExpressions: [
          { key: "kubernetes.io/metadata.name", operator: "NotIn" as const, values: ["kube-system", NS] },
        ],
      },
    };
    for (const want of [mutatingWebhookConfiguration(opts), validatingWebhookConfiguration(opts)]) {
      const got = find(docs, want.kind, want.metadata.name);
      expect(got.webhooks).toEqual(want.webhooks);
    }
    // Without the policy /mutate's create webhook has no condition: every create lacks the finalizer.
    const plain = await render([...args, "--set", "webhook.finalizerPolicy=disabled"]);
    const without = { ...opts, finalizerPolicy: false };
    for (const want of [mutatingWebhookConfiguration(without), validatingWebhookConfiguration(without)]) {
      const got = find(plain, want.kind, want.metadata.name);
      expect(got.webhooks).toEqual(want.webhooks);
    }
    for (const want of finalizerPolicy(opts)) {
      const got = find(docs, want.kind, want.metadata.name) as Doc & { spec?: unknown };
      expect(got.spec).toEqual(want.spec);
    }
  });

  const ENABLED = ["--set", "webhook.finalizerPolicy=enabled"];
  it.each([
    ["by default, in the cluster on 1.36", [], true],
    // Out of cluster no post-install Job can wait out the apiserver's first seconds.
    ["by default, out of cluster", URL_MODE, false],
    ["by default, on 1.35", ["--kube-version", "1.35.0"], false],
    ["disabled", ["--set", "webhook.finalizerPolicy=disabled"], false],
    ["enabled, on 1.36", ENABLED, true],
    ["enabled, out of cluster", [...URL_MODE, ...ENABLED], true],
    [
      "enabled, on 1.35 serving the v1 API",
      [
        "--kube-version",
        "1.35.0",
        "--api-versions",
        "admissionregistration.k8s.io/v1/MutatingAdmissionPolicy",
        ...ENABLED,
      ],
      true,
    ],
  ] as [string, string[], boolean][])("the finalizer policy, %s", async (_mode, args, rendered) => {
    const kinds = (await render(args)).map((d) => d.kind);
    expect(kinds.includes("MutatingAdmissionPolicy")).toBe(rendered);
    expect(kinds.includes("MutatingAdmissionPolicyBinding")).toBe(rendered);
    // /mutate adds the finalizer where the policy does not: it is registered either way.
    expect(kinds).toContain("MutatingWebhookConfiguration");
  });

  it.each([
    ["in the release's namespace", ["-n", NS], "default"],
    ["in default", ["-n", "default"], "kube-public"],
    ["with a namespace named", ["-n", NS, "--set", "webhook.admissionWait.namespace=apps"], "apps"],
  ] as [string, string[], string][])(
    "a post-install Job waits until creates pass the policy, released %s",
    async (_where, args, probeNs) => {
      const docs = await render(args);
      const name = `${FULLNAME}-admission-wait`;
      const job = find(docs, "Job", name) as Doc & {
        metadata: { annotations?: Record<string, string> };
        spec: { template: { spec: { containers: { args: string[] }[] } } };
      };
      expect(job.metadata.annotations?.["helm.sh/hook"]).toBe("post-install");
      expect(job.spec.template.spec.containers[0]?.args).toEqual([
        "wait-admission",
        `--namespace=${probeNs}`,
        "--timeout=300s",
      ]);
      // Its right to create routes is in the probe's namespace alone, and goes with the Job.
      const role = find(docs, "Role", name) as Doc & {
        metadata: { namespace?: string; annotations?: Record<string, string> };
        rules: unknown;
      };
      expect(role.metadata.namespace).toBe(probeNs);
      expect(role.rules).toEqual([
        { apiGroups: ["net.10xdev.io"], resources: ["edgeroutes"], verbs: ["create"] },
      ]);
      expect(role.metadata.annotations?.["helm.sh/hook-delete-policy"]).toContain("hook-succeeded");
      // Without the policy there is no window to wait out, and no Job.
      const without = await render([...args, "--set", "webhook.finalizerPolicy=disabled"]);
      expect(without.some((d) => d.metadata?.name === name)).toBe(false);
    },
  );

  it("refuses a probe namespace the webhooks leave out", async () => {
    await expect(render(["--set", "webhook.admissionWait.namespace=kube-system"])).rejects.toThrow(
      "webhook.admissionWait.namespace=kube-system: the webhooks and the finalizer policy leave that namespace out",
    );
  });

  it("refuses the finalizer policy where the cluster cannot run it", async () => {
    await expect(render(["--kube-version", "1.35.0", ...ENABLED])).rejects.toThrow(
      "webhook.finalizerPolicy=enabled needs admissionregistration.k8s.io/v1 MutatingAdmissionPolicy",
    );
  });
});

describe("helm install out of cluster, on the real apiserver", () => {
  const kubectl = async (args: string[], input?: string) =>
    cp.kubectl(args, input === undefined ? {} : { input });
  /** `helm upgrade --reuse-values` of the release with these `--set` values. */
  const upgrade = (...values: string[]) =>
    cp.helm(["upgrade", RELEASE, CHART, "-n", NS, "--reuse-values", ...values.flatMap((v) => ["--set", v])]);

  beforeAll(async () => {
    serve = await startServe({ env: { KUBECONFIG: cp.kubeconfig } });
  });

  it("installs: the CRD is established, the webhooks call the local server, v1 and v2 routes live side by side", async () => {
    const install = await cp.helm([
      "install",
      RELEASE,
      CHART,
      "-n",
      NS,
      "--create-namespace",
      "--set",
      `webhook.urlOverride=${serve?.url}`,
      "--set",
      `webhook.caBundle=${serve?.caBundle}`,
    ]);
    expect(install.code, install.stderr).toBe(0);
    expect(install.stdout).toContain("Out-of-cluster mode");
    const est = await kubectl([
      "wait",
      "--for=condition=Established",
      "crd/edgeroutes.net.10xdev.io",
      "--timeout=60s",
    ]);
    expect(est.code, est.stderr).toBe(0);
    // A fresh install stores v2, the version the operator reads and watches.
    const storage = await kubectl([
      "get",
      "crd",
      "edgeroutes.net.10xdev.io",
      "-o",
      "jsonpath={.spec.versions[?(@.storage==true)].name}",
    ]);
    expect(storage.stdout, storage.stderr).toBe("v2");
    for (const [kind, suffix] of [
      ["mutatingwebhookconfiguration", "mutate"],
      ["validatingwebhookconfiguration", "validate"],
    ] as const) {
      const got = await kubectl([
        "get",
        kind,
        `${FULLNAME}-${suffix}`,
        "-o",
        "jsonpath={.webhooks[0].clientConfig.url}",
      ]);
      expect(got.stdout).toBe(`${serve?.url}/${suffix}`);
    }
    expect((await kubectl(["create", "namespace", "apps"])).code).toBe(0);
    const apply = await kubectl(
      ["apply", "-f", "-"],
      [v1Route("one", { namespace: "apps" }), v2Route("two", { namespace: "apps" })]
        .map((r) => toYaml(r))
        .join("---\n"),
    );
    expect(apply.code, apply.stderr).toBe(0);
    // Each read in the other version goes through /convert at the URL the chart registered.
    const asV2 = await kubectl([
      "get",
      "edgeroutes.v2.net.10xdev.io",
      "one",
      "-n",
      "apps",
      "-o",
      "jsonpath={.spec.rules[0].backends[0].name}",
    ]);
    expect(asV2.stdout, asV2.stderr).toBe("checkout");
    const asV1 = await kubectl([
      "get",
      "edgeroutes.v1.net.10xdev.io",
      "two",
      "-n",
      "apps",
      "-o",
      "jsonpath={.spec.service}",
    ]);
    expect(asV1.stdout, asV1.stderr).toBe("checkout");
    const bad = await kubectl(
      ["apply", "-f", "-"],
      toYaml(v1Route("bad", { namespace: "apps", port: 70000 })),
    );
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain("spec.port");
  });

  it("adds the finalizer and the v2 defaults inside the apiserver: a create calls /validate, not /mutate", async () => {
    const calls = async (route: string): Promise<number> => {
      const r = await httpsJson(`${serve?.url}/metrics`, serve?.caPem ?? "", "GET");
      const text = String(r.body);
      let n = 0;
      for (const m of text.matchAll(
        new RegExp(
          `^edge_operator_http_request_duration_seconds_count\\{[^}]*route="${route}"[^}]*\\} (\\S+)$`,
          "gm",
        ),
      ))
        n += Number(m[1]);
      return n;
    };
    const finalizersOf = (resource: string, name: string) =>
      kubectl(["get", resource, name, "-n", POLICY_NS, "-o", "jsonpath={.metadata.finalizers}"]);
    // As docs/install.md says: enabled by an upgrade once the CRD exists.
    const up = await upgrade("webhook.finalizerPolicy=enabled");
    expect(up.code, up.stderr).toBe(0);
    const policy = await kubectl(["get", "mutatingadmissionpolicy", `${FULLNAME}-finalizer`, "-o", "name"]);
    expect(policy.code, policy.stderr).toBe(0);
    // A namespace of their own: the tests below count the routes in "apps".
    expect((await kubectl(["create", "namespace", POLICY_NS])).code).toBe(0);
    // The policy is in force once a server-side dry-run create passes without
    // a /mutate call: until the apiserver's policy plugin has seen the new
    // binding, /mutate adds the finalizer, and until it has read the CRD's
    // schema (a 5 s poll) a create gets 503 "Resource kind ... not found".
    await waitFor(
      "a create that the finalizer policy admits without /mutate",
      async () => {
        const before = await calls("/mutate");
        const dry = await kubectl(
          ["create", "--dry-run=server", "-f", "-", "-o", "jsonpath={.metadata.finalizers}"],
          toYaml(v2Route("probe", { namespace: POLICY_NS })),
        );
        return dry.code === 0 && dry.stdout === `["${FINALIZER}"]` && (await calls("/mutate")) === before
          ? true
          : undefined;
      },
      60_000,
      500,
    );
    const [mutateBefore, validateBefore] = [await calls("/mutate"), await calls("/validate")];
    const created = await kubectl(
      ["apply", "-f", "-"],
      [v2Route("three", { namespace: POLICY_NS }), v1Route("four", { namespace: POLICY_NS })]
        .map((r) => toYaml(r))
        .join("---\n"),
    );
    expect(created.code, created.stderr).toBe(0);
    const three = JSON.parse(
      (await kubectl(["get", "edgeroutes.v2.net.10xdev.io", "three", "-n", POLICY_NS, "-o", "json"])).stdout,
    ) as {
      metadata: { finalizers?: string[] };
      spec: { rules: { matches: { path: { type?: string } }[]; backends: { weight?: number }[] }[] };
    };
    expect(three.metadata.finalizers).toEqual([FINALIZER]);
    // The defaults are the CRD schema's: v2Route leaves out the weight.
    expect(three.spec.rules[0]?.backends[0]?.weight).toBe(1);
    expect(three.spec.rules[0]?.matches[0]?.path.type).toBe("PathPrefix");
    const four = await finalizersOf("edgeroutes.v1.net.10xdev.io", "four");
    expect(four.stdout).toBe(`["${FINALIZER}"]`);
    // A route created with a finalizer of someone else's keeps it, and gets ours after it.
    const held = v2Route("five", { namespace: POLICY_NS });
    const five = await kubectl(
      ["create", "-f", "-", "-o", "jsonpath={.metadata.finalizers}"],
      toYaml({ ...held, metadata: { ...held.metadata, finalizers: ["example.com/hold"] } }),
    );
    expect(five.stdout, five.stderr).toBe(`["example.com/hold","${FINALIZER}"]`);
    expect(await calls("/mutate")).toBe(mutateBefore);
    expect(await calls("/validate")).toBeGreaterThanOrEqual(validateBefore + 3);

    // An update that drops the finalizer is /mutate's: it puts it back.
    const dropped = await kubectl([
      "patch",
      "edgeroutes.v2.net.10xdev.io",
      "three",
      "-n",
      POLICY_NS,
      "--type=json",
      "-p",
      '[{"op":"remove","path":"/metadata/finalizers"}]',
    ]);
    expect(dropped.code, dropped.stderr).toBe(0);
    const back = await finalizersOf("edgeroutes.v2.net.10xdev.io", "three");
    expect(back.stdout).toBe(`["${FINALIZER}"]`);
    expect(await calls("/mutate")).toBe(mutateBefore + 1);
  });

  it("upgrades with a changed value and keeps every route", async () => {
    const up = await upgrade("crd.v1.deprecated=true");
    expect(up.code, up.stderr).toBe(0);
    const v1 = await kubectl(["get", "edgeroutes.v1.net.10xdev.io", "-n", "apps", "-o", "name"]);
    expect(v1.stdout.trim().split("\n").sort()).toEqual([
      "edgeroute.net.10xdev.io/one",
      "edgeroute.net.10xdev.io/two",
    ]);
    expect(v1.stderr).toContain("deprecated");
  });

  it("uninstalls the webhooks but keeps the CRD and the routes", async () => {
    const un = await cp.helm(["uninstall", RELEASE, "-n", NS]);
    expect(un.code, un.stderr).toBe(0);
    expect(un.stdout + un.stderr).toContain("kept due to the resource policy");
    expect((await kubectl(["get", "crd", "edgeroutes.net.10xdev.io"])).code).toBe(0);
    expect(
      (await kubectl(["get", "edgeroutes", "-n", "apps", "-o", "name"])).stdout.trim().split("\n"),
    ).toHaveLength(2);
    const hooks = await kubectl([
      "get",
      "mutatingwebhookconfigurations,validatingwebhookconfigurations,mutatingadmissionpolicies,mutatingadmissionpolicybindings",
      "-o",
      "name",
    ]);
    expect(hooks.stdout).not.toContain(FULLNAME);
  });
});

describe("stopping, and who reaches the webhook port", () => {
  type Container = {
    args: string[];
    lifecycle?: { preStop?: { sleep?: { seconds: number } } };
    volumeMounts?: { name: string; mountPath: string }[];
  };
  const serverPod = (docs: Doc[]) =>
    (
      find(docs, "Deployment", `${FULLNAME}-server`) as Doc & {
        spec: {
          template: {
            spec: {
              terminationGracePeriodSeconds: number;
              containers: Container[];
              volumes: { name: string }[];
            };
          };
        };
      }
    ).spec.template.spec;

  it("sleeps in preStop, then drains for the shutdown delay, within the grace period", async () => {
    const pod = serverPod(await render([]));
    const c = pod.containers[0] as Container;
    expect(c.lifecycle?.preStop?.sleep?.seconds).toBe(5);
    expect(c.args).toContain("--shutdown-delay=5s");
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(5 + 5 + 20);
    const none = serverPod(await render(["--set", "server.preStopSleepSeconds=0"]));
    expect((none.containers[0] as Container).lifecycle).toBeUndefined();
  });

  it("renders a NetworkPolicy and the client CA only when asked, and the apiserver takes them", async () => {
    const plain = await render([]);
    expect(plain.filter((d) => d.kind === "NetworkPolicy")).toEqual([]);
    expect((serverPod(plain).containers[0] as Container).args.join(" ")).not.toContain("--client-ca");

    const docs = await render(MODES["network policy and client CA"] ?? []);
    const np = find(docs, "NetworkPolicy", `${FULLNAME}-server`) as Doc & {
      spec: { ingress: { from: Record<string, unknown>[]; ports: { port: number }[] }[] };
    };
    const rule = np.spec.ingress[0];
    expect(rule?.ports).toEqual([{ port: 9443, protocol: "TCP" }]);
    expect(rule?.from[0]).toEqual({ ipBlock: { cidr: "10.0.0.0/28" } });
    expect(JSON.stringify(rule?.from)).toContain('"app.kubernetes.io/component":"watcher"');
    const pod = serverPod(docs);
    expect((pod.containers[0] as Container).args).toContain(
      "--client-ca=/etc/edge-operator/client-ca/ca.crt",
    );
    expect(pod.volumes.map((v) => v.name)).toContain("client-ca");
    expect(find(docs, "ConfigMap", `${FULLNAME}-client-ca`)).toMatchObject({
      data: { "ca.crt": "-----BEGIN CERTIFICATE-----" },
    });
    // The real apiserver validates what was rendered (server-side dry run).
    await cp.kubectl(["create", "namespace", NS]);
    const input = [find(docs, "NetworkPolicy"), find(docs, "ConfigMap", `${FULLNAME}-client-ca`)]
      .map((d) => toYaml(d))
      .join("---\n");
    const dry = await cp.kubectl(["apply", "--dry-run=server", "-n", NS, "-f", "-"], { input });
    expect(dry.code, dry.stderr).toBe(0);
  });

  it("refuses a CIDR that is not one", async () => {
    const res = await cp.helm([
      "template",
      RELEASE,
      CHART,
      ...KUBE_VERSION,
      "--set",
      "networkPolicy.apiServerCIDRs={not-a-cidr}",
    ]);
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain("/networkPolicy/apiServerCIDRs/0");
  });
});

describe("RBAC: enough and no more", () => {
  const ns = "edge-rbac";
  const full = "rbac-edge-operator";
  const server = `system:serviceaccount:${ns}:${full}-server`;
  const watcher = `system:serviceaccount:${ns}:${full}-watcher`;

  /** Templates of the chart (the default values), applied as helm would render them for release "rbac". */
  const applyTemplates = async (...templates: string[]): Promise<void> => {
    const res = await cp.helm([
      "template",
      "rbac",
      CHART,
      "-n",
      ns,
      ...KUBE_VERSION,
      ...templates.flatMap((t) => ["--show-only", `templates/${t}`]),
    ]);
    expect(res.code, res.stderr).toBe(0);
    const applied = await cp.kubectl(["apply", "-f", "-"], { input: res.stdout });
    expect(applied.code, applied.stderr).toBe(0);
  };

  beforeAll(async () => {
    await cp.kubectl(["create", "namespace", ns]);
    await applyTemplates("serviceaccounts.yaml", "rbac-server.yaml", "rbac-watcher.yaml");
  });

  const canI = async (as: string, args: string[]) =>
    (await cp.kubectl(["auth", "can-i", "--as", as, ...args])).stdout.trim();

  it.each([
    ["get", "edgeroutes.net.10xdev.io", "-A"],
    ["list", "edgeroutes.net.10xdev.io", "-A"],
    ["watch", "edgeroutes.net.10xdev.io", "-A"],
    ["patch", "edgeroutes.net.10xdev.io", "-n", "apps"],
    ["patch", "edgeroutes.net.10xdev.io", "-n", "apps", "--subresource=status"],
    ["get", "services", "-n", "apps"],
    ["list", "services", "-A"],
    // The watch-fed cache (cluster-cache.ts).
    ["watch", "services", "-A"],
    ["list", "endpointslices.discovery.k8s.io", "-A"],
    ["watch", "endpointslices.discovery.k8s.io", "-A"],
    ["create", "events", "-n", "apps"],
    ["patch", "events", "-n", "apps"],
    ["create", "tokenreviews.authentication.k8s.io"],
    ["create", "subjectaccessreviews.authorization.k8s.io"],
    ["create", "configmaps", "-n", ns],
    ["update", `configmaps/${full}-xds`, "-n", ns],
    ["create", "secrets", "-n", ns],
    ["get", `secrets/${full}-tls`, "-n", ns],
    ["update", `secrets/${full}-tls`, "-n", ns],
    // The proxies' ADS client pair (mutual TLS by default).
    ["get", `secrets/${full}-envoy-ads-client`, "-n", ns],
    ["update", `secrets/${full}-envoy-ads-client`, "-n", ns],
    ["patch", `mutatingwebhookconfigurations/${full}-mutate`],
    ["patch", `validatingwebhookconfigurations/${full}-validate`],
    ["patch", "customresourcedefinitions/edgeroutes.net.10xdev.io"],
    // The xds sink's ACK records: the chart's Leases, by name (2 replicas: 5 of them).
    ["get", `leases.coordination.k8s.io/${full}-xds-0`, "-n", ns],
    ["update", `leases.coordination.k8s.io/${full}-xds-0`, "-n", ns],
    ["update", `leases.coordination.k8s.io/${full}-xds-4`, "-n", ns],
    ["list", "leases.coordination.k8s.io", "-n", ns],
    ["watch", "leases.coordination.k8s.io", "-n", ns],
    // TLS Secrets that routes in any namespace reference: a metadata-only list and
    // watch, a GET of each referenced one (tls-secret-contents.ts). RBAC cannot narrow these.
    ["list", "secrets", "-A"],
    ["watch", "secrets", "-A"],
    ["get", "secrets/shop-tls", "-n", "apps"],
  ])("the server may %s %s", async (...args) => {
    expect(await canI(server, args)).toBe("yes");
  });

  it.each([
    // Only patch is used: update is not granted where patch does the work.
    ["update", "edgeroutes.net.10xdev.io", "-n", "apps"],
    ["update", "edgeroutes.net.10xdev.io", "-n", "apps", "--subresource=status"],
    ["delete", "edgeroutes.net.10xdev.io", "-n", "apps"],
    ["create", "edgeroutes.net.10xdev.io", "-n", "apps"],
    // Reading Secrets is cluster-wide (above); writing one is not, outside its own.
    ["create", "secrets", "-n", "apps"],
    ["update", "secrets/shop-tls", "-n", "apps"],
    ["patch", "secrets/shop-tls", "-n", "apps"],
    ["update", "secrets/other", "-n", ns],
    ["delete", "secrets/shop-tls", "-n", "apps"],
    ["delete", `secrets/${full}-envoy-ads-client`, "-n", ns],
    ["update", "configmaps/other", "-n", ns],
    ["create", "configmaps", "-n", "apps"],
    ["patch", "mutatingwebhookconfigurations/someone-else"],
    ["patch", "customresourcedefinitions/other.example.com"],
    ["update", "services", "-n", "apps"],
    ["create", "pods", "-n", ns],
    ["create", "/reconcile"],
    ["create", "leases.coordination.k8s.io", "-n", "apps"],
    ["list", "leases.coordination.k8s.io", "-A"],
    // Only the chart's ACK-record Leases: never create or delete, nor the watcher's.
    ["create", "leases.coordination.k8s.io", "-n", ns],
    ["delete", `leases.coordination.k8s.io/${full}-xds-0`, "-n", ns],
    ["update", `leases.coordination.k8s.io/${full}-xds-5`, "-n", ns],
    ["update", `leases.coordination.k8s.io/${full}-xds-some-pod`, "-n", ns],
    ["update", `leases.coordination.k8s.io/${full}-watcher`, "-n", ns],
    ["delete", `leases.coordination.k8s.io/${full}-watcher`, "-n", ns],
  ])("the server may not %s %s", async (...args) => {
    expect(await canI(server, args)).toBe("no");
  });

  it.each([
    ["list", "edgeroutes.net.10xdev.io", "-A"],
    ["watch", "services", "-A"],
    ["watch", "endpointslices.discovery.k8s.io", "-A"],
    ["create", "leases.coordination.k8s.io", "-n", ns],
    ["get", `leases.coordination.k8s.io/${full}-watcher`, "-n", ns],
    ["update", `leases.coordination.k8s.io/${full}-watcher`, "-n", ns],
    ["create", "/reconcile"],
  ])("the watcher may %s %s", async (...args) => {
    expect(await canI(watcher, args)).toBe("yes");
  });

  it.each([
    ["patch", "edgeroutes.net.10xdev.io", "-n", "apps"],
    ["update", "edgeroutes.net.10xdev.io", "-n", "apps", "--subresource=status"],
    ["update", "leases.coordination.k8s.io/other", "-n", ns],
    ["create", "leases.coordination.k8s.io", "-n", "apps"],
    ["get", "secrets", "-n", ns],
    ["create", "tokenreviews.authentication.k8s.io"],
  ])("the watcher may not %s %s", async (...args) => {
    expect(await canI(watcher, args)).toBe("no");
  });

  it("the post-install Job may create routes in its probe namespace, and nothing else", async () => {
    await applyTemplates("admission-wait-hook.yaml");
    const job = `system:serviceaccount:${ns}:${full}-admission-wait`;
    expect(await canI(job, ["create", "edgeroutes.net.10xdev.io", "-n", "default"])).toBe("yes");
    for (const args of [
      ["create", "edgeroutes.net.10xdev.io", "-n", "apps"],
      ["get", "edgeroutes.net.10xdev.io", "-n", "default"],
      ["delete", "edgeroutes.net.10xdev.io", "-n", "default"],
      ["patch", "edgeroutes.net.10xdev.io", "-n", "default"],
      ["list", "edgeroutes.net.10xdev.io", "-A"],
    ])
      expect(await canI(job, args), args.join(" ")).toBe("no");
  });
});
