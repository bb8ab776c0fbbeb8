// What the demo does through kubectl and the server's own endpoints, the same
// whether the operator runs as processes on the host or in the cluster's pods:
// only how kubectl runs and how the server is reached differ.

import { stringify as toYaml } from "yaml";
import type { MemoryDataPlaneState } from "../dataplane/memory.js";
import { must, type RunResult } from "../testenv/process.js";

export type Kubectl = (args: string[], input?: string) => Promise<RunResult>;
/** A call to the server with the watcher's token. */
export type ServerCall = (
  method: "GET" | "POST",
  path: string,
  body?: unknown,
) => Promise<{ status: number; body: unknown }>;

export interface OperatorCalls {
  kubectl: Kubectl;
  /** kubectl apply -f - of these objects; throws with kubectl's stderr on failure. */
  apply(...objects: object[]): Promise<void>;
  /** POST /reconcile as the watcher does, with the watcher's token. */
  reconcile(key: string): Promise<{ status: number; body: unknown }>;
  /** The memory data plane, through GET /debug/dataplane. */
  dataPlane(): Promise<MemoryDataPlaneState>;
  /** Makes the memory data plane refuse its next `count` pushes (0: none). */
  failNextPushes(count: number): Promise<void>;
}

export function operatorCalls(kubectl: Kubectl, call: ServerCall): OperatorCalls {
  return {
    kubectl,
    async apply(...objects) {
      await must("kubectl apply", kubectl(["apply", "-f", "-"], objects.map((o) => toYaml(o)).join("---\n")));
    },
    reconcile: (key) => call("POST", "/reconcile", { key }),
    async dataPlane() {
      const r = await call("GET", "/debug/dataplane");
      if (r.status !== 200) throw new Error(`GET /debug/dataplane: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body as MemoryDataPlaneState;
    },
    async failNextPushes(count) {
      const r = await call("POST", "/debug/dataplane/fail-next", { count });
      if (r.status !== 200)
        throw new Error(`POST /debug/dataplane/fail-next: ${r.status} ${JSON.stringify(r.body)}`);
    },
  };
}
