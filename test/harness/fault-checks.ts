// What every fault test checks once its faults have stopped, the way a user
// would: read the routes from the apiserver and what the data plane serves
// (the memory sink's /debug/dataplane), and look at the processes.
//   - no terminating route still held by our finalizer,
//   - no route served that no longer exists (or is being deleted),
//   - no live route missing from the data plane,
//   - no process of the operator dead other than those killed on purpose.
// It waits, bounded, for the operator to converge, then reports the counts.

import { readFileSync, writeFileSync } from "node:fs";
import { parse as fromYaml, stringify as toYaml } from "yaml";
import { objectKeyOf } from "../../src/api/object-key.js";
import { FINALIZER, type EdgeRouteV2 } from "../../src/api/types.js";
import type { ControlPlane } from "../../tools/testenv/control-plane.js";
import type { OperatorStack } from "./operator-stack.js";
import { sleep, type Supervised } from "../../tools/testenv/process.js";

export interface FaultOutcome {
  /** Routes looked at: live and terminating, in the namespaces checked. */
  routesChecked: number;
  strandedFinalizers: string[];
  servedGone: string[];
  missing: string[];
  crashed: string[];
  /** Seconds from the end of the faults to convergence (or to giving up). */
  convergedSeconds: number;
}

/** A copy of `kubeconfig` that reaches the apiserver at `server` instead (same CA, same credentials). */
export function kubeconfigVia(kubeconfig: string, server: string, file: string): string {
  const doc = fromYaml(readFileSync(kubeconfig, "utf8")) as {
    clusters: { cluster: Record<string, unknown> }[];
  };
  for (const c of doc.clusters) c.cluster.server = server;
  writeFileSync(file, toYaml(doc));
  return file;
}

async function routesIn(cp: ControlPlane, namespaces: readonly string[]): Promise<EdgeRouteV2[]> {
  const r = await cp.kubectl(["get", "edgeroutes.v2.net.10xdev.io", "-A", "-o", "json"]);
  if (r.code !== 0) throw new Error(`kubectl get edgeroutes: ${r.stderr}`);
  return (JSON.parse(r.stdout) as { items: EdgeRouteV2[] }).items.filter((x) =>
    namespaces.includes(x.metadata.namespace ?? ""),
  );
}

async function measure(
  cp: ControlPlane,
  stack: OperatorStack,
  namespaces: readonly string[],
  alive: readonly Supervised[],
): Promise<Omit<FaultOutcome, "convergedSeconds">> {
  const routes = await routesIn(cp, namespaces);
  const live = new Set(routes.filter((r) => !r.metadata.deletionTimestamp).map(objectKeyOf));
  const served = (await stack.dataPlane()).routes.filter((k) => namespaces.includes(k.split("/")[0] ?? ""));
  return {
    routesChecked: routes.length,
    strandedFinalizers: routes
      .filter((r) => r.metadata.deletionTimestamp && r.metadata.finalizers?.includes(FINALIZER))
      .map(objectKeyOf),
    servedGone: served.filter((k) => !live.has(k)),
    missing: [...live].filter((k) => !served.includes(k)),
    crashed: alive
      .filter((p) => p.child.exitCode !== null || p.child.signalCode !== null)
      .map((p) => `${p.name} (exit ${p.child.exitCode ?? p.child.signalCode})`),
  };
}

/**
 * Waits up to `timeoutMs` for every check to hold, then answers the counts as
 * they stand. `alive` are the processes that must not have died.
 */
export async function awaitConvergence(
  cp: ControlPlane,
  stack: OperatorStack,
  namespaces: readonly string[],
  alive: readonly Supervised[],
  timeoutMs = 120_000,
): Promise<FaultOutcome> {
  const started = Date.now();
  let last: Omit<FaultOutcome, "convergedSeconds"> | undefined;
  let lastError: unknown;
  while (Date.now() - started < timeoutMs) {
    try {
      last = await measure(cp, stack, namespaces, alive);
      lastError = undefined;
      const clean =
        last.strandedFinalizers.length +
          last.servedGone.length +
          last.missing.length +
          last.crashed.length ===
        0;
      if (clean || last.crashed.length > 0) break;
    } catch (e) {
      lastError = e;
    }
    await sleep(500);
  }
  if (!last) throw new Error(`could not check the routes: ${(lastError as Error | undefined)?.message}`);
  return { ...last, convergedSeconds: (Date.now() - started) / 1000 };
}

/** The one line each fault test prints, that BENCHMARKS.md "Fault suite" records. */
export function summaryLine(name: string, faults: string, o: FaultOutcome): string {
  return (
    `fault-suite ${name}: ${faults}; ${o.routesChecked} routes checked; ` +
    `${o.strandedFinalizers.length} stranded finalizers, ${o.servedGone.length} served but gone, ` +
    `${o.missing.length} missing, ${o.crashed.length} crashed; converged in ${o.convergedSeconds.toFixed(1)} s`
  );
}
