// The ADS server's figures, as a person looking at the data plane asks them:
// how many clients are connected (by protocol variant), which version each
// holds, what they ACK and NACK by resource type, how long a client takes to
// answer a response, and the bytes sent. The type label is the resource's
// short name (Listener, Cluster, ...), one of the four a snapshot holds; the
// version label is a snapshot's content hash, and only the versions clients
// hold now are reported, so it stays a handful of series.

import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import { PUSH_ORDER } from "./resources.js";

/** What a stream tells as it sends and hears. */
export interface XdsObserver {
  /** A response of `typeUrl`, `bytes` long, was written to a client. */
  sent(typeUrl: string, bytes: number): void;
  /** A client answered the latest response of `typeUrl`: ACK or NACK, `waitedMs` after it was sent. */
  answered(typeUrl: string, acked: boolean, waitedMs: number | undefined): void;
}

export const NO_XDS_OBSERVER: XdsObserver = { sent() {}, answered() {} };

/** `type.googleapis.com/envoy.config.listener.v3.Listener` → `Listener`. */
export function typeLabel(typeUrl: string): string {
  const short = typeUrl.slice(typeUrl.lastIndexOf(".") + 1);
  return /^[A-Za-z]{1,40}$/.test(short) ? short : "other";
}

/** What the collectors read at scrape time. */
export interface XdsView {
  /** The connected streams. */
  clients(): readonly { readonly protocol: "sotw" | "delta" }[];
  /** Per client (connected or unreachable), the version it holds in full, if any. */
  heldVersions(): readonly (string | undefined)[];
  /** The snapshot version served now. */
  served(): string | undefined;
}

/** Registers the xDS metrics on `registry`, read from `view` at each scrape. */
export function createXdsMetrics(registry: Registry, view: XdsView): XdsObserver {
  const acks = new Counter({
    name: "edge_operator_xds_acks_total",
    help: "ACKs from xDS clients, by resource type.",
    labelNames: ["type"] as const,
    registers: [registry],
  });
  const nacks = new Counter({
    name: "edge_operator_xds_nacks_total",
    help: "NACKs from xDS clients (a response refused; the client keeps what it held), by resource type.",
    labelNames: ["type"] as const,
    registers: [registry],
  });
  const answerSeconds = new Histogram({
    name: "edge_operator_xds_response_ack_seconds",
    help: "Time from a response sent to an xDS client to that client's ACK or NACK of it, by resource type.",
    labelNames: ["type"] as const,
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const responses = new Counter({
    name: "edge_operator_xds_responses_total",
    help: "Discovery responses sent to xDS clients, by resource type.",
    labelNames: ["type"] as const,
    registers: [registry],
  });
  const bytes = new Counter({
    name: "edge_operator_xds_sent_bytes_total",
    help: "Bytes of the discovery responses sent to xDS clients (before gRPC's framing), by resource type.",
    labelNames: ["type"] as const,
    registers: [registry],
  });
  new Gauge({
    name: "edge_operator_xds_clients",
    help: "xDS streams connected to this server, by protocol variant (sotw: State of the World, delta).",
    labelNames: ["protocol"] as const,
    registers: [registry],
    collect() {
      const by = { sotw: 0, delta: 0 };
      for (const c of view.clients()) by[c.protocol]++;
      for (const [protocol, n] of Object.entries(by)) this.set({ protocol }, n);
    },
  });
  new Gauge({
    name: "edge_operator_xds_client_versions",
    help: 'xDS clients of this server by the snapshot version each holds in full ("none": none yet).',
    labelNames: ["version"] as const,
    registers: [registry],
    collect() {
      // Versions no client holds any more go: a version is a hash, and they keep coming.
      this.reset();
      const count = new Map<string, number>();
      for (const v of view.heldVersions()) count.set(v ?? "none", (count.get(v ?? "none") ?? 0) + 1);
      for (const [version, n] of count) this.set({ version }, n);
    },
  });
  new Gauge({
    name: "edge_operator_xds_served_version_info",
    help: "The snapshot version this server serves now (value 1).",
    labelNames: ["version"] as const,
    registers: [registry],
    collect() {
      this.reset();
      const v = view.served();
      if (v !== undefined) this.set({ version: v }, 1);
    },
  });
  // The four types a snapshot holds are there from the start, at 0: no NACK reads 0, not "no data".
  for (const url of PUSH_ORDER) {
    const type = typeLabel(url);
    for (const c of [acks, nacks, responses, bytes]) c.inc({ type }, 0);
  }
  return {
    sent(typeUrl, n) {
      const type = typeLabel(typeUrl);
      responses.inc({ type });
      bytes.inc({ type }, n);
    },
    answered(typeUrl, acked, waitedMs) {
      const type = typeLabel(typeUrl);
      (acked ? acks : nacks).inc({ type });
      if (waitedMs !== undefined) answerSeconds.observe({ type }, waitedMs / 1000);
    },
  };
}
