// Where a snapshot goes. One small interface with several sinks (memory for
// tests and the demo, a ConfigMap that Envoy watches, later xDS over gRPC).
// Expected failures are answers, not exceptions: the reconcile turns them into
// `Programmed=False` with the reason and message given here.

import type { Snapshot } from "../envoy/snapshot.js";

// Sinks word their failures with the apiserver's own message, as every caller does.
export { errorMessage } from "../kube/errors.js";

export type ProgramFailureReason = "PushFailed" | "SnapshotTooLarge";

export type ProgramResult =
  /** `pushed: false` when the data plane already held this version: nothing was written. */
  | { readonly ok: true; readonly version: string; readonly pushed: boolean }
  | {
      readonly ok: false;
      readonly version: string;
      readonly reason: ProgramFailureReason;
      readonly message: string;
    };

export interface DataPlane {
  /** For logs and metrics: `memory`, `envoy-configmap`. */
  readonly kind: string;
  /** Makes the data plane serve this snapshot, unless it already does. Never rejects. */
  program(snapshot: Snapshot): Promise<ProgramResult>;
  /**
   * The version the data plane serves now, read from the data plane itself so
   * that it survives a restart of the operator; undefined when nothing was pushed
   * yet. Rejects when the data plane cannot be reached.
   */
  current(): Promise<string | undefined>;
}
