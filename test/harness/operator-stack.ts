// The whole operator on a test control plane, as processes: the HTTPS server
// (webhooks, conversion, /reconcile) and the watcher, with the CRD and webhook
// configurations registered by URL, and the watcher calling /reconcile with a
// ServiceAccount token that RBAC allows and nothing else.

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { httpsJson } from "../../tools/testenv/https-json.js";
import os from "node:os";
import path from "node:path";
import { stringify as toYaml } from "yaml";
import { buildCrd } from "../../src/api/crd.js";
import { mutatingWebhookConfiguration, validatingWebhookConfiguration } from "./registration.js";
import type { ControlPlane } from "../../tools/testenv/control-plane.js";
import { startCli, startServe, type ServeProcess } from "../../tools/testenv/operator.js";
import { waitFor, type Supervised } from "../../tools/testenv/process.js";
import { reconcileCall } from "./reconcile-call.js";

export const SYSTEM_NAMESPACE = "edge-system";

export interface MemoryState {
  pushes: number;
  failures: number;
  version: string | undefined;
  routes: string[];
  endpoints: Record<string, string[]>;
}

export interface OperatorStack {
  serve: ServeProcess;
  /** The watchers started so far (see startWatcher). */
  watchers: Supervised[];
  /** The watcher's bearer token: what RBAC lets call /reconcile. */
  token: string;
  tokenFile: string;
  startWatcher(extra?: string[]): Supervised;
  /** The memory data plane's state, through GET /debug/dataplane. */
  dataPlane(): Promise<MemoryState>;
  /** Makes the memory data plane refuse its next `count` pushes. */
  failNextPush(count?: number): Promise<void>;
  /** POST /reconcile by hand, as the watcher does. */
  reconcile(key: string, token?: string): Promise<{ status: number; body: unknown }>;
  stop(): Promise<void>;
}

export interface StackOptions {
  /** The kubeconfig serve and watch use (default: the admin's, straight to the apiserver). */
  kubeconfig?: string;
  serveArgs?: string[];
  /** Extra environment for the server process (for example NODE_OPTIONS). */
  serveEnv?: Record<string, string>;
  /** The server's entry instead of the shipped CLI (stalling-serve.ts's STALLING_SERVE). */
  serveCli?: string;
  watchArgs?: string[];
  /** Start one watcher at once (default true). */
  watcher?: boolean;
  /** The CRD's storage version (default v1, as the CRD builder's; the chart's default is v2). */
  storageVersion?: "v1" | "v2";
}

async function must(
  what: string,
  p: Promise<{ code: number; stdout: string; stderr: string }>,
): Promise<string> {
  const r = await p;
  if (r.code !== 0) throw new Error(`${what} failed (${r.code}): ${r.stderr}`);
  return r.stdout;
}

/** Registers the CRD (conversion by URL) and both admission webhooks against a running server. */
export async function registerOperator(
  cp: ControlPlane,
  serve: ServeProcess,
  storageVersion?: "v1" | "v2",
): Promise<void> {
  const client = { url: serve.url, caBundle: serve.caBundle };
  const docs = [
    buildCrd({
      conversion: { url: `${serve.url}/convert`, caBundle: serve.caBundle },
      ...(storageVersion ? { storageVersion } : {}),
    }),
    mutatingWebhookConfiguration({ client }),
    validatingWebhookConfiguration({ client }),
  ];
  await must(
    "kubectl apply (CRD, webhooks)",
    cp.kubectl(["apply", "-f", "-"], { input: docs.map((d) => toYaml(d)).join("---\n") }),
  );
  await must(
    "kubectl wait crd",
    cp.kubectl(["wait", "--for=condition=Established", "crd/edgeroutes.net.10xdev.io", "--timeout=60s"]),
  );
  // The apiserver's discovery and webhook caches catch up asynchronously: wait until
  // a v2 list answers (conversion reachable).
  await waitFor("EdgeRoute v2 to be served", async () => {
    const r = await cp.kubectl(["get", "edgeroutes.v2.net.10xdev.io", "-A"]);
    return r.code === 0 ? true : undefined;
  });
}

