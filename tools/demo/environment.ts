// The demo out of a cluster: the test control plane, the chart installed
// with helm in out-of-cluster mode, and `edge-operator serve` (the xds data
// plane) and `watch` as supervised child processes, each with the identity
// the chart's RBAC grants (a ServiceAccount token), never the admin's. The
// data plane is the same real xDS client as in the cluster, as a process on
// loopback, and the backends are processes on this machine's own address:
// the apiserver refuses loopback addresses in an EndpointSlice, and with no
// controller here the demo writes the EndpointSlices itself.

import { httpsJson } from "../testenv/https-json.js";
import { mkdirSync, writeFileSync } from "node:fs";
import { networkInterfaces } from "node:os";
import path from "node:path";
import { stringify as toYaml } from "yaml";
import { CRD_NAME, GROUP } from "../../src/api/types.js";
import { newCa, issueServing } from "../../src/certs/serving.js";
import { startControlPlane, type ControlPlane } from "../testenv/control-plane.js";
import { startCli, startServe, waitAdmission, type ServeProcess } from "../testenv/operator.js";
import { freePort, must, waitFor, type Supervised } from "../testenv/process.js";
import { operatorCalls, type OperatorCalls } from "./operator-calls.js";
import { startLocalWorkload, type LocalWorkload } from "./local-workload.js";
import { backendArgs, clientArgs } from "./workloads.js";
import {
  BACKEND_PORT,
  BACKENDS,
  CLIENT_HOSTS,
  dataPlaneLine,
  DEMO_METHOD,
  DEMO_NAMESPACE,
} from "./manifests.js";
import { REPO_ROOT } from "../testenv/testbin.js";
import { loadKubeConfig } from "../../src/kube/load-kubeconfig.js";
import type { Teardown } from "./teardown.js";

export const RELEASE = "edge";
export const RELEASE_NAMESPACE = "edge-system";
/** The chart's fullname for release `edge`: it names the ServiceAccounts, RBAC and the watcher's Lease. */
const FULLNAME = `${RELEASE}-edge-operator`;
const CHART = path.join(REPO_ROOT, "charts/edge-operator");

/** What the lifecycle plays against: the operator out of cluster (this file) or in pods (cluster-environment.ts). */
export interface DemoEnvironment extends OperatorCalls {
  /** The admin kubeconfig, for the user's kubectl. */
  readonly kubeconfig: string;
  /** The kubectl binary the demo uses, for the --keep hint. */
  readonly kubectlPath: string;
  /** Why the operator is not running, or undefined while it is. */
  operatorDown(): Promise<string | undefined>;
  /** The objects that make Service `name` reach its backends (the Service, and out of cluster its EndpointSlices). */
  service(name: string): object[];
  /** How many backends answer behind Service `name`. */
  backendCount(name: string): number;
  /** The operator's deprogram timeout, as given (15s) and in milliseconds. */
  readonly deprogramTimeout: string;
  readonly deprogramTimeoutMs: number;
}

const DEPROGRAM_TIMEOUT = "15s";

/** This machine's first non-loopback IPv4 address: what an EndpointSlice may name. */
function hostAddress(): string {
  for (const list of Object.values(networkInterfaces()))
    for (const a of list ?? []) if (a.family === "IPv4" && !a.internal) return a.address;
  throw new Error(
    "out of cluster, the backends need an address an EndpointSlice may name (the apiserver refuses loopback), and this machine has no non-loopback IPv4 address",
  );
}

/** A Service without a selector and one EndpointSlice per backend process (each on its own port). */
function localService(name: string, backends: readonly LocalWorkload[], ip: string): object[] {
  return [
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name, namespace: DEMO_NAMESPACE },
      spec: { ports: [{ name: "grpc", port: BACKEND_PORT, protocol: "TCP" }] },
    },
    ...backends.map((b, i) => ({
      apiVersion: "discovery.k8s.io/v1",
      kind: "EndpointSlice",
      metadata: {
        name: `${name}-demo-${i}`,
        namespace: DEMO_NAMESPACE,
        labels: { "kubernetes.io/service-name": name },
      },
      addressType: "IPv4",
      ports: [{ name: "grpc", port: b.port, protocol: "TCP" }],
      endpoints: [{ addresses: [ip], conditions: { ready: true } }],
    })),
  ];
}

/** The out-of-cluster environment: serve and watch as child processes. */
export interface LocalDemoEnvironment extends DemoEnvironment {
  readonly cp: ControlPlane;
  readonly serve: ServeProcess;
  readonly watcher: Supervised;
}

export interface EnvironmentOptions {
  /** Marks the control plane's directory, `edge-cp-<runId>-*`. */
  runId: string;
  progress(message: string): void;
  /** Extra `helm install` flags (a benchmark's chart values). */
  chartArgs?: readonly string[];
  /** Extra environment for `edge-operator serve` (a benchmark's NODE_OPTIONS). */
  serveEnv?: Record<string, string>;
  /** Extra environment for `edge-operator watch`. */
  watchEnv?: Record<string, string>;
  /** Extra flags for `serve` (benches: another data plane); later flags win. */
  serveArgs?: readonly string[];
  /**
   * false: no xDS client, no backends, and serve with its own default sink
   * (benchmarks that drive the operator themselves); default true.
   */
  workloads?: boolean;
}

