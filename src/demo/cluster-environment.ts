// The demo on the real cluster: the cluster started here (src/testenv/cluster),
// the operator's image built without Docker and loaded into its containerd,
// and the chart installed with its in-cluster defaults, so the lifecycle plays
// against the operator running in pods.
//
// One deviation from the defaults: one server replica. The memory data plane
// lives in the server's process, so the lab's counters (dpPushes, dpRoutes)
// are one server's; with two, each reconcile lands on either pod.

import { buildOperatorImage } from "../testenv/image.js";
import { CRD_NAME, GROUP } from "../api/types.js";
import { startCluster, type Cluster } from "../testenv/cluster.js";
import {
  callPod,
  componentPods,
  helmInstall,
  injectedCa,
  release,
  watcherToken,
  type PodInfo,
} from "../testenv/operator-in-cluster.js";
import { must, waitFor } from "../testenv/process.js";
import { operatorCalls } from "./operator-calls.js";
import path from "node:path";
import type { DemoEnvironment } from "./environment.js";
import type { Teardown } from "./teardown.js";

export interface ClusterDemoEnvironment extends DemoEnvironment {
  readonly cluster: Cluster;
}

export async function startClusterDemoEnvironment(
  progress: (line: string) => void,
  teardown: Teardown,
): Promise<ClusterDemoEnvironment> {
  progress("starting the real cluster (the first run builds its binaries from Go modules)");
  const cluster = await startCluster({ progress: (l) => progress(`cluster: ${l}`) });
  teardown.defer("cluster", () => cluster.stop());
  progress(`node Ready in ${cluster.timings.nodeReady.toFixed(1)} s at ${cluster.server}`);

  progress("building the operator's image (npm run image: the Dockerfile through buildah)");
  const image = await buildOperatorImage({ progress: (l) => progress(l.replace(/^image: /, "image: ")) });
  progress(`image ${image.ref} (${image.seconds.toFixed(1)} s); loading it into the cluster's containerd`);
  await cluster.ctrImport(image.tar);

  const rel = release();
  progress(
    `helm install ${rel.name} charts/edge-operator -n ${rel.namespace} (in cluster, server.replicas=1, the memory sink with its debug routes)`,
  );
  const installStarted = performance.now();
  // The lab's lines count the memory sink's pushes, read through its debug
  // routes: a demo's choice, never the chart's default (that is the xds sink).
  await helmInstall(cluster, rel, image, [
    "--set",
    "server.replicas=1",
    "--set",
    "dataPlane.sink=memory",
    "--set",
    "server.debugRoutes=true",
  ]);
  progress(`all Deployments available in ${((performance.now() - installStarted) / 1000).toFixed(1)} s`);
  const kubectl = (args: string[], input?: string) =>
    cluster.kubectl(args, input === undefined ? {} : { input });

  await must(
    "kubectl wait crd",
    kubectl(["wait", "--for=condition=Established", `crd/${CRD_NAME}`, "--timeout=60s"]),
  );
  // The server pods make the certificate and inject its CA; v2 answers once conversion does.
  const ca = await waitFor("the server to inject its CA into the webhooks", async () =>
    injectedCa(cluster, rel).catch(() => undefined),
  );
  await waitFor("EdgeRoute v2 to be served (CRD conversion through the Service)", async () =>
    (await kubectl(["get", `edgeroutes.v2.${GROUP}`, "-A"])).code === 0 ? true : undefined,
  );
  const token = await watcherToken(cluster, rel);

  const serverPod = async (): Promise<PodInfo> => {
    const ready = (await componentPods(cluster, rel, "server")).filter((p) => p.ready && !p.terminating);
    const pod = ready[0];
    if (!pod) throw new Error("no server pod is Ready");
    return pod;
  };
  const call = async (method: "GET" | "POST", p: string, body?: unknown) =>
    callPod(await serverPod(), ca, rel, token, method, p, body);

  return {
    cluster,
    kubeconfig: cluster.kubeconfig,
    kubectlPath: path.join(cluster.binDir, "kubectl"),
    async operatorDown() {
      for (const component of ["server", "watcher"]) {
        const pods = await componentPods(cluster, rel, component);
        const bad = pods.find((p) => p.restarts > 0 || p.reasons.some((r) => r !== "ContainerCreating"));
        if (pods.length === 0) return `no ${component} pod`;
        if (bad) {
          const logs = await kubectl(["logs", "-n", rel.namespace, bad.name, "--previous", "--tail=50"]);
          return `${component} pod ${bad.name}: restarts=${bad.restarts} ${bad.reasons.join(",")}\n${logs.stdout}`;
        }
      }
      return undefined;
    },
    ...operatorCalls(kubectl, call),
  };
}
