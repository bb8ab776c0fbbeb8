// The demo on the real cluster: the cluster started here (tools/testenv/cluster.ts),
// the operator's image and the demo's workload image built without Docker and
// loaded into its containerd, and the chart installed as `helm install` gives
// a user: the xds data plane, two servers, two leader-elected watchers. Only
// what a local cluster needs is set (the local images, never pulled; the
// plaintext ADS port that proxyless gRPC clients need), and a shorter
// deprogram timeout, so that the break-glass need not wait two minutes.
// The data plane is gRPC's own xDS client in a pod, calling the routes' hosts,
// with gRPC backends behind Services whose EndpointSlices the real controller makes.

import { buildOperatorImage, buildWorkloadImage } from "../testenv/image.js";
import { CRD_NAME, GROUP } from "../../src/api/types.js";
import { startCluster, type Cluster } from "../testenv/cluster.js";
import {
  callPod,
  componentPods,
  helmInstall,
  imageValues,
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
import {
  BACKEND_PORT,
  BACKENDS,
  CLIENT_HOSTS,
  dataPlaneLine,
  DEMO_METHOD,
  DEMO_NAMESPACE,
} from "./manifests.js";
import { CLIENT_STATUS_PORT, backendDeployment, clientPod } from "./workloads.js";

export interface ClusterDemoEnvironment extends DemoEnvironment {
  readonly cluster: Cluster;
}

const ADS_PLAINTEXT_PORT = 18001;
const DEPROGRAM_TIMEOUT = "15s";
const CLIENT_POD = "edge-demo-client";

export async function startClusterDemoEnvironment(
  progress: (line: string) => void,
  teardown: Teardown,
): Promise<ClusterDemoEnvironment> {
  // The images build while the cluster starts: buildah waits mostly on the npm
  // registry and the disk, the cluster's first run on Go compiling.
  progress("building the operator's image and the demo's workload image (buildah, no Docker)");
  const images = (async () => {
    const image = await buildOperatorImage({ progress });
    return { image, workload: await buildWorkloadImage({ progress }) };
  })();
  images.catch(() => undefined); // awaited below; a cluster that fails first must not leave it unhandled
  progress("starting the real cluster (the first run builds its binaries from Go modules)");
  const cluster = await startCluster({ progress: (l) => progress(`cluster: ${l}`) });
  teardown.defer("cluster", () => cluster.stop());
  progress(`node Ready in ${cluster.timings.nodeReady.toFixed(1)} s at ${cluster.server}`);
  const { image, workload } = await images;
  progress(
    `images ${image.ref} (${image.seconds.toFixed(1)} s), ${workload.ref} (${workload.seconds.toFixed(1)} s); loading them into the cluster's containerd`,
  );
  await cluster.ctrImport(image.tar);
  await cluster.ctrImport(workload.tar);

  const rel = release();
  const values = [
    ...imageValues(image),
    "--set",
    "dataPlane.xds.plaintext.enabled=true",
    "--set",
    `server.deprogramTimeout=${DEPROGRAM_TIMEOUT}`,
  ];
  progress(
    `helm install ${rel.name} charts/edge-operator -n ${rel.namespace} --create-namespace ${values.join(" ")} --wait`,
  );
  progress(
    "  (the chart's defaults otherwise: the xds data plane, 2 servers, 2 leader-elected watchers, no debug routes)",
  );
  const installStarted = performance.now();
  const kubectl = (args: string[], input?: string) =>
    cluster.kubectl(args, input === undefined ? {} : { input });
  // The backends start while the chart installs: pods of their own, no Service yet.
  const objects = Object.entries(BACKENDS).map(([name, n]) =>
    backendDeployment(name, DEMO_NAMESPACE, n, workload.ref, BACKEND_PORT),
  );
  const services = new Map(objects.map(([d, s]) => [String((d.metadata as { name: string }).name), s]));
  const yaml = (o: object) => JSON.stringify(o);
  await Promise.all([
    helmInstall(cluster, rel, image, values.slice(imageValues(image).length)),
    must("kubectl apply backends", kubectl(["apply", "-f", "-"], objects.map(([d]) => yaml(d)).join("\n"))),
  ]);
  progress(`all Deployments available in ${((performance.now() - installStarted) / 1000).toFixed(1)} s`);

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

  progress(dataPlaneLine(`in pod ${CLIENT_POD}`));
  await must(
    "kubectl apply the client",
    kubectl(
      ["apply", "-f", "-"],
      yaml(
        clientPod(CLIENT_POD, DEMO_NAMESPACE, workload.ref, {
          ads: `${rel.fullname}-ads.${rel.namespace}.svc:${ADS_PLAINTEXT_PORT}`,
          nodeId: CLIENT_POD,
          targets: CLIENT_HOSTS.map((host) => ({ host, method: DEMO_METHOD })),
        }),
      ),
    ),
  );
  await must(
    "the backends and the client Ready",
    kubectl([
      "wait",
      "-n",
      DEMO_NAMESPACE,
      "--for=condition=Ready",
      "pod",
      "-l",
      "app.kubernetes.io/part-of=edge-operator-demo",
      "--timeout=180s",
    ]),
  );
  const clientIp = (
    await must(
      "the client's pod IP",
      kubectl(["get", "pod", CLIENT_POD, "-n", DEMO_NAMESPACE, "-o", "jsonpath={.status.podIP}"]),
    )
  ).trim();
  const clientUrl = `http://${clientIp}:${CLIENT_STATUS_PORT}`;

  const serverPod = async (): Promise<PodInfo> => {
    const ready = (await componentPods(cluster, rel, "server")).filter((p) => p.ready && !p.terminating);
    const pod = ready[0];
    if (!pod) throw new Error("no server pod is Ready");
    return pod;
  };
  const call = async (method: "GET" | "POST", p: string, body?: unknown) =>
    callPod(await serverPod(), ca, rel, token, method, p, body);
  const kubectlPath = path.join(cluster.binDir, "kubectl");

  return {
    cluster,
    kubeconfig: cluster.kubeconfig,
    kubectlPath,
    deprogramTimeout: DEPROGRAM_TIMEOUT,
    deprogramTimeoutMs: 15_000,
    service(name) {
      const s = services.get(name);
      if (!s) throw new Error(`no backends for a Service ${name}`);
      return [s];
    },
    backendCount: (name) => BACKENDS[name] ?? 0,
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
    ...operatorCalls({
      kubectl,
      kubectlPath,
      kubeconfig: cluster.kubeconfig,
      call,
      clientUrl: async () => clientUrl,
      acks: { namespace: rel.namespace, prefix: `${rel.fullname}-xds` },
    }),
  };
}
