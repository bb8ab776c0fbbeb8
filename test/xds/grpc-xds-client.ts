// gRPC's own xDS client (@grpc/grpc-js-xds) pointed at an ADS server on
// loopback. Its bootstrap is read once per process, from
// GRPC_XDS_BOOTSTRAP_CONFIG, when the first xds:/// channel is made: so one
// ADS port per test file, and a restarted server comes back on the same port.

import * as grpc from "@grpc/grpc-js";

let registered = false;

/** `host`: loopback by default; the cluster suite gives the ADS Service's ClusterIP. */
export async function useXdsServer(port: number, nodeId = "test-client", host = "127.0.0.1"): Promise<void> {
  if (registered) throw new Error("the xDS bootstrap is read once per process");
  process.env.GRPC_XDS_BOOTSTRAP_CONFIG = JSON.stringify({
    xds_servers: [
      { server_uri: `${host}:${port}`, channel_creds: [{ type: "insecure" }], server_features: ["xds_v3"] },
    ],
    node: { id: nodeId, locality: {} },
  });
  const xds = await import("@grpc/grpc-js-xds");
  xds.register();
  registered = true;
}

export function xdsClient(host: string): grpc.Client {
  return new grpc.Client(`xds:///${host}`, grpc.credentials.createInsecure());
}