/** A kubeconfig for a ServiceAccount's bearer token, on the admin's cluster entry. */
function tokenKubeconfig(cp: ControlPlane, user: string, token: string): string {
  const ca = loadKubeConfig(cp.kubeconfig)?.tls.ca;
  if (!ca) throw new Error("the control plane's kubeconfig has no cluster CA");
  return toYaml({
    apiVersion: "v1",
    kind: "Config",
    clusters: [
      { name: "demo", cluster: { server: cp.server, "certificate-authority-data": ca.toString("base64") } },
    ],
    users: [{ name: user, user: { token } }],
    contexts: [{ name: user, context: { cluster: "demo", user, namespace: "default" } }],
    "current-context": user,
  });
}

/**
 * The control plane picks free ports and then binds them; on a busy machine
 * another process can take one in between. That, and only that, is worth a retry.
 */
async function startWithRetry(runId: string, progress: (m: string) => void): Promise<ControlPlane> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startControlPlane({ runId });
    } catch (e) {
      const raced = /address already in use/.test((e as Error).message);
      if (!raced || attempt === 3) throw e;
      progress("a port was taken between choosing and binding it; starting again");
    }
  }
}

/** Starts it all; each part is registered with `teardown` as soon as it exists. */
export async function startDemoEnvironment(
  opts: EnvironmentOptions,
  teardown: Teardown,
): Promise<LocalDemoEnvironment> {
  const { progress } = opts;
  progress("starting the test control plane (etcd, kube-apiserver; the first run builds them)");
  const cp = await startWithRetry(opts.runId, progress);
  teardown.defer("control plane", () => cp.stop());
  progress(`control plane ready in ${cp.startSeconds.toFixed(1)} s at ${cp.server}`);
  const kubectl = (args: string[], input?: string) => cp.kubectl(args, input === undefined ? {} : { input });

  // Everything the operator's processes read lives under the control plane's
  // directory: it goes with it, and their command lines name it.
  const dir = path.join(cp.dir, "demo");
  mkdirSync(dir);
  const port = await freePort();
  const url = `https://127.0.0.1:${port}`;

  progress("generating a CA and a serving certificate for 127.0.0.1");
  const ca = newCa();
  const pair = issueServing(ca, { dnsNames: ["localhost"], ips: ["127.0.0.1"] });
  const tls = {
    caPem: ca.cert,
    certFile: path.join(dir, "tls.crt"),
    keyFile: path.join(dir, "tls.key"),
  };
  const caFile = path.join(dir, "ca.crt");
  writeFileSync(tls.certFile, pair.cert);
  writeFileSync(tls.keyFile, pair.key, { mode: 0o600 });
  writeFileSync(caFile, ca.cert);
  const caBundle = Buffer.from(ca.cert).toString("base64");

  progress(
    `helm install ${RELEASE} charts/edge-operator -n ${RELEASE_NAMESPACE} (out of cluster: webhooks at ${url})`,
  );
  await must(
    "helm install",
    cp.helm([
      "install",
      RELEASE,
      CHART,
      "-n",
      RELEASE_NAMESPACE,
      "--create-namespace",
      "--set",
      `webhook.urlOverride=${url}`,
      "--set",
      `webhook.caBundle=${caBundle}`,
      ...(opts.chartArgs ?? []),
    ]),
  );

  // The chart's ServiceAccounts, with tokens: the processes run with exactly the chart's RBAC.
  const identity = async (sa: string): Promise<{ token: string; kubeconfig: string }> => {
    const token = (
      await must(
        `kubectl create token ${sa}`,
        kubectl(["create", "token", sa, "-n", RELEASE_NAMESPACE, "--duration=24h"]),
      )
    ).trim();
    const kubeconfig = path.join(dir, `${sa}.kubeconfig`);
    writeFileSync(kubeconfig, tokenKubeconfig(cp, sa, token), { mode: 0o600 });
    return { token, kubeconfig };
  };
  const server = await identity(`${FULLNAME}-server`);
  const watcherId = await identity(`${FULLNAME}-watcher`);
  const tokenFile = path.join(dir, "watcher.token");
  writeFileSync(tokenFile, watcherId.token, { mode: 0o600 });

  const adsPort = await freePort();
  const adsPlaintextPort = await freePort();
  progress(
    `starting edge-operator serve on ${url} (xds data plane: ADS on 127.0.0.1:${adsPort} with TLS, 127.0.0.1:${adsPlaintextPort} plaintext; deprogram timeout ${DEPROGRAM_TIMEOUT})`,
  );
  const withWorkloads = opts.workloads !== false;
  const serve = await startServe({
    port,
    tls,
    args: [
      "--kubeconfig",
      server.kubeconfig,
      ...(withWorkloads
        ? [
            "--dataplane",
            "xds",
            "--xds-listen",
            `127.0.0.1:${adsPort}`,
            "--xds-plaintext-listen",
            `127.0.0.1:${adsPlaintextPort}`,
            "--deprogram-timeout",
            DEPROGRAM_TIMEOUT,
          ]
        : []),
      ...(opts.serveArgs ?? []),
    ],
    ...(opts.serveEnv ? { env: opts.serveEnv } : {}),
  });
  teardown.defer("edge-operator serve", () => serve.stop());
  // Stop the apiserver before serve: while the apiserver holds its keep-alive
  // webhook connections, serve's graceful stop waits them out (5 s, then SIGKILL).
  teardown.defer("control plane", () => cp.stop());

  await must(
    "kubectl wait crd",
    kubectl(["wait", "--for=condition=Established", `crd/${CRD_NAME}`, "--timeout=60s"]),
  );
  // Discovery and the conversion webhook's client catch up asynchronously:
  // a v2 list answers once conversion is reachable.
  await waitFor("EdgeRoute v2 to be served", async () =>
    (await kubectl(["get", `edgeroutes.v2.${GROUP}`, "-A"])).code === 0 ? true : undefined,
  );
  // What the chart's post-install Job does in a cluster: with the finalizer
  // policy, the apiserver refuses creates for a few seconds after the CRD is new.
  progress(await waitAdmission(cp.kubeconfig, "default"));

  progress("starting edge-operator watch (leader-elected on the chart's Lease)");
  const watcher = startCli(
    "watch",
    [
      "watch",
      "--reconcile-url",
      `${url}/reconcile`,
      "--kubeconfig",
      watcherId.kubeconfig,
      "--token-file",
      tokenFile,
      "--reconcile-ca",
      caFile,
      "--lease-namespace",
      RELEASE_NAMESPACE,
      "--lease-name",
      `${FULLNAME}-watcher`,
    ],
    opts.watchEnv,
  );
  teardown.defer("edge-operator watch", () => watcher.stop());

  const workloads: LocalWorkload[] = [];
  const backends = new Map<string, LocalWorkload[]>();
  let clientUrl: string | undefined;
  if (withWorkloads)
    clientUrl = await startWorkloads(adsPlaintextPort, workloads, backends, progress, teardown);
  const ip = withWorkloads ? hostAddress() : "";

  const call = (method: "GET" | "POST", p: string, body?: unknown) =>
    httpsJson(`${url}${p}`, ca.cert, method, body, watcherId.token);
  const kubectlPath = path.join(cp.binDir, "kubectl");
  return {
    cp,
    serve,
    watcher,
    kubeconfig: cp.kubeconfig,
    kubectlPath,
    deprogramTimeout: DEPROGRAM_TIMEOUT,
    deprogramTimeoutMs: 15_000,
    service(name) {
      const b = backends.get(name);
      if (!b) throw new Error(`no backends for a Service ${name}`);
      return localService(name, b, ip);
    },
    backendCount: (name) => BACKENDS[name] ?? 0,
    async operatorDown() {
      for (const p of [serve.process, watcher, ...workloads.map((w) => w.process)]) {
        if (p.child.exitCode !== null || p.child.signalCode !== null)
          return `${p.name} exited:\n${p.output().slice(-3000)}`;
      }
      return undefined;
    },
    ...operatorCalls({
      kubectl,
      kubectlPath,
      kubeconfig: cp.kubeconfig,
      call,
      clientUrl: async () => {
        if (clientUrl === undefined)
          throw new Error("this environment runs no demo client (workloads: false)");
        return clientUrl;
      },
    }),
  };
}

