// What `edge-operator status` reports, made from what it read: the routes'
// conditions, and each server replica's xDS clients from its ACK record.
// Pure: the reads are in status.ts, the printing in status-table.ts.

import type { Condition } from "../api/types.js";
import { isLive, type StoredRecord } from "../dataplane/xds/ack-records.js";

/** A route as listed, in either version: only what the report shows is read. */
export interface ListedRoute {
  readonly metadata: {
    readonly name?: string;
    readonly namespace?: string;
    readonly generation?: number;
    readonly creationTimestamp?: string;
  };
  readonly spec?: { readonly hostnames?: readonly string[]; readonly host?: string };
  readonly status?: { readonly conditions?: readonly Condition[] };
}

/** One condition as the report shows it; absent when the route does not have it. */
export interface ConditionCell {
  readonly status: Condition["status"];
  readonly reason: string;
  readonly message: string;
  /** The condition speaks of an older generation than the route's: the operator has not caught up. */
  readonly outdated: boolean;
}

export interface RouteRow {
  readonly namespace: string;
  readonly name: string;
  readonly hosts: readonly string[];
  readonly accepted?: ConditionCell;
  readonly programmed?: ConditionCell;
  /** Only on routes with spec.tls. */
  readonly resolvedRefs?: ConditionCell;
  readonly createdAt?: string;
}

/**
 * Where one client stands on the version its replica serves: current (ACKed
 * it), stale (holds an older one), nacked (refused it), pending (holds none
 * yet), unreachable (its connection went silent).
 */
export type ClientState = "current" | "stale" | "nacked" | "pending" | "unreachable";

export interface ClientRow {
  readonly id: string;
  readonly state: ClientState;
  readonly acked?: string;
  readonly nack?: { readonly version: string; readonly message: string };
  readonly unreachableSince?: string;
}

export interface ReplicaRow {
  /** The Lease that holds the record, `namespace/name`. */
  readonly lease: string;
  readonly replica: string;
  readonly served?: string;
  readonly renewedAt: string;
  /** False once the replica stopped renewing (killed): the servers no longer count its clients. */
  readonly live: boolean;
  readonly clients: readonly ClientRow[];
}

export interface DataPlaneReport {
  readonly replicas: readonly ReplicaRow[];
  /** The versions the live replicas serve: more than one while a push is on its way, or one replica is behind. */
  readonly servedVersions: readonly string[];
  /** Why there are no replicas to show, when that is known (not allowed to read, none written). */
  readonly note?: string;
}

export interface StatusReport {
  readonly routes: readonly RouteRow[];
  readonly dataPlane: DataPlaneReport;
}

function cell(route: ListedRoute, type: string): ConditionCell | undefined {
  const c = route.status?.conditions?.find((x) => x.type === type);
  if (!c) return undefined;
  const generation = route.metadata.generation;
  return {
    status: c.status,
    reason: c.reason,
    message: c.message,
    outdated:
      generation !== undefined && c.observedGeneration !== undefined && c.observedGeneration < generation,
  };
}

const byKey = (a: { namespace: string; name: string }, b: { namespace: string; name: string }): number =>
  a.namespace.localeCompare(b.namespace) || a.name.localeCompare(b.name);

export function routeRows(routes: readonly ListedRoute[]): RouteRow[] {
  return routes
    .map((r): RouteRow => {
      const accepted = cell(r, "Accepted");
      const programmed = cell(r, "Programmed");
      const resolvedRefs = cell(r, "ResolvedRefs");
      const hosts = r.spec?.hostnames ?? (r.spec?.host ? [r.spec.host] : []);
      return {
        namespace: r.metadata.namespace ?? "",
        name: r.metadata.name ?? "",
        hosts,
        ...(accepted ? { accepted } : {}),
        ...(programmed ? { programmed } : {}),
        ...(resolvedRefs ? { resolvedRefs } : {}),
        ...(r.metadata.creationTimestamp ? { createdAt: r.metadata.creationTimestamp } : {}),
      };
    })
    .sort(byKey);
}

function clientRow(c: StoredRecord["clients"][number], served: string | undefined): ClientRow {
  const base = {
    id: c.id,
    ...(c.acked ? { acked: c.acked } : {}),
    ...(c.nack ? { nack: c.nack } : {}),
  };
  if (c.unreachableSince !== undefined)
    return { ...base, state: "unreachable", unreachableSince: new Date(c.unreachableSince).toISOString() };
  if (served !== undefined && c.nack?.version === served) return { ...base, state: "nacked" };
  if (c.acked === undefined) return { ...base, state: "pending" };
  return { ...base, state: served === undefined || c.acked === served ? "current" : "stale" };
}

/** One row per replica's record, clients by id; `lease` names the Lease each came from. */
export function dataPlaneReport(
  records: readonly { readonly lease: string; readonly record: StoredRecord }[],
  nowMs: number,
  note?: string,
): DataPlaneReport {
  const replicas = records
    .map(({ lease, record }): ReplicaRow => ({
      lease,
      replica: record.replica,
      ...(record.served ? { served: record.served } : {}),
      renewedAt: new Date(record.renewedAtMs).toISOString(),
      live: isLive(record, nowMs),
      clients: [...record.clients]
        .sort((a, b) => a.id.localeCompare(b.id))
        .map((c) => clientRow(c, record.served)),
    }))
    .sort((a, b) => a.lease.localeCompare(b.lease));
  const servedVersions = [
    ...new Set(replicas.filter((r) => r.live && r.served !== undefined).map((r) => r.served ?? "")),
  ].sort();
  return { replicas, servedVersions, ...(note ? { note } : {}) };
}
