// gRPC backends as pods, for the real-cluster xDS suite: a Deployment of the
// operator's own image (it holds Node and @grpc/grpc-js; no other image, no
// registry) running a few lines that answer /echo.Echo/Call and
// /other.Other/Call with the pod's name, and a Service in front. The
// EndpointSlices are the real controller's.

export const ECHO_PORT = 50051;

// Plain JavaScript for `node -e` in /app (the image's WORKDIR, so require finds
// its node_modules). On SIGTERM it stops taking new streams and lets calls finish.
const SCRIPT = `
const grpc = require("@grpc/grpc-js");
const id = (b) => b;
const name = process.env.POD_NAME;
const unary = (path) => ({ Call: { path, requestStream: false, responseStream: false,
  requestSerialize: id, requestDeserialize: id, responseSerialize: id, responseDeserialize: id } });
const reply = (_call, done) => done(null, Buffer.from(name));
const server = new grpc.Server();
server.addService(unary("/echo.Echo/Call"), { Call: reply });
server.addService(unary("/other.Other/Call"), { Call: reply });
server.bindAsync("0.0.0.0:${ECHO_PORT}", grpc.ServerCredentials.createInsecure(), (err) => {
  if (err) { console.error(err); process.exit(1); }
  console.log("echo backend " + name + " on ${ECHO_PORT}");
});
process.on("SIGTERM", () => server.tryShutdown(() => process.exit(0)));
`;

/** A Deployment and its Service, both named `name`. */
export function echoBackend(
  name: string,
  namespace: string,
  replicas: number,
  image: string,
): [Record<string, unknown>, Record<string, unknown>] {
  const labels = { app: name };
  const deployment = {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace, labels },
    spec: {
      replicas,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          automountServiceAccountToken: false,
          // A pod being removed keeps serving until the Service's endpoints
          // (and so the xDS clients' EDS) have dropped it.
          terminationGracePeriodSeconds: 15,
          containers: [
            {
              name: "echo",
              image,
              imagePullPolicy: "Never",
              command: ["node", "-e", SCRIPT],
              env: [{ name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } }],
              ports: [{ name: "grpc", containerPort: ECHO_PORT }],
              readinessProbe: { tcpSocket: { port: "grpc" }, periodSeconds: 1 },
              lifecycle: { preStop: { sleep: { seconds: 5 } } },
              resources: { requests: { cpu: "10m", memory: "32Mi" }, limits: { memory: "128Mi" } },
              securityContext: {
                allowPrivilegeEscalation: false,
                runAsNonRoot: true,
                capabilities: { drop: ["ALL"] },
              },
            },
          ],
        },
      },
    },
  };
  const service = {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name, namespace },
    spec: {
      selector: labels,
      ports: [{ name: "grpc", port: ECHO_PORT, targetPort: "grpc", protocol: "TCP" }],
    },
  };
  return [deployment, service];
}
