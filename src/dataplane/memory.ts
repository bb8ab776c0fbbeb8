// The memory sink: keeps the last snapshot and counts pushes. Tests and the
// demo read it through a small admin surface that the server mounts only when
// this sink is chosen (`GET /debug/dataplane`, `POST /debug/dataplane/fail-next`).

import type { Snapshot } from "../envoy/snapshot.js";
import type { DataPlane, ProgramResult } from "./dataplane.js";

export interface MemoryDataPlaneState {
  /** Successful pushes of a new version. */
  readonly pushes: number;
  /** Pushes refused by failNext. */
  readonly failures: number;
  /** Pushes still to be refused. */
  readonly failNext: number;
  readonly version: string | undefined;
  /** Keys (`namespace/name`) of the routes the data plane serves, sorted. */
  readonly routes: readonly string[];
  /** Cluster name → its endpoints as `ip:port`, sorted: what Envoy would send traffic to. */
  readonly endpoints: Readonly<Record<string, readonly string[]>>;
}

export class MemoryDataPlane implements DataPlane {
  readonly kind = "memory";
  private last: Snapshot | undefined;
  private pushes = 0;
  private failures = 0;
  private failing = 0;

  async program(snapshot: Snapshot): Promise<ProgramResult> {
    if (this.last?.version === snapshot.version)
      return { ok: true, version: snapshot.version, pushed: false };
    if (this.failing > 0) {
      this.failing--;
      this.failures++;
      return {
        ok: false,
        version: snapshot.version,
        reason: "PushFailed",
        message: "the memory data plane was told to fail this push",
      };
    }
    this.last = snapshot;
    this.pushes++;
    return { ok: true, version: snapshot.version, pushed: true };
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
      failNext: this.failing,
      version: this.last?.version,
      routes: (this.last?.outcomes ?? []).filter((o) => o.accepted).map((o) => o.key),
      endpoints,
    };
  }
}
