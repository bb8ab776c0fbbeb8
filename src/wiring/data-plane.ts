// The data plane `serve --dataplane` names, opened: the sink, and for xds the
// ADS server listening on its ports (TLS, and optionally plaintext beside it).

import type { DataPlane } from "../dataplane/dataplane.js";
import { MemoryDataPlane } from "../dataplane/memory.js";
import type { AckLeaseIdentity } from "../dataplane/xds/ack-records-lease.js";
import type { AdsTls } from "../dataplane/xds/ads-tls.js";
import type { XdsDataPlane } from "../dataplane/xds/xds-dataplane.js";
import type { KubeClient } from "../kube/client.js";
import type { Logger } from "../observability/logger.js";
import type { Registry } from "../observability/metrics.js";

export const DATA_PLANES = ["memory", "envoy-configmap", "xds"] as const;
export type DataPlaneKind = (typeof DATA_PLANES)[number];

export interface XdsListen {
  readonly host: string;
  readonly port: number;
  /** The TLS key pair (and with mutual TLS the client CA); absent: plaintext. */
  readonly tls?: AdsTls;
  /** A second, plaintext port on the same server, for gRPC's own xDS clients. */
  readonly plaintext?: { readonly host: string; readonly port: number };
  readonly ackTimeoutMs?: number;
  readonly forgetUnreachableAfterMs?: number;
}

export interface DataPlaneConfig {
  readonly kind: DataPlaneKind;
  /** envoy-configmap: where the ConfigMap lives. */
  readonly configMapNamespace: string;
  readonly configMapName: string;
  readonly xds: XdsListen;
  /** In a pod: the identity under which ACK records are shared with the other replicas (absent: this process only). */
  readonly ackLeases?: AckLeaseIdentity;
  /** Where the data plane's metrics go (xds). */
  readonly registry?: Registry;
}

/** The opened sink; `memory` and `xds` are the same object as `plane`, typed, for the debug routes. */
export interface OpenDataPlane {
  readonly plane: DataPlane;
  readonly memory?: MemoryDataPlane;
  readonly xds?: XdsDataPlane;
}

export async function openDataPlane(
  config: DataPlaneConfig,
  kube: KubeClient,
  log: Logger,
): Promise<OpenDataPlane> {
  if (config.kind === "memory") {
    const memory = new MemoryDataPlane();
    return { plane: memory, memory };
  }
  if (config.kind === "envoy-configmap") {
    const { EnvoyConfigMapDataPlane } = await import("../dataplane/envoy-configmap.js");
    return {
      plane: new EnvoyConfigMapDataPlane(kube, {
        namespace: config.configMapNamespace,
        name: config.configMapName,
      }),
    };
  }
  // Loaded only for this sink: gRPC stays out of the other sinks' memory.
  const { XdsDataPlane } = await import("../dataplane/xds/xds-dataplane.js");
  const where = config.xds;
  const identity = config.ackLeases;
  const xds = new XdsDataPlane({
    log,
    ...(config.registry ? { registry: config.registry } : {}),
    ...(identity ? { acks: { client: kube, identity } } : {}),
    ...(where.tls ? { tls: where.tls } : {}),
    ...(where.ackTimeoutMs !== undefined ? { ackTimeoutMs: where.ackTimeoutMs } : {}),
    ...(where.forgetUnreachableAfterMs !== undefined
      ? { forgetUnreachableAfterMs: where.forgetUnreachableAfterMs }
      : {}),
  });
  const port = await xds.listen(where.host, where.port);
  log.info(
    {
      host: where.host,
      port,
      tls: where.tls !== undefined,
      mutualTLS: where.tls?.clientCa !== undefined,
      ackLeasePrefix: identity?.prefix,
    },
    "ADS server listening",
  );
  if (where.plaintext) {
    const p = await xds.server.listen(where.plaintext.host, where.plaintext.port, true);
    log.info({ host: where.plaintext.host, port: p, tls: false }, "ADS server listening (plaintext)");
  }
  return { plane: xds, xds };
}