/** The backends (on this machine's address) and the xDS client (on loopback); answers the client's status URL. */
async function startWorkloads(
  adsPlaintextPort: number,
  workloads: LocalWorkload[],
  backends: Map<string, LocalWorkload[]>,
  progress: (m: string) => void,
  teardown: Teardown,
): Promise<string> {
  const ip = hostAddress();
  progress(dataPlaneLine(`as a process (gRPC backends as processes on ${ip})`));
  for (const [name, n] of Object.entries(BACKENDS)) {
    const started = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        startLocalWorkload(backendArgs({ port: 0, host: ip, name: `${name}-${i}` }), {
          name: `${name}-${i}`,
        }),
      ),
    );
    workloads.push(...started);
    backends.set(name, started);
  }
  const client = await startLocalWorkload(
    clientArgs({
      ads: `127.0.0.1:${adsPlaintextPort}`,
      nodeId: "edge-demo-client",
      targets: CLIENT_HOSTS.map((host) => ({ host, method: DEMO_METHOD })),
      statusHost: "127.0.0.1",
      statusPort: 0,
    }),
    { name: "xds-client" },
  );
  workloads.push(client);
  for (const w of workloads) teardown.defer(w.process.name, async () => void (await w.stop()));
  const clientUrl = client.statusUrl;
  if (clientUrl === undefined) throw new Error("the demo client did not say where its status port is");
  return clientUrl;
}
