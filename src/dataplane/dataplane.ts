// Where a snapshot goes. One small interface with several sinks (memory for
// tests and the demo, a ConfigMap that Envoy watches, xDS over gRPC).
// Expected failures are answers, not exceptions: the reconcile turns them into
// `Programmed=False` with the reason and message given here.

import type { Snapshot } from "../translate/snapshot.js";
import type { ReadRevision } from "./read-revision.js";

// Sinks word their failures with the apiserver's own message, as every caller does.
export { errorMessage } from "../kube/errors.js";

export type ProgramFailureReason = "PushFailed" | "SnapshotTooLarge" | "Rejected" | "NoDataPlane" | "Pending";

export type ProgramResult =
  /** `pushed: false` when the data plane already held this version: its routes did not change. */
  | { readonly ok: true; readonly version: string; readonly pushed: boolean }
  /** The data plane holds a snapshot read later than this one: nothing was written, and a newer reconcile owns the outcome. */
  | { readonly ok: false; readonly version: string; readonly reason: "Superseded"; readonly message: string }
  | {
      readonly ok: false;
      readonly version: string;
      readonly reason: ProgramFailureReason;
      /**
       * For every route's Programmed condition: the same words for the same
       * failure, whatever the snapshot, so that a data plane failing retry after
       * retry rewrites no route's status.
       */
      readonly message: string;
      /** No data-plane client holds any version: nothing serves a deleted route either (xds, none connected). */
      readonly unserved?: boolean;
      /** This push's own words (sizes, versions, the apiserver's answer): for the log and one event. */
      readonly detail: string;
    };

/** Where one route stands with the data plane. */
export type RouteProgramming =
  | { readonly ok: true }
  | {
      readonly ok: false;
      readonly reason: ProgramFailureReason;
      readonly message: string;
      /** No client that could serve it holds any version of it. */
      readonly unserved?: boolean;
    };

/** Per route, for a data plane whose clients each take only some routes (xds). */
export interface RouteStanding {
  /** A route the snapshot holds: every client it was sent to holds it. */
  live(key: string): RouteProgramming;
  /** A deleted route, by its host names (none: every host): no client that may have held it still does. */
  deleted(hostnames: readonly string[]): RouteProgramming;
}

export interface ProgramOptions {
  /** When the snapshot's inputs were read: a data plane never takes a snapshot read before the one it holds. */
  readonly read?: ReadRevision;
  /**
   * Record `read` even when the data plane already serves this version. A
   * reconcile asks for it before it releases finalizers: after that, no
   * reconcile that read the routes earlier can push a released route back.
   */
  readonly fence?: boolean;
  /** The caller went away: stop, write nothing more. */
  readonly signal?: AbortSignal;
  /**
   * When the caller needs the verdict (ms since the epoch): a wait for the
   * clients' answers ends then if that is sooner than the sink's own timeout.
   * A deleted route's deprogram timeout is such a time: past it the route
   * says DeprogramStuck, not one more ACK timeout later.
   */
  readonly answerBy?: number;
  /**
   * Judge by this process's own clients alone, not every replica's: a trial
   * push of the culprit search (reconcile/culprit-search.ts) asks whether the
   * client that refused here takes a smaller snapshot.
   */
  readonly local?: boolean;
}

/** The object a data plane's failures are recorded on as events, when it has one. */
export interface DataPlaneObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
}

export interface DataPlane {
  /** For logs and metrics: `memory`, `envoy-configmap`, `xds`. */
  readonly kind: string;
  /**
   * The sink serves its last snapshot to clients that connect later, so it
   * must be told when the set of routes goes empty too (xds).
   */
  readonly keepsServing?: boolean;
  /** Where a push failure's details are recorded as events; absent for the memory sink. */
  readonly object?: DataPlaneObject;
  /** Makes the data plane serve this snapshot, unless it already does or holds a newer read. Never rejects, except when aborted. */
  program(snapshot: Snapshot, opts?: ProgramOptions): Promise<ProgramResult>;
  /**
   * The version the data plane serves now, read from the data plane itself so
   * that it survives a restart of the operator; undefined when nothing was pushed
   * yet. Rejects when the data plane cannot be reached.
   */
  current(signal?: AbortSignal): Promise<string | undefined>;
  /**
   * Where each route stands on `version`, when the data plane serves it and
   * its clients take different routes; undefined: the program() result speaks
   * for every route.
   */
  standing?(version: string): RouteStanding | undefined;
  /**
   * Tells `listener` when where the clients stand changed while no push waits
   * on them: a client connected or left, asked for other names, or answered
   * after its push stopped waiting. Statuses then say something untrue until
   * a snapshot reconcile runs (standing-trigger.ts runs one). Answers the stop.
   */
  onStandingChange?(listener: () => void): () => void;
  /**
   * The words of a client of this process that refused `version`, served now;
   * undefined when none did (or another version is served). Only a refusal
   * seen here can be searched for its cause here: the trials go to these clients.
   */
  refusal?(version: string): string | undefined;
}

/** An abort is not a push failure: it goes up to the caller, who is gone. */
export function isAbort(err: unknown, signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true || (err instanceof Error && err.name === "AbortError");
}

/** A failed push's own words; undefined when the push did not fail (taken, or superseded). */
export function failureDetail(result: ProgramResult): string | undefined {
  return !result.ok && result.reason !== "Superseded" ? result.detail : undefined;
}
