// The chart installed in the real cluster (cluster.ts) from the image built
// here (image.ts), with its in-cluster defaults: builtin certificates made by
// the server pods, webhooks through the Service, server and watcher
// Deployments. Shared by the demo and the cluster end-to-end tests.

import path from "node:path";
import type { Cluster } from "./cluster.js";
import { httpsJson } from "./https-json.js";
import type { OperatorImage } from "./image.js";
import { must } from "./process.js";
import { REPO_ROOT } from "./testbin.js";

export const CHART = path.join(REPO_ROOT, "charts/edge-operator");

export interface Release {
  readonly name: string;
  readonly namespace: string;
  /** The chart's fullname: it names the Deployments, Service, Secret, webhooks and Lease. */
  readonly fullname: string;
}

export function release(name = "edge", namespace = "edge-system"): Release {
  return { name, namespace, fullname: name.includes("edge-operator") ? name : `${name}-edge-operator` };
}

/** The --set flags that point the chart at a locally built image (nothing is pulled). */
export function imageValues(image: Pick<OperatorImage, "repository" | "tag">): string[] {
  // --set-string: the tag is a content hash, and an all-digit one (323466576021) would
  // reach the chart as a number, which its schema refuses.
  return [
    "--set-string",
    `image.repository=${image.repository}`,
    "--set-string",
    `image.tag=${image.tag}`,
    "--set",
    "image.pullPolicy=Never",
  ];
}

/** `helm install --wait`: returns once every Deployment of the release is available. */
export async function helmInstall(
  cluster: Cluster,
  rel: Release,
  image: OperatorImage,
  extra: string[] = [],
): Promise<void> {
  await must(
    `helm install ${rel.name}`,
    cluster.helm(
      [
        "install",
        rel.name,
        CHART,
        "-n",
        rel.namespace,
        "--create-namespace",
        ...imageValues(image),
        ...extra,
        "--wait",
        "--timeout",
        "5m",
      ],
      { timeoutMs: 330_000 },
    ),
  );
}

interface PodList {
  items: {
    metadata: { name: string; deletionTimestamp?: string };
    spec: { nodeName?: string };
    status: {
      podIP?: string;
      phase?: string;
      conditions?: { type: string; status: string }[];
      containerStatuses?: { restartCount: number; state?: Record<string, { reason?: string }> }[];
    };
  }[];
}

export interface PodInfo {
  name: string;
  ip: string;
  ready: boolean;
  restarts: number;
  terminating: boolean;
  /** waiting/terminated reasons of its containers (CrashLoopBackOff, Error, ...). */
  reasons: string[];
}

/** The release's pods of one component (server, watcher). */
export async function componentPods(cluster: Cluster, rel: Release, component: string): Promise<PodInfo[]> {
  const out = await must(
    "kubectl get pods",
    cluster.kubectl([
      "get",
      "pods",
      "-n",
      rel.namespace,
      "-l",
      `app.kubernetes.io/instance=${rel.name},app.kubernetes.io/component=${component}`,
      "-o",
      "json",
    ]),
  );
  return (JSON.parse(out) as PodList).items.map((p) => ({
    name: p.metadata.name,
    ip: p.status.podIP ?? "",
    ready: p.status.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false,
    restarts: (p.status.containerStatuses ?? []).reduce((n, c) => n + c.restartCount, 0),
    terminating: p.metadata.deletionTimestamp !== undefined,
    reasons: (p.status.containerStatuses ?? []).flatMap((c) =>
      Object.values(c.state ?? {}).flatMap((s) => (s.reason ? [s.reason] : [])),
    ),
  }));
}

/** The CA the server injected into the webhook registration (what the apiserver trusts). */
export async function injectedCa(cluster: Cluster, rel: Release): Promise<string> {
  const b64 = await must(
    "kubectl get validatingwebhookconfiguration",
    cluster.kubectl([
      "get",
      "validatingwebhookconfiguration",
      `${rel.fullname}-validate`,
      "-o",
      "jsonpath={.webhooks[0].clientConfig.caBundle}",
    ]),
  );
  const pem = Buffer.from(b64.trim(), "base64").toString("utf8");
  if (!pem.includes("BEGIN CERTIFICATE"))
    throw new Error(`no CA injected into ${rel.fullname}'s webhooks yet`);
  return pem;
}

/** A token of the watcher's ServiceAccount: /reconcile and the debug routes accept it. */
export async function watcherToken(cluster: Cluster, rel: Release): Promise<string> {
  return (
    await must(
      "kubectl create token",
      cluster.kubectl(["create", "token", `${rel.fullname}-watcher`, "-n", rel.namespace, "--duration=2h"]),
    )
  ).trim();
}

/** The Service's DNS name: the name the serving certificate carries. */
export function serviceHost(rel: Release): string {
  return `${rel.fullname}.${rel.namespace}.svc`;
}

/**
 * A JSON call to one server pod, at its pod IP on the cluster's bridge (this
 * machine), verified against the CA as the Service's name: the apiserver's
 * service proxy would authenticate the call as its own and not pass the
 * watcher's token on, so the demo goes to the pod the way the watcher does.
 */
export function callPod(
  pod: PodInfo,
  caPem: string,
  rel: Release,
  token: string,
  method: "GET" | "POST",
  urlPath: string,
  body?: unknown,
): Promise<{ status: number; body: unknown }> {
  return httpsJson(`https://${pod.ip}:9443${urlPath}`, caPem, method, body, token, serviceHost(rel));
}
