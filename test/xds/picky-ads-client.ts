// A hand-driven data-plane client on one ADS server: it subscribes to every
// cluster (State of the World) and answers each response as the test says:
// ACK, hold (no answer: the client has not taken it yet), or NACK with its own
// words. What gRPC's real client cannot be told to do on one server only.

import type * as grpc from "@grpc/grpc-js";
import { TYPE_URL } from "../../src/envoy/envoy-resources.js";
import type { DiscoveryResponse } from "../../src/dataplane/xds/proto-codec.js";
import { adsClient, sotwStream } from "./raw-ads-client.js";

export type PickyMode = { kind: "ack" } | { kind: "hold" } | { kind: "nack"; message: string };

export interface PickyClient {
  /** From now on; "ack" also takes the response held, if any. */
  mode(m: PickyMode): void;
  /** Versions received, in order. */
  readonly received: string[];
  close(): Promise<void>;
}

export function startPickyClient(port: number, node: string, initial: PickyMode): PickyClient {
  const client: grpc.Client = adsClient(port);
  const s = sotwStream(client);
  let mode = initial;
  let held: DiscoveryResponse | undefined;
  let acked = "";
  let closed = false;
  const received: string[] = [];
  const answer = (m: DiscoveryResponse) => {
    if (mode.kind === "hold") {
      held = m;
      return;
    }
    held = undefined;
    if (mode.kind === "ack") {
      acked = m.version_info;
      s.send({ type_url: TYPE_URL.cluster, version_info: m.version_info, response_nonce: m.nonce });
    } else {
      s.send({
        type_url: TYPE_URL.cluster,
        version_info: acked,
        response_nonce: m.nonce,
        error_detail: { code: 3, message: mode.message },
      });
    }
  };
  s.send({ node: { id: node, cluster: "edge" }, type_url: TYPE_URL.cluster });
  // Bounded: ends with close(), or after 10 minutes.
  const deadline = Date.now() + 10 * 60_000;
  const loop = (async () => {
    while (!closed && Date.now() < deadline) {
      try {
        const m = (await s.next(500)).message;
        received.push(m.version_info);
        answer(m);
      } catch {
        // No response within 500 ms: look again.
      }
    }
  })();
  return {
    received,
    mode(m) {
      mode = m;
      if (held && m.kind !== "hold") answer(held);
    },
    async close() {
      closed = true;
      await loop;
      s.end();
      client.close();
    },
  };
}
