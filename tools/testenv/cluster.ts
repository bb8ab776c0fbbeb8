// A real single-node Kubernetes cluster on this machine, for the end-to-end
// tests and the demo: etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, containerd, kubelet and kube-proxy, built from Go modules by
// scripts/testbin.sh and scripts/cluster-bin.sh. Needs root on Linux.
//
// Usage:
//   const c = await startCluster();          // throws "a cluster is already running (pid N)" if one is
//   await c.ctrImport("/path/image.tar");     // a tarball from `${c.clusterBinDir}/image-tar` (or any docker/OCI archive)
//   await c.helm(["install", "x", "charts/edge-operator", "--set", "image.repository=localhost/edge-operator"]);
//   await c.kubectl(["get", "pods", "-A"]);   // KUBECONFIG=c.kubeconfig for your own tools
//   await c.stop();                           // puts the machine back as it was before the start
//
// One cluster per machine (fixed paths and addresses, see cluster-config.ts);
// a start after a run that was SIGKILLed first cleans up what that one left.
// Suites that use it live in test/cluster/ or test/e2e/cluster-*.test.ts: the
// vitest project `cluster` runs them one file at a time, after the others;
// on a shared machine pass `waitForOtherMs` so two runs take turns.
// The node IP (NODE_IP) sits on the cluster's own bridge, the apiserver
// listens there on :6443, pods get 10.244.0.0/24 and Services 10.96.0.0/24;
// nothing is forwarded between the bridge and any other interface. Images
// must be in containerd already (ctrImport): nothing is pulled, so use
// `imagePullPolicy: IfNotPresent` (or Never) and a non-`latest` tag.
// Every process runs under scripts/supervise.sh; the containers and
// containerd's shims, which leave their parent by design, are killed on stop.

import { generateKeyPairSync } from "node:crypto";
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from "node:fs";
import path from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import { stringify as toYaml } from "yaml";
import { createCa, issueCertificate, type KeyPair } from "../../src/certs/pki.js";
import { kubeClient, type KubeClient } from "../../src/kube/client.js";
import { loadKubeConfig } from "../../src/kube/load-kubeconfig.js";
import { ensureClusterBin } from "./cluster-bin.js";
import { getReadyz } from "./control-plane.js";
import {
  DATA_DIR,
  KUBERNETES_SERVICE_IP,
  LOCK_FILE,
  NODE_IP,
  NODE_NAME,
  RUN_DIR,
  SERVICE_CIDR,
  containerdConfig,
  cniConfig,
  kubeProxyConfig,
  kubeletConfig,
  paths,
} from "./cluster-config.js";
import { APISERVER_URL, setUpNetwork } from "./cluster-network.js";
import { startClusterDns, type ClusterDns } from "./cluster-dns.js";
import {
  clusterProcesses,
  hostSnapshot,
  loadRecord,
  recordHost,
  restoreHost,
  saveRecord,
  type HostRecord,
  type HostSnapshot,
} from "./host-state.js";
import { freePort, run, sleep, supervise, waitFor, type RunResult, type Supervised } from "./process.js";
import { ensureTestbin } from "./testbin.js";

export { clusterUnsupported } from "./cluster-bin.js";
export { NODE_IP, NODE_NAME, POD_CIDR, SERVICE_CIDR } from "./cluster-config.js";

export interface ToolOptions {
  input?: string;
  kubeconfig?: string;
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
}

export interface ClusterTimings {
  /** Seconds from the start call to the apiserver answering /readyz. */
  apiserverReady: number;
  /** … to the Node's Ready condition True. */
  nodeReady: number;
  /** … to the `default` ServiceAccount existing (pods can be created from then on). */
  ready: number;
}

