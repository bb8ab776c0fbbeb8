// The demo's data-plane workload in the cluster: gRPC backends (a Deployment
// and its Service; the EndpointSlices are the real controller's) and one
// proxyless gRPC xDS client Pod, all running the image of
// tools/demo-workloads (scripts/image.sh demo-workloads), which the node's
// containerd holds: nothing is pulled.

export const WORKLOAD_PORT = 50051;
export const CLIENT_STATUS_PORT = 8080;
const PART_OF = "edge-operator-demo";
const BACKEND_APP = "edge-demo-backend";
const CLIENT_APP = "edge-demo-client";

/** One `--target`: calls to `method` on `xds:///host`. */
export interface WorkloadTarget {
  /** The host the route names, e.g. shop.example.com. */
  readonly host: string;
  /** A gRPC method path, e.g. /api.Checkout/Get. */
  readonly method: string;
}

export interface ClientArgs {
  /** The operator's plaintext ADS address, HOST:PORT (a Service's DNS name in the cluster). */
  readonly ads: string;
  readonly nodeId: string;
  readonly targets: readonly WorkloadTarget[];
  readonly statusPort?: number;
  readonly statusHost?: string;
  readonly intervalMs?: number;
}

/** The workload's `client` arguments (after the mode), for a Pod or a local process alike. */
export function clientArgs(a: ClientArgs): string[] {
  if (a.targets.length === 0) throw new Error("the demo client needs at least one target");
  return [
    "client",
    "--ads",
    a.ads,
    "--node-id",
    a.nodeId,
    ...a.targets.flatMap((t) => ["--target", `${t.host}=${t.method}`]),
    "--status-port",
    String(a.statusPort ?? CLIENT_STATUS_PORT),
    ...(a.statusHost === undefined ? [] : ["--status-host", a.statusHost]),
    ...(a.intervalMs === undefined ? [] : ["--interval-ms", String(a.intervalMs)]),
  ];
}

/** The workload's `backend` arguments: it answers every method with `name` (the pod's name in a Pod). */
export function backendArgs(a: { port?: number; host?: string; name?: string } = {}): string[] {
  return [
    "backend",
    "--port",
    String(a.port ?? WORKLOAD_PORT),
    ...(a.host === undefined ? [] : ["--host", a.host]),
    ...(a.name === undefined ? [] : ["--name", a.name]),
  ];
}

function labels(app: string, instance: string): Record<string, string> {
  return {
    "app.kubernetes.io/name": app,
    "app.kubernetes.io/instance": instance,
    "app.kubernetes.io/component": app === CLIENT_APP ? "xds-client" : "grpc-backend",
    "app.kubernetes.io/part-of": PART_OF,
  };
}

// The workload writes nothing to disk and needs no privilege.
const SECURITY_CONTEXT = {
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  runAsNonRoot: true,
  runAsUser: 65532,
  runAsGroup: 65532,
  capabilities: { drop: ["ALL"] },
  seccompProfile: { type: "RuntimeDefault" },
} as const;

const RESOURCES = { requests: { cpu: "10m", memory: "48Mi" }, limits: { memory: "160Mi" } } as const;

/**
 * A Deployment of `replicas` gRPC backends, each answering every method with
 * its pod's name on `port`, and a Service of the same name in front (its
 * port is `port` too, named grpc).
 */
export function backendDeployment(
  name: string,
  namespace: string,
  replicas: number,
  image: string,
  port = WORKLOAD_PORT,
): [deployment: Record<string, unknown>, service: Record<string, unknown>] {
  const podLabels = labels(BACKEND_APP, name);
  const selector = { "app.kubernetes.io/name": BACKEND_APP, "app.kubernetes.io/instance": name };
  const deployment = {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace, labels: podLabels },
    spec: {
      replicas,
      selector: { matchLabels: selector },
      template: {
        metadata: { labels: podLabels },
        spec: {
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          // A pod being removed keeps serving until the Service's endpoints
          // (and so the xDS clients' EDS) have dropped it.
          terminationGracePeriodSeconds: 15,
          containers: [
            {
              name: "backend",
              image,
              imagePullPolicy: "Never",
              args: backendArgs({ port }),
              env: [{ name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } }],
              ports: [{ name: "grpc", containerPort: port, protocol: "TCP" }],
              readinessProbe: { tcpSocket: { port: "grpc" }, periodSeconds: 1 },
              lifecycle: { preStop: { sleep: { seconds: 5 } } },
              resources: RESOURCES,
              securityContext: SECURITY_CONTEXT,
            },
          ],
        },
      },
    },
  };
  const service = {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name, namespace, labels: podLabels },
    spec: {
      selector,
      ports: [{ name: "grpc", port, targetPort: "grpc", protocol: "TCP" }],
    },
  };
  return [deployment, service];
}

/**
 * The proxyless gRPC client as a Pod: its status port (GET /state, POST
 * /link) is the demo's window on it, reached on the pod network.
 */
export function clientPod(
  name: string,
  namespace: string,
  image: string,
  args: Omit<ClientArgs, "statusHost">,
): Record<string, unknown> {
  const statusPort = args.statusPort ?? CLIENT_STATUS_PORT;
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace, labels: labels(CLIENT_APP, name) },
    spec: {
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      restartPolicy: "Always",
      terminationGracePeriodSeconds: 5,
      containers: [
        {
          name: "client",
          image,
          imagePullPolicy: "Never",
          args: clientArgs({ ...args, statusPort }),
          ports: [{ name: "status", containerPort: statusPort, protocol: "TCP" }],
          readinessProbe: { httpGet: { path: "/state", port: "status" }, periodSeconds: 1 },
          resources: RESOURCES,
          securityContext: SECURITY_CONTEXT,
        },
      ],
    },
  };
}
