// A real control plane for tests and the demo: etcd and kube-apiserver on free
// loopback ports, in a temporary directory, the way controller-runtime's
// envtest runs them. RBAC is on; the admin is a client certificate in
// system:masters.

import { generateKeyPairSync } from "node:crypto";
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import https from "node:https";
import os from "node:os";
import path from "node:path";
import { KubeConfig, RbacAuthorizationV1Api, type V1PolicyRule } from "@kubernetes/client-node";
import { stringify as toYaml } from "yaml";
import { kubeClient, type KubeClient } from "../../src/kube/client.js";
import { loadKubeConfig } from "../../src/kube/load-kubeconfig.js";
import { createCa, issueCertificate, type KeyPair } from "../../src/certs/pki.js";
import { freePort, run, sleep, supervise, waitFor, type RunResult, type Supervised } from "./process.js";
import { ensureTestbin } from "./testbin.js";

export type { RunResult } from "./process.js";

export interface ControlPlane {
  /** https://127.0.0.1:PORT */
  readonly server: string;
  /** Path of an admin kubeconfig. */
  readonly kubeconfig: string;
  readonly binDir: string;
  /** http://127.0.0.1:PORT */
  readonly etcdEndpoint: string;
  /** The temporary directory that holds everything; removed on stop. */
  readonly dir: string;
  /** Seconds from starting etcd to the apiserver answering /readyz. */
  readonly startSeconds: number;
  /** The apiserver's serving certificate and key (PEM files), for a test proxy that must pass for it. */
  readonly servingCertFiles: { readonly cert: string; readonly key: string };
  /** client-node's KubeConfig, for tests that use its generated clients. */
  kubeConfig(): KubeConfig;
  /** The product's own client, built from the admin kubeconfig as serve and watch build theirs. */
  kube(): KubeClient;
  kubectl(
    args: string[],
    opts?: { input?: string; kubeconfig?: string; env?: NodeJS.ProcessEnv },
  ): Promise<RunResult>;
  helm(
    args: string[],
    opts?: { input?: string; kubeconfig?: string; env?: NodeJS.ProcessEnv },
  ): Promise<RunResult>;
  /** A kubeconfig for user `name`, a client certificate bound to `rules` (a Role in `namespace`, or a ClusterRole). */
  restrictedKubeconfig(name: string, rules: V1PolicyRule[], namespace?: string): Promise<string>;
  /** The apiserver's and etcd's recent output, for failure messages. */
  logs(): string;
  /**
   * Stops etcd or kube-apiserver (SIGTERM, or SIGKILL with `kill`), keeps it
   * down `downMs`, and starts it again on the same ports and data; resolves
   * once the apiserver answers /readyz again, with how long that took.
   */
  restart(
    component: "etcd" | "kube-apiserver",
    opts?: { kill?: boolean; downMs?: number },
  ): Promise<{ seconds: number }>;
  stop(): Promise<void>;
}

export interface ControlPlaneOptions {
  /** Extra kube-apiserver flags. */
  apiserverArgs?: string[];
  /** Where the binaries are; built (or found in the cache) by scripts/testbin.sh when absent. */
  binDir?: string;
  /** Marks the temporary directory (`edge-cp-<runId>-*`), so a test run can find what it left. */
  runId?: string;
}

function binDir(given?: string): string {
  if (given) return given;
  const res = ensureTestbin();
  if (!res.ok) throw new Error(`the test control plane is not available: ${res.reason}`);
  return res.binDir;
}

function kubeconfigYaml(server: string, caPem: string, user: string, client: KeyPair): string {
  const b64 = (s: string) => Buffer.from(s).toString("base64");
  return toYaml({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "envtest", cluster: { server, "certificate-authority-data": b64(caPem) } }],
    users: [
      {
        name: user,
        user: { "client-certificate-data": b64(client.cert), "client-key-data": b64(client.key) },
      },
    ],
    contexts: [{ name: user, context: { cluster: "envtest", user, namespace: "default" } }],
    "current-context": user,
  });
}

/** Whether the apiserver at `server` answers /readyz with 200, as an admin client. */
export function getReadyz(server: string, caPem: string, client: KeyPair): Promise<boolean> {
  return new Promise((resolve) => {
    const req = https.get(
      `${server}/readyz`,
      { ca: caPem, cert: client.cert, key: client.key, timeout: 2000 },
      (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      },
    );
    req.on("error", () => resolve(false));
    req.on("timeout", () => {
      req.destroy();
      resolve(false);
    });
  });
}