export interface Cluster {
  /** https://NODE_IP:6443 */
  readonly server: string;
  /** Path of an admin (system:masters) kubeconfig. */
  readonly kubeconfig: string;
  readonly nodeIp: string;
  readonly nodeName: string;
  /** The control plane's binaries (kubectl, helm, etcd, kube-apiserver). */
  readonly binDir: string;
  /** The cluster's binaries (kubelet, containerd, ctr, image-tar, …). */
  readonly clusterBinDir: string;
  /** The sandbox image, already in containerd. */
  readonly pauseImage: string;
  /** A tiny HTTP server on :8080 that answers "hello from <pod name>"; `tar` is for ctrImport. */
  readonly helloImage: { readonly ref: string; readonly tar: string };
  readonly timings: ClusterTimings;
  /** The host as it was before this start (with `snapshotHost`): compare with hostSnapshot() after stop. */
  readonly hostBefore?: HostSnapshot;
  kubectl(args: string[], opts?: ToolOptions): Promise<RunResult>;
  helm(args: string[], opts?: ToolOptions): Promise<RunResult>;
  /** ctr against the cluster's containerd, namespace k8s.io. */
  ctr(args: string[], opts?: ToolOptions): Promise<RunResult>;
  /** Loads an image tarball (docker-archive or OCI) into the cluster's containerd; throws on failure. */
  ctrImport(tarPath: string): Promise<void>;
  kube(): KubeClient;
  kubeConfig(): KubeConfig;
  /** The components' recent output, for failure messages. */
  logs(): string;
  /** Proportional set size in MiB of each of the cluster's processes, summed by executable. */
  memory(): Promise<Record<string, number>>;
  stop(): Promise<void>;
}

export interface ClusterOptions {
  /** Extra kube-apiserver flags. */
  apiserverArgs?: string[];
  /**
   * How long to wait for another process's cluster to stop before saying that
   * one is running (default 0: say so at once). Test suites that share a
   * machine wait, so that two runs take turns instead of failing.
   */
  waitForOtherMs?: number;
  /** Take a snapshot of the host (hostSnapshot) once the lock is ours, before any change: `hostBefore`. */
  snapshotHost?: boolean;
  /** Called with a line at each step (the demo prints them). */
  progress?: (line: string) => void;
}

/** "pid starttime": a pid alone can be reused after a SIGKILLed run. */
function processIdentity(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return `${pid} ${fields[19] ?? ""}`;
  } catch {
    return undefined;
  }
}

/** Takes the one-cluster-per-machine lock, or says whose cluster is running. */
function tryLock(): number | undefined {
  const me = processIdentity(process.pid) ?? String(process.pid);
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(LOCK_FILE, "wx");
      writeSync(fd, me);
      closeSync(fd);
      return undefined;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    }
    let held = "";
    try {
      held = readFileSync(LOCK_FILE, "utf8").trim();
    } catch {
      continue;
    }
    const pid = Number(held.split(" ")[0]);
    if (Number.isInteger(pid) && pid > 0 && processIdentity(pid) === held) return pid;
    // Its owner is gone: the lock is stale.
    rmSync(LOCK_FILE, { force: true });
  }
  throw new Error(`cannot take the cluster lock ${LOCK_FILE}`);
}

async function acquireLock(waitMs: number, say: (l: string) => void): Promise<void> {
  const deadline = Date.now() + waitMs;
  let told = false;
  for (;;) {
    const holder = tryLock();
    if (holder === undefined) return;
    if (Date.now() >= deadline)
      throw new Error(`a cluster is already running (pid ${holder}); stop it first (lock: ${LOCK_FILE})`);
    if (!told) say(`waiting for the cluster of pid ${holder} to stop`);
    told = true;
    await sleep(2000);
  }
}

function releaseLock(): void {
  try {
    const held = readFileSync(LOCK_FILE, "utf8").trim();
    if (held === processIdentity(process.pid)) rmSync(LOCK_FILE, { force: true });
  } catch {
    // Not ours, or gone.
  }
}

const b64 = (s: string): string => Buffer.from(s).toString("base64");

function kubeconfigYaml(ca: string, user: string, client: KeyPair): string {
  return toYaml({
    apiVersion: "v1",
    kind: "Config",
    clusters: [
      { name: "edge-cluster", cluster: { server: APISERVER_URL, "certificate-authority-data": b64(ca) } },
    ],
    users: [
      {
        name: user,
        user: { "client-certificate-data": b64(client.cert), "client-key-data": b64(client.key) },
      },
    ],
    contexts: [{ name: user, context: { cluster: "edge-cluster", user, namespace: "default" } }],
    "current-context": user,
  });
}

