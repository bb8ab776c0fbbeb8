// What the demo does through kubectl, the operator's CLI and the real xDS
// client, the same whether the operator runs as processes on the host or in
// the cluster's pods: only how kubectl runs, how the server and the client
// are reached, and what backs a Service differ.

import { spawn } from "node:child_process";
import { stringify as toYaml } from "yaml";
import { ACK_COMPONENT, type AckRecord } from "../../src/dataplane/xds/ack-records.js";
import { recordFromLease } from "../../src/dataplane/xds/ack-records-lease.js";
import type { Watched } from "../../src/api/object-key.js";
import { CLI } from "../testenv/operator.js";
import { must, run, type RunResult } from "../testenv/process.js";
import { readClientState, setLink, type ClientState, type LinkState } from "./client-state.js";
import { DEMO_NAMESPACE } from "./manifests.js";

export type Kubectl = (args: string[], input?: string) => Promise<RunResult>;
/** A call to the server with the watcher's token. */
export type ServerCall = (
  method: "GET" | "POST",
  path: string,
  body?: unknown,
) => Promise<{ status: number; body: unknown }>;

export interface GoneWatch {
  /** When the watch saw the object deleted (ms since the epoch); undefined until it did. */
  at(): number | undefined;
  stop(): void;
}

export interface OperatorCalls {
  kubectl: Kubectl;
  /** kubectl apply -f - of these objects; throws with kubectl's stderr on failure. */
  apply(...objects: object[]): Promise<void>;
  /** POST /reconcile as the watcher does, with the watcher's token. */
  reconcile(key: string): Promise<{ status: number; body: unknown }>;
  /** What the real xDS client holds and where its RPCs went (its status port). */
  clientState(): Promise<ClientState>;
  /** Cuts the client's link to the ADS server (a partition), or puts it back. */
  setLink(state: LinkState): Promise<void>;
  /** `kubectl get -w` on an EdgeRoute of the demo's namespace: the moment it is gone. */
  watchGone(name: string): GoneWatch;
  /** `edge-operator finalizer release KEY --reason R` as the cluster's admin; its stdout and stderr. */
  releaseFinalizer(key: string, reason: string): Promise<string>;
  /** The servers' ACK records (a Lease per server pod); none out of cluster. */
  ackRecords(): Promise<AckRecord[]>;
}

export interface CallsWhere {
  readonly kubectl: Kubectl;
  readonly kubectlPath: string;
  readonly kubeconfig: string;
  readonly call: ServerCall;
  /** The client's status port, e.g. http://10.88.0.12:8081. */
  readonly clientUrl: () => Promise<string>;
  /** Where the ACK Leases are: the release's namespace and the Leases' name prefix. */
  readonly acks?: { readonly namespace: string; readonly prefix: string };
}

export function operatorCalls(where: CallsWhere): OperatorCalls {
  const { kubectl } = where;
  return {
    kubectl,
    async apply(...objects) {
      await must("kubectl apply", kubectl(["apply", "-f", "-"], objects.map((o) => toYaml(o)).join("---\n")));
    },
    reconcile: (key) => where.call("POST", "/reconcile", { key }),
    clientState: async () => readClientState(await where.clientUrl()),
    async setLink(state) {
      await setLink(await where.clientUrl(), state);
    },
    watchGone(name) {
      let at: number | undefined;
      const child = spawn(
        where.kubectlPath,
        ["get", "edgeroute", name, "-n", DEMO_NAMESPACE, "--watch", "--output-watch-events", "-o", "json"],
        { env: { ...process.env, KUBECONFIG: where.kubeconfig }, stdio: ["ignore", "pipe", "ignore"] },
      );
      child.stdout.setEncoding("utf8").on("data", (d: string) => {
        // Each event is a JSON object {"type": "ADDED" | "MODIFIED" | "DELETED", "object": ...}.
        if (at === undefined && /"type":\s*"DELETED"/.test(d)) at = Date.now();
      });
      child.on("error", () => undefined);
      return { at: () => at, stop: () => void child.kill("SIGTERM") };
    },
    async releaseFinalizer(key, reason) {
      const r = await run(
        process.execPath,
        [CLI, "finalizer", "release", key, "--reason", reason, "--kubeconfig", where.kubeconfig],
        { timeoutMs: 60_000 },
      );
      if (r.code !== 0) throw new Error(`edge-operator finalizer release ${key}: ${r.stderr.trim()}`);
      return `${r.stdout}${r.stderr}`;
    },
    async ackRecords() {
      const acks = where.acks;
      if (!acks) return [];
      const out = await must(
        "kubectl get leases",
        kubectl([
          "get",
          "leases",
          "-n",
          acks.namespace,
          "-l",
          `app.kubernetes.io/component=${ACK_COMPONENT}`,
          "-o",
          "json",
        ]),
      );
      const list = JSON.parse(out) as { items: Watched[] };
      return list.items
        .flatMap((l) => recordFromLease(l, acks.prefix) ?? [])
        .sort((a, b) => (a.replica < b.replica ? -1 : 1));
    },
  };
}
