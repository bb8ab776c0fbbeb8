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
  /**
   * Settles once the watch has listed the object (its first event): a delete
   * issued after it is seen. Rejects if kubectl exits first or within 60 s
   * shows nothing.
   */
  readonly listed: Promise<void>;
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
  /** `kubectl get -w` on an EdgeRoute of the demo's namespace: the moment it is gone. Await `listed` before deleting. */
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
      let seen = "";
      let settle: (err?: Error) => void = () => undefined;
      const listed = new Promise<void>((resolve, reject) => {
        settle = (err) => (err ? reject(err) : resolve());
      });
      const child = spawn(
        where.kubectlPath,
        ["get", "edgeroute", name, "-n", DEMO_NAMESPACE, "--watch", "--output-watch-events", "-o", "json"],
        { env: { ...process.env, KUBECONFIG: where.kubeconfig }, stdio: ["ignore", "pipe", "pipe"] },
      );
      const timer = setTimeout(
        () => settle(new Error(`kubectl get -w ${name}: no event within 60 s`)),
        60_000,
      );
      let stderr = "";
      child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr = (stderr + d).slice(-2_000)));
      child.stdout.setEncoding("utf8").on("data", (d: string) => {
        // Events are {"type": "ADDED" | "MODIFIED" | "DELETED", "object": ...};
        // a chunk may cut one anywhere, so match on the tail kept across chunks.
        seen = (seen + d).slice(-(d.length + 64));
        if (/"type":\s*"(ADDED|MODIFIED)"/.test(seen)) {
          clearTimeout(timer);
          settle();
        }
        if (at === undefined && /"type":\s*"DELETED"/.test(seen)) at = Date.now();
      });
      child.on("exit", (code) => {
        clearTimeout(timer);
        settle(new Error(`kubectl get -w ${name} exited (${code}) before listing it: ${stderr.trim()}`));
      });
      child.on("error", (err) => settle(err));
      listed.catch(() => undefined);
      return {
        listed,
        at: () => at,
        stop: () => {
          clearTimeout(timer);
          child.kill("SIGTERM");
        },
      };
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