interface Pki {
  caPem: string;
  admin: KeyPair;
  ca: string;
  caKey: string;
  saKey: string;
  saPub: string;
  apiserver: { cert: string; key: string };
  kubeletClient: { cert: string; key: string };
  kubeletServing: { cert: string; key: string };
  kubeconfigs: Record<"admin" | "controller-manager" | "scheduler" | "kubelet" | "kube-proxy", string>;
}

/** One CA signs everything: serving and client certificates, and the cluster's CSRs. */
function writePki(): Pki {
  mkdirSync(paths.pki, { recursive: true });
  mkdirSync(paths.kubeconfigs, { recursive: true });
  const ca = createCa({ commonName: "edge-cluster-ca" });
  const file = (name: string, content: string): string => {
    const p = path.join(paths.pki, name);
    writeFileSync(p, content, { mode: 0o600 });
    return p;
  };
  const pair = (name: string, kp: KeyPair): { cert: string; key: string } => ({
    cert: file(`${name}.crt`, kp.cert),
    key: file(`${name}.key`, kp.key),
  });
  const sa = generateKeyPairSync("rsa", {
    modulusLength: 2048,
    privateKeyEncoding: { type: "pkcs8", format: "pem" },
    publicKeyEncoding: { type: "spki", format: "pem" },
  });
  const apiserver = issueCertificate(ca, {
    commonName: "kube-apiserver",
    dnsNames: [
      "kubernetes",
      "kubernetes.default",
      "kubernetes.default.svc",
      "kubernetes.default.svc.cluster.local",
      "localhost",
    ],
    ips: [NODE_IP, KUBERNETES_SERVICE_IP, "127.0.0.1"],
    usage: "server",
  });
  const users = {
    admin: { cn: "admin", o: ["system:masters"] },
    "controller-manager": { cn: "system:kube-controller-manager", o: [] },
    scheduler: { cn: "system:kube-scheduler", o: [] },
    kubelet: { cn: `system:node:${NODE_NAME}`, o: ["system:nodes"] },
    "kube-proxy": { cn: "system:kube-proxy", o: [] },
  } as const;
  const kubeconfigs = {} as Pki["kubeconfigs"];
  let admin: KeyPair | undefined;
  for (const [name, u] of Object.entries(users) as [
    keyof typeof users,
    (typeof users)[keyof typeof users],
  ][]) {
    const client = issueCertificate(ca, { commonName: u.cn, organizations: [...u.o], usage: "client" });
    const p = path.join(paths.kubeconfigs, `${name}.kubeconfig`);
    writeFileSync(p, kubeconfigYaml(ca.cert, name, client), { mode: 0o600 });
    kubeconfigs[name] = p;
    if (name === "admin") admin = client;
  }
  return {
    caPem: ca.cert,
    admin: admin ?? fail("no admin certificate"),
    ca: file("ca.crt", ca.cert),
    caKey: file("ca.key", ca.key),
    saKey: file("sa.key", sa.privateKey),
    saPub: file("sa.pub", sa.publicKey),
    apiserver: pair("apiserver", { cert: apiserver.cert + ca.cert, key: apiserver.key }),
    kubeletClient: pair(
      "apiserver-kubelet-client",
      issueCertificate(ca, {
        commonName: "kube-apiserver-kubelet-client",
        organizations: ["system:masters"],
        usage: "client",
      }),
    ),
    kubeletServing: pair(
      "kubelet",
      issueCertificate(ca, { commonName: NODE_NAME, dnsNames: [NODE_NAME], ips: [NODE_IP], usage: "server" }),
    ),
    kubeconfigs,
  };
}

interface Condition {
  type: string;
  status: string;
}