/** A ServiceAccount whose token RBAC allows to call /reconcile (and read what the watcher reads). */
export async function watcherIdentity(
  cp: ControlPlane,
  dir: string,
): Promise<{ token: string; tokenFile: string }> {
  const rbac = {
    apiVersion: "v1",
    kind: "List",
    items: [
      { apiVersion: "v1", kind: "Namespace", metadata: { name: SYSTEM_NAMESPACE } },
      {
        apiVersion: "v1",
        kind: "ServiceAccount",
        metadata: { name: "watcher", namespace: SYSTEM_NAMESPACE },
      },
      {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRole",
        metadata: { name: "edge-operator-reconcile-caller" },
        rules: [{ nonResourceURLs: ["/reconcile"], verbs: ["create"] }],
      },
      {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRoleBinding",
        metadata: { name: "edge-operator-reconcile-caller" },
        roleRef: {
          apiGroup: "rbac.authorization.k8s.io",
          kind: "ClusterRole",
          name: "edge-operator-reconcile-caller",
        },
        subjects: [{ kind: "ServiceAccount", name: "watcher", namespace: SYSTEM_NAMESPACE }],
      },
    ],
  };
  await must("kubectl apply (watcher identity)", cp.kubectl(["apply", "-f", "-"], { input: toYaml(rbac) }));
  const token = (
    await must(
      "kubectl create token",
      cp.kubectl(["create", "token", "watcher", "-n", SYSTEM_NAMESPACE, "--duration=24h"]),
    )
  ).trim();
  const tokenFile = path.join(dir, "watcher.token");
  writeFileSync(tokenFile, token);
  return { token, tokenFile };
}

export async function startOperatorStack(cp: ControlPlane, opts: StackOptions = {}): Promise<OperatorStack> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "edge-stack-"));
  const serve = await startServe({
    args: [
      "--kubeconfig",
      opts.kubeconfig ?? cp.kubeconfig,
      "--dataplane",
      "memory",
      // The stack's dataPlane()/failNext() read the memory sink through them (xds: /debug/xds).
      "--debug-routes",
      ...(opts.serveArgs ?? []),
    ],
    env: opts.serveEnv,
    ...(opts.serveCli ? { cli: opts.serveCli } : {}),
  });
  const watchers: Supervised[] = [];
  try {
    await registerOperator(cp, serve, opts.storageVersion);
    const { token, tokenFile } = await watcherIdentity(cp, dir);
    const caFile = path.join(dir, "ca.crt");
    writeFileSync(caFile, serve.caPem);
    const startWatcher = (extra: string[] = []): Supervised => {
      const w = startCli(`watch-${watchers.length}`, [
        "watch",
        "--reconcile-url",
        `${serve.url}/reconcile`,
        "--kubeconfig",
        opts.kubeconfig ?? cp.kubeconfig,
        "--token-file",
        tokenFile,
        "--reconcile-ca",
        caFile,
        "--lease-namespace",
        SYSTEM_NAMESPACE,
        ...(opts.watchArgs ?? []),
        ...extra,
      ]);
      watchers.push(w);
      return w;
    };
    if (opts.watcher !== false) startWatcher();

    const stack: OperatorStack = {
      serve,
      watchers,
      token,
      tokenFile,
      startWatcher,
      async dataPlane() {
        const r = await httpsJson(`${serve.url}/debug/dataplane`, serve.caPem, "GET", undefined, token);
        if (r.status !== 200) throw new Error(`GET /debug/dataplane: ${r.status} ${JSON.stringify(r.body)}`);
        return r.body as MemoryState;
      },
      async failNextPush(count = 1) {
        const r = await httpsJson(
          `${serve.url}/debug/dataplane/fail-next`,
          serve.caPem,
          "POST",
          { count },
          token,
        );
        if (r.status !== 200)
          throw new Error(`POST /debug/dataplane/fail-next: ${r.status} ${JSON.stringify(r.body)}`);
      },
      reconcile(key, tok = token) {
        return reconcileCall(`${serve.url}/reconcile`, serve.caPem, { key }, tok);
      },
      async stop() {
        await Promise.all(watchers.map((w) => w.stop()));
        await serve.stop();
        rmSync(dir, { recursive: true, force: true });
      },
    };
    return stack;
  } catch (e) {
    await Promise.all(watchers.map((w) => w.stop()));
    await serve.stop();
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
}
