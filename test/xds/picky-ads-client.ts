// A hand-driven data-plane client on one ADS server: it subscribes to every
// cluster and to Envoy's route configuration (State of the World: a client
// that holds routes) and answers each response as the test says: ACK, hold (no
// answer: the client has not taken it yet), or NACK with its own words. What
// gRPC's real client cannot be told to do on one server only.

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
  const held = new Map<string, DiscoveryResponse>();
  const acked = new Map<string, string>();
  const names = (typeUrl: string) => (typeUrl === TYPE_URL.routeConfiguration ? ["edge"] : []);
  let closed = false;
  const received: string[] = [];
  const answer = (m: DiscoveryResponse) => {
    if (mode.kind === "hold") {
      held.set(m.type_url, m);
      return;
    }
    held.delete(m.type_url);
    const resource_names = names(m.type_url);
    if (mode.kind === "ack") {
      acked.set(m.type_url, m.version_info);
      s.send({ type_url: m.type_url, version_info: m.version_info, response_nonce: m.nonce, resource_names });
    } else {
      s.send({
        type_url: m.type_url,
        version_info: acked.get(m.type_url) ?? "",
        response_nonce: m.nonce,
        resource_names,
        error_detail: { code: 3, message: mode.message },
      });
    }
  };
  s.send({ node: { id: node, cluster: "edge" }, type_url: TYPE_URL.cluster });
  s.send({ type_url: TYPE_URL.routeConfiguration, resource_names: names(TYPE_URL.routeConfiguration) });
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
      if (m.kind !== "hold") for (const h of [...held.values()]) answer(h);
    },
    async close() {
      closed = true;
      await loop;
      s.end();
      client.close();
    },
  };
}