export async function startCluster(opts: ClusterOptions = {}): Promise<Cluster> {
  const say = opts.progress ?? ((): void => undefined);
  const tb = ensureTestbin();
  if (!tb.ok) throw new Error(`the real cluster is not available: ${tb.reason}`);
  const cb = ensureClusterBin();
  if (!cb.ok) throw new Error(`the real cluster is not available: ${cb.reason}`);
  const bin = tb.binDir;
  const cbin = cb.binDir;

  await acquireLock(opts.waitForOtherMs ?? 0, say);
  const started = process.hrtime.bigint();
  const since = (): number => Number(process.hrtime.bigint() - started) / 1e9;
  const procs: Supervised[] = [];
  let record: HostRecord | undefined;

  let dns: ClusterDns | undefined;
  const teardown = async (): Promise<string[]> => {
    await dns?.stop();
    dns = undefined;
    // Newest first: the kubelet before containerd, the apiserver before etcd.
    for (const p of procs.splice(0).reverse()) await p.stop();
    const problems = record ? await restoreHost(record) : [];
    releaseLock();
    return problems;
  };

  try {
    const stale = loadRecord();
    if (stale) {
      say(`cleaning up after a cluster run that did not stop (pid ${stale.owner})`);
      const problems = await restoreHost(stale);
      if (problems.length > 0) throw new Error(`cannot clean up the previous run: ${problems.join("; ")}`);
    }
    const hostBefore = opts.snapshotHost ? await hostSnapshot(cbin) : undefined;
    record = await recordHost(cbin);
    saveRecord(record);

    for (const d of [DATA_DIR, RUN_DIR, paths.logs, paths.cniConf, paths.podLogs, paths.volumePlugins])
      mkdirSync(d, { recursive: true });
    await setUpNetwork();
    say("network: bridge, guard, service route");
    const pki = writePki();
    say(`certificates (${since().toFixed(1)} s)`);

    const log = (name: string): { logFile: string } => ({ logFile: path.join(paths.logs, `${name}.log`) });
    const env = {
      ...process.env,
      PATH: `${cbin}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`,
    };
    const start = (name: string, cmd: string, args: string[]): Supervised => {
      const p = supervise(name, cmd, args, { ...log(name), env });
      procs.push(p);
      return p;
    };
    const exitedEarly = (): string | undefined => {
      const gone = procs.find((p) => p.child.exitCode !== null || p.child.signalCode !== null);
      return gone ? `${gone.name} exited:\n${gone.output().slice(-3000)}` : undefined;
    };

    const [etcdPort, peerPort] = [await freePort(), await freePort()];
    const etcdUrl = `http://127.0.0.1:${etcdPort}`;
    const peer = `http://127.0.0.1:${peerPort}`;
    start("etcd", path.join(bin, "etcd"), [
      `--data-dir=${paths.etcd}`,
      `--listen-client-urls=${etcdUrl}`,
      `--advertise-client-urls=${etcdUrl}`,
      `--listen-peer-urls=${peer}`,
      `--initial-advertise-peer-urls=${peer}`,
      `--initial-cluster=default=${peer}`,
      "--unsafe-no-fsync=true",
      "--log-level=warn",
    ]);
    start("kube-apiserver", path.join(bin, "kube-apiserver"), [
      `--etcd-servers=${etcdUrl}`,
      `--bind-address=${NODE_IP}`,
      `--advertise-address=${NODE_IP}`,
      "--secure-port=6443",
      `--cert-dir=${path.join(paths.pki, "apiserver-generated")}`,
      `--tls-cert-file=${pki.apiserver.cert}`,
      `--tls-private-key-file=${pki.apiserver.key}`,
      `--client-ca-file=${pki.ca}`,
      `--service-cluster-ip-range=${SERVICE_CIDR}`,
      "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
      `--service-account-key-file=${pki.saPub}`,
      `--service-account-signing-key-file=${pki.saKey}`,
      "--authorization-mode=Node,RBAC",
      "--enable-admission-plugins=NodeRestriction",
      "--allow-privileged=true",
      `--kubelet-client-certificate=${pki.kubeletClient.cert}`,
      `--kubelet-client-key=${pki.kubeletClient.key}`,
      `--kubelet-certificate-authority=${pki.ca}`,
      "--kubelet-preferred-address-types=InternalIP",
      // Service-referenced webhooks are called at their endpoints' pod IPs, not through kube-proxy.
      "--enable-aggregator-routing=true",
      "--v=0",
      ...(opts.apiserverArgs ?? []),
    ]);
    const kubeconfig = pki.kubeconfigs.admin;
    const admin = kubeClient(loadKubeConfig(kubeconfig) ?? fail(`cannot load ${kubeconfig}`));
    await waitFor(
      "kube-apiserver /readyz",
      async () => {
        const early = exitedEarly();
        if (early) throw new Error(early);
        return (await getReadyz(APISERVER_URL, pki.caPem, pki.admin)) ? true : undefined;
      },
      120_000,
      200,
    );
    const apiserverReady = since();
    say(`kube-apiserver ready (${apiserverReady.toFixed(1)} s)`);
    // Services by name from pods (the kubelet's clusterDNS is the node IP).
    dns = await startClusterDns(NODE_IP, async (name, namespace) => {
      const svc = await admin.json<{ spec?: { clusterIP?: string } }>(
        "GET",
        `/api/v1/namespaces/${encodeURIComponent(namespace)}/services/${encodeURIComponent(name)}`,
        { timeoutMs: 5000 },
      );
      return svc.spec?.clusterIP;
    });

    writeFileSync(paths.containerdConfig, containerdConfig(cb.pauseImage));
    writeFileSync(path.join(paths.cniConf, "10-edge-cluster.conflist"), cniConfig());
    start("containerd", path.join(cbin, "containerd"), [
      `--config=${paths.containerdConfig}`,
      "--log-level=warn",
    ]);
    const ctr = (args: string[], o: ToolOptions = {}): Promise<RunResult> =>
      run(path.join(cbin, "ctr"), ["--address", paths.containerdSocket, "--namespace", "k8s.io", ...args], {
        input: o.input,
        env: { ...env, ...o.env },
        timeoutMs: o.timeoutMs ?? 300_000,
      });
    await waitFor(
      "containerd",
      async () => {
        const early = exitedEarly();
        if (early) throw new Error(early);
        return (await ctr(["version"], { timeoutMs: 5000 })).code === 0 ? true : undefined;
      },
      60_000,
      200,
    );
    const ctrImport = async (tarPath: string): Promise<void> => {
      const res = await ctr(["images", "import", tarPath]);
      if (res.code !== 0) throw new Error(`ctr images import ${tarPath} failed: ${res.stderr.trim()}`);
    };
    await ctrImport(path.join(cbin, "pause.tar"));
    say(`containerd ready, pause image loaded (${since().toFixed(1)} s)`);

    start("kube-controller-manager", path.join(cbin, "kube-controller-manager"), [
      `--kubeconfig=${pki.kubeconfigs["controller-manager"]}`,
      "--secure-port=0",
      "--use-service-account-credentials=true",
      `--service-account-private-key-file=${pki.saKey}`,
      `--root-ca-file=${pki.ca}`,
      `--cluster-signing-cert-file=${pki.ca}`,
      `--cluster-signing-key-file=${pki.caKey}`,
      `--flex-volume-plugin-dir=${paths.volumePlugins}`,
      `--service-cluster-ip-range=${SERVICE_CIDR}`,
      "--leader-elect=false",
      "--cluster-name=edge-cluster",
    ]);
    start("kube-scheduler", path.join(cbin, "kube-scheduler"), [
      `--kubeconfig=${pki.kubeconfigs.scheduler}`,
      "--secure-port=0",
      "--leader-elect=false",
    ]);
    writeFileSync(
      paths.kubeletConfig,
      kubeletConfig(pki.ca, pki.kubeletServing.cert, pki.kubeletServing.key),
    );
    start("kubelet", path.join(cbin, "kubelet"), [
      `--config=${paths.kubeletConfig}`,
      `--kubeconfig=${pki.kubeconfigs.kubelet}`,
      `--node-ip=${NODE_IP}`,
      `--root-dir=${paths.kubeletRoot}`,
      `--cert-dir=${path.join(paths.pki, "kubelet-generated")}`,
      `--hostname-override=${NODE_NAME}`,
      "--v=0",
    ]);
    writeFileSync(paths.kubeProxyConfig, kubeProxyConfig(pki.kubeconfigs["kube-proxy"]));
    start("kube-proxy", path.join(cbin, "kube-proxy"), [`--config=${paths.kubeProxyConfig}`, "--v=0"]);

    await waitFor(
      `Node ${NODE_NAME} Ready`,
      async () => {
        const early = exitedEarly();
        if (early) throw new Error(early);
        const node = await admin
          .json<{ status?: { conditions?: Condition[] } }>("GET", `/api/v1/nodes/${NODE_NAME}`, {
            timeoutMs: 5000,
          })
          .catch(() => undefined);
        return node?.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True")
          ? true
          : undefined;
      },
      180_000,
      250,
    );
    const nodeReady = since();
    say(`node ${NODE_NAME} Ready (${nodeReady.toFixed(1)} s)`);
    await waitFor(
      "the default ServiceAccount",
      async () => {
        const sa = await admin
          .json<unknown>("GET", "/api/v1/namespaces/default/serviceaccounts/default", { timeoutMs: 5000 })
          .catch(() => undefined);
        return sa === undefined ? undefined : true;
      },
      120_000,
      250,
    );
    const ready = since();
    say(`cluster ready (${ready.toFixed(1)} s)`);

    const helmHome = path.join(DATA_DIR, "helm");
    const toolEnv = (kc: string, extra?: NodeJS.ProcessEnv): NodeJS.ProcessEnv => ({
      ...process.env,
      KUBECONFIG: kc,
      HELM_CACHE_HOME: path.join(helmHome, "cache"),
      HELM_CONFIG_HOME: path.join(helmHome, "config"),
      HELM_DATA_HOME: path.join(helmHome, "data"),
      ...extra,
    });
    const rec = record;
    const cluster: Cluster = {
      server: APISERVER_URL,
      kubeconfig,
      nodeIp: NODE_IP,
      nodeName: NODE_NAME,
      binDir: bin,
      clusterBinDir: cbin,
      pauseImage: cb.pauseImage,
      helloImage: { ref: cb.helloImage, tar: path.join(cbin, "hello.tar") },
      timings: { apiserverReady, nodeReady, ready },
      hostBefore,
      kubectl: (args, o = {}) =>
        run(path.join(bin, "kubectl"), args, {
          input: o.input,
          env: toolEnv(o.kubeconfig ?? kubeconfig, o.env),
          timeoutMs: o.timeoutMs,
        }),
      helm: (args, o = {}) =>
        run(path.join(bin, "helm"), args, {
          input: o.input,
          env: toolEnv(o.kubeconfig ?? kubeconfig, o.env),
          timeoutMs: o.timeoutMs ?? 600_000,
        }),
      ctr,
      ctrImport,
      kube: () => admin,
      kubeConfig() {
        const kc = new KubeConfig();
        kc.loadFromFile(kubeconfig);
        return kc;
      },
      logs: () => procs.map((p) => `--- ${p.name} ---\n${p.output().slice(-3000)}`).join("\n"),
      memory: () => Promise.resolve(memoryByExecutable(rec)),
      async stop() {
        const problems = await teardown();
        if (problems.length > 0) throw new Error(`the cluster did not stop cleanly: ${problems.join("; ")}`);
      },
    };
    return cluster;
  } catch (e) {
    const logs = procs.map((p) => `--- ${p.name} ---\n${p.output().slice(-2500)}`).join("\n");
    const problems = await teardown();
    const extra = problems.length > 0 ? `\n(and the clean-up failed: ${problems.join("; ")})` : "";
    throw new Error(`the real cluster did not start: ${(e as Error).message}${extra}\n${logs}`);
  }
}

function fail(msg: string): never {
  throw new Error(msg);
}

function pss(pid: number): number {
  try {
    const m = /^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, "utf8"));
    return m ? Number(m[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}

/** PSS (MiB) of every process of the cluster, summed by executable name (supervisors left out). */
function memoryByExecutable(record: HostRecord): Record<string, number> {
  const out: Record<string, number> = {};
  for (const p of clusterProcesses(record)) {
    const name = path.basename(p.exe || p.cmdline.split(" ")[0] || "?");
    if (name === "bash" && p.cmdline.includes("supervise.sh")) continue;
    out[name] = (out[name] ?? 0) + pss(p.pid);
  }
  return out;
}
