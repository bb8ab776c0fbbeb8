// The memory sink: keeps the last snapshot and counts pushes. Tests and the
// demo read it through a small admin surface that the server mounts only when
// this sink is chosen (`GET /debug/dataplane`, `POST /debug/dataplane/fail-next`).

import type { Snapshot } from "../translate/snapshot.js";
import type { DataPlane, ProgramOptions, ProgramResult } from "./dataplane.js";
import { formatReadRevision, judgeRevision, type ReadRevision } from "./read-revision.js";

export interface MemoryDataPlaneState {
  /** Successful pushes of a new version. */
  readonly pushes: number;
  /** Pushes refused by failNext. */
  readonly failures: number;
  /** Pushes refused because the data plane held a snapshot read later. */
  readonly superseded: number;
  /** Pushes still to be refused. */
  readonly failNext: number;
  readonly version: string | undefined;
  /** When the inputs of what the data plane holds were read (`routes=…,services=…,endpointslices=…`). */
  readonly readRevision: string | undefined;
  /** Keys (`namespace/name`) of the routes the data plane serves, sorted. */
  readonly routes: readonly string[];
  /** Cluster name → its endpoints as `ip:port`, sorted: what Envoy would send traffic to. */
  readonly endpoints: Readonly<Record<string, readonly string[]>>;
}

export const MEMORY_FAILURE_MESSAGE =
  "the memory data plane refuses pushes (POST /debug/dataplane/fail-next); it keeps serving its last snapshot";

export class MemoryDataPlane implements DataPlane {
  readonly kind = "memory";
  private last: Snapshot | undefined;
  private held: ReadRevision | undefined;
  private pushes = 0;
  private failures = 0;
  private superseded = 0;
  private failing = 0;

  // No await between the check and the write: one process, so the check and
  // the write are one step.
  async program(snapshot: Snapshot, opts: ProgramOptions = {}): Promise<ProgramResult> {
    opts.signal?.throwIfAborted();
    const { version } = snapshot;
    const same = this.last?.version === version;
    const verdict = judgeRevision(opts.read, this.held, same);
    if (!verdict.ok) {
      this.superseded++;
      return { ok: false, version, reason: "Superseded", message: verdict.message };
    }
    if (same) {
      if (opts.fence) this.held = verdict.record;
      return { ok: true, version, pushed: false };
    }
    if (this.failing > 0) {
      this.failing--;
      this.failures++;
      return {
        ok: false,
        version,
        reason: "PushFailed",
        message: MEMORY_FAILURE_MESSAGE,
        detail: `the memory data plane was told to fail this push of snapshot ${version} (${this.failing} more to fail)`,
      };
    }
    this.last = snapshot;
    this.held = verdict.record;
    this.pushes++;
    return { ok: true, version, pushed: true };
  }

  async current(): Promise<string | undefined> {
    return this.last?.version;
  }

  /** Refuse the next `n` pushes (of a new version). */
  failNext(n = 1): void {
    if (!Number.isInteger(n) || n < 0)
      throw new RangeError(`failNext takes a whole number of pushes, not ${n}`);
    this.failing = n;
  }

  snapshot(): Snapshot | undefined {
    return this.last;
  }

  state(): MemoryDataPlaneState {
    const endpoints: Record<string, string[]> = {};
    for (const cla of this.last?.resources.clusterLoadAssignments ?? []) {
      endpoints[cla.cluster_name] = (cla.endpoints?.[0]?.lb_endpoints ?? []).map(
        (e) => `${e.endpoint.address.socket_address.address}:${e.endpoint.address.socket_address.port_value}`,
      );
    }
    return {
      pushes: this.pushes,
      failures: this.failures,
      superseded: this.superseded,
      failNext: this.failing,
      version: this.last?.version,
      readRevision: this.held === undefined ? undefined : formatReadRevision(this.held),
      routes: (this.last?.outcomes ?? []).filter((o) => o.accepted).map((o) => o.key),
      endpoints,
    };
  }
}
