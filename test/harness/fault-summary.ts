// The one-line summary every fault test prints, with the figures that
// BENCHMARKS.md's "Fault suite" section records.

export interface FaultSummary {
  /** Which fault, in a few words. */
  readonly fault: string;
  readonly faultsInjected: number;
  readonly routesChecked: number;
  readonly strandedFinalizers: number;
  /** Routes the data plane serves that no longer exist. */
  readonly staleRoutesServed: number;
  /** Live, accepted routes the data plane does not serve. */
  readonly missingRoutes: number;
  /** Processes that ended without being killed on purpose. */
  readonly crashedProcesses: number;
  readonly seconds: number;
}

export function faultSummaryLine(s: FaultSummary): string {
  return (
    `fault suite: ${s.fault}: faults injected ${s.faultsInjected}, routes checked ${s.routesChecked}, ` +
    `stranded finalizers ${s.strandedFinalizers}, stale routes served ${s.staleRoutesServed}, ` +
    `missing routes ${s.missingRoutes}, crashed processes ${s.crashedProcesses} (${s.seconds.toFixed(1)} s)`
  );
}

export function printFaultSummary(s: FaultSummary): void {
  process.stdout.write(`${faultSummaryLine(s)}\n`);
}

/** What the data plane serves against what exists: routes served that are gone, and live ones not served. */
export function compareServed(
  served: readonly string[],
  live: readonly string[],
): { stale: string[]; missing: string[] } {
  const s = new Set(served);
  const l = new Set(live);
  return { stale: served.filter((k) => !l.has(k)), missing: live.filter((k) => !s.has(k)) };
}