export async function startControlPlane(opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const bin = binDir(opts.binDir);
  const dir = mkdtempSync(path.join(os.tmpdir(), `edge-cp-${opts.runId ?? "run"}-`));
  const started = process.hrtime.bigint();
  const procs: Supervised[] = [];
  // Newest first, one at a time: an apiserver whose etcd went first retries
  // it until it is killed, which makes every stop take the full grace period.
  const stopAll = async (): Promise<void> => {
    for (const p of procs.splice(0).reverse()) await p.stop();
  };

  try {
    // Client CA (the admin and restricted users), and service-account keys.
    const clientCa = createCa({ commonName: "envtest-client-ca" });
    const admin = issueCertificate(clientCa, {
      commonName: "admin",
      organizations: ["system:masters"],
      usage: "client",
    });
    const sa = generateKeyPairSync("rsa", {
      modulusLength: 2048,
      privateKeyEncoding: { type: "pkcs8", format: "pem" },
      publicKeyEncoding: { type: "spki", format: "pem" },
    });
    const certDir = path.join(dir, "apiserver-certs");
    mkdirSync(certDir);
    // The apiserver writes its own self-signed serving cert; we give it ours so
    // clients can verify it.
    const servingCa = createCa({ commonName: "envtest-serving-ca" });
    const serving = issueCertificate(servingCa, {
      commonName: "kube-apiserver",
      dnsNames: ["localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"],
      ips: ["127.0.0.1", "10.0.0.1"],
      usage: "server",
    });
    const files = {
      clientCa: path.join(dir, "client-ca.crt"),
      saKey: path.join(dir, "sa.key"),
      saPub: path.join(dir, "sa.pub"),
      tlsCert: path.join(certDir, "apiserver.crt"),
      tlsKey: path.join(certDir, "apiserver.key"),
    };
    writeFileSync(files.clientCa, clientCa.cert);
    writeFileSync(files.saKey, sa.privateKey);
    writeFileSync(files.saPub, sa.publicKey);
    writeFileSync(files.tlsCert, serving.cert + servingCa.cert);
    writeFileSync(files.tlsKey, serving.key);

    const [etcdPort, peerPort, apiPort] = [await freePort(), await freePort(), await freePort()];
    const etcdEndpoint = `http://127.0.0.1:${etcdPort}`;
    const peer = `http://127.0.0.1:${peerPort}`;
    const startEtcd = (): Supervised =>
      supervise(
        "etcd",
        path.join(bin, "etcd"),
        [
          `--data-dir=${path.join(dir, "etcd")}`,
          `--listen-client-urls=${etcdEndpoint}`,
          `--advertise-client-urls=${etcdEndpoint}`,
          `--listen-peer-urls=${peer}`,
          `--initial-advertise-peer-urls=${peer}`,
          `--initial-cluster=default=${peer}`,
          "--unsafe-no-fsync=true",
          "--log-level=warn",
          "--quota-backend-bytes=8589934592",
        ],
        { logFile: path.join(dir, "etcd.log") },
      );
    let etcd = startEtcd();
    procs.push(etcd);

    const server = `https://127.0.0.1:${apiPort}`;
    const startApiserver = (): Supervised =>
      supervise(
        "kube-apiserver",
        path.join(bin, "kube-apiserver"),
        [
          `--etcd-servers=${etcdEndpoint}`,
          `--cert-dir=${certDir}`,
          `--tls-cert-file=${files.tlsCert}`,
          `--tls-private-key-file=${files.tlsKey}`,
          `--secure-port=${apiPort}`,
          "--bind-address=127.0.0.1",
          "--advertise-address=127.0.0.1",
          "--service-cluster-ip-range=10.0.0.0/24",
          "--allow-privileged=true",
          "--disable-admission-plugins=ServiceAccount",
          "--authorization-mode=RBAC",
          `--client-ca-file=${files.clientCa}`,
          `--service-account-issuer=${server}/`,
          `--service-account-key-file=${files.saPub}`,
          `--service-account-signing-key-file=${files.saKey}`,
          "--endpoint-reconciler-type=none",
          // A Service-referenced webhook (the chart's in-cluster registration) is
          // called at its endpoints, never at a name the host's resolver answers:
          // with no pods here that fails on this machine, and nothing is dialled.
          "--enable-aggregator-routing=true",
          "--v=0",
          ...(opts.apiserverArgs ?? []),
        ],
        { logFile: path.join(dir, "kube-apiserver.log") },
      );
    let apiserver = startApiserver();
    procs.push(apiserver);

    /** Until the apiserver answers /readyz, or fails with its and etcd's last words if either exits. */
    const waitReady = async (): Promise<void> => {
      const failed = Promise.race([
        etcd.exited.then((c) => `etcd exited with code ${c}`),
        apiserver.exited.then((c) => `kube-apiserver exited with code ${c}`),
      ]);
      let early: string | undefined;
      void failed.then((why) => (early = why));
      await waitFor(
        "kube-apiserver /readyz",
        async () => {
          if (early) throw new Error(early);
          return (await getReadyz(server, servingCa.cert, admin)) ? true : undefined;
        },
        120_000,
        100,
      ).catch((e: Error) => {
        throw new Error(
          `${e.message}\n--- kube-apiserver ---\n${apiserver.output().slice(-4000)}\n--- etcd ---\n${etcd.output().slice(-2000)}`,
        );
      });
    };
    await waitReady();
    const startSeconds = Number(process.hrtime.bigint() - started) / 1e9;

    const kubeconfig = path.join(dir, "admin.kubeconfig");
    writeFileSync(kubeconfig, kubeconfigYaml(server, servingCa.cert, "admin", admin));
    const helmHome = path.join(dir, "helm");
    const toolEnv = (kc: string, env?: NodeJS.ProcessEnv): NodeJS.ProcessEnv => ({
      ...process.env,
      KUBECONFIG: kc,
      HELM_CACHE_HOME: path.join(helmHome, "cache"),
      HELM_CONFIG_HOME: path.join(helmHome, "config"),
      HELM_DATA_HOME: path.join(helmHome, "data"),
      ...env,
    });

    const cp: ControlPlane = {
      server,
      kubeconfig,
      binDir: bin,
      etcdEndpoint,
      dir,
      startSeconds,
      servingCertFiles: { cert: files.tlsCert, key: files.tlsKey },
      kubeConfig() {
        const kc = new KubeConfig();
        kc.loadFromFile(kubeconfig);
        return kc;
      },
      kube() {
        const access = loadKubeConfig(kubeconfig);
        if (!access) throw new Error(`cannot load ${kubeconfig}`);
        return kubeClient(access);
      },
      kubectl(args, o = {}) {
        return run(path.join(bin, "kubectl"), args, {
          input: o.input,
          env: toolEnv(o.kubeconfig ?? kubeconfig, o.env),
        });
      },
      helm(args, o = {}) {
        return run(path.join(bin, "helm"), args, {
          input: o.input,
          env: toolEnv(o.kubeconfig ?? kubeconfig, o.env),
          timeoutMs: 300_000,
        });
      },
      async restrictedKubeconfig(name, rules, namespace) {
        const rbac = cp.kubeConfig().makeApiClient(RbacAuthorizationV1Api);
        const roleName = `restricted-${name}`.replace(/[^a-z0-9-]/g, "-");
        const subjects = [{ kind: "User", name, apiGroup: "rbac.authorization.k8s.io" }];
        const roleRef = { apiGroup: "rbac.authorization.k8s.io", name: roleName };
        if (namespace) {
          await rbac.createNamespacedRole({ namespace, body: { metadata: { name: roleName }, rules } });
          await rbac.createNamespacedRoleBinding({
            namespace,
            body: { metadata: { name: roleName }, subjects, roleRef: { ...roleRef, kind: "Role" } },
          });
        } else {
          await rbac.createClusterRole({ body: { metadata: { name: roleName }, rules } });
          await rbac.createClusterRoleBinding({
            body: { metadata: { name: roleName }, subjects, roleRef: { ...roleRef, kind: "ClusterRole" } },
          });
        }
        const pair = issueCertificate(clientCa, { commonName: name, usage: "client" });
        const file = path.join(dir, `${roleName}.kubeconfig`);
        writeFileSync(file, kubeconfigYaml(server, servingCa.cert, name, pair));
        return file;
      },
      logs() {
        return `--- kube-apiserver ---\n${apiserver.output().slice(-8000)}\n--- etcd ---\n${etcd.output().slice(-4000)}`;
      },
      async restart(component, o = {}) {
        const began = process.hrtime.bigint();
        const old = component === "etcd" ? etcd : apiserver;
        await (o.kill ? old.kill() : old.stop());
        await sleep(o.downMs ?? 0);
        const fresh = component === "etcd" ? startEtcd() : startApiserver();
        procs[procs.indexOf(old)] = fresh;
        if (component === "etcd") etcd = fresh;
        else apiserver = fresh;
        await waitReady();
        return { seconds: Number(process.hrtime.bigint() - began) / 1e9 };
      },
      async stop() {
        await stopAll();
        rmSync(dir, { recursive: true, force: true });
      },
    };
    return cp;
  } catch (e) {
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
}
