// The envoy-configmap sink: the snapshot as files in one ConfigMap that the
// Envoy Deployment mounts and watches. Written with optimistic concurrency
// (replace carries the resourceVersion read; a conflict re-reads and tries
// again), skipped when the version annotation already matches, and refused
// whole when it would not fit: a ConfigMap holds at most 1 MiB of data, and a
// route table cut short would send traffic to the wrong place.
//
// The ConfigMap also records when the inputs of its snapshot were read (one
// resourceVersion per LIST), and a snapshot read before that is refused: with
// several server replicas, or a reconcile that stalled, an older snapshot could
// otherwise land after a newer one, and bring back a route whose finalizer the
// newer one had released. The check and the write are one compare-and-swap.

import type { V1ConfigMap } from "@kubernetes/client-node";
import { GROUP } from "../api/types.js";
import type { KubeClient } from "../kube/client.js";
import { errorMessage, isConflict, isNotFound } from "../kube/errors.js";
import type { Snapshot } from "../translate/snapshot.js";
import {
  isAbort,
  type DataPlane,
  type DataPlaneObject,
  type ProgramOptions,
  type ProgramResult,
  type RouteProgramming,
  type RouteStanding,
} from "./dataplane.js";
import { envoyFiles, type BootstrapOptions } from "../translate/envoy-files.js";
import { formatReadRevision, judgeRevision, parseReadRevision, sameRevision } from "./read-revision.js";

export const VERSION_ANNOTATION = `${GROUP}/snapshot-version`;
/** When the inputs of the snapshot in the ConfigMap were read: `routes=…,services=…,endpointslices=…`. */
export const READ_REVISION_ANNOTATION = `${GROUP}/snapshot-read-revision`;
export const DEFAULT_CONFIGMAP_NAME = "edge-envoy-xds";
/** The apiserver's limit on a ConfigMap's data (keys and values, in bytes). */
export const CONFIGMAP_MAX_BYTES = 1024 * 1024;
/** Per request: a hung apiserver is a PushFailed that the reconcile retries, not a hung push. */
const TIMEOUT_MS = 15_000;

export interface EnvoyConfigMapOptions {
  readonly namespace: string;
  readonly name?: string;
  readonly bootstrap?: BootstrapOptions;
  /** Tries before a run of write conflicts is reported as PushFailed; default 8. */
  readonly maxAttempts?: number;
  /** Runs between the read and the write of each attempt; tests use it to write concurrently. */
  readonly beforeWrite?: (attempt: number) => Promise<void>;
}

/** Bytes the apiserver counts against the limit: every key and value of data. */
export function configMapDataSize(data: Readonly<Record<string, string>>): number {
  let size = 0;
  for (const [key, value] of Object.entries(data)) size += Buffer.byteLength(key) + Buffer.byteLength(value);
  return size;
}

/** What a TLS route hears from this sink: its HTTPS hosts are served by no Envoy. */
export const NO_TLS_MESSAGE =
  "the envoy-configmap sink serves no TLS (a private key is never written into a ConfigMap): this route's HTTPS hosts are not served; use the xds sink";

/** The routes of a snapshot that serve a host over HTTPS, which this sink leaves out (envoy-files.ts). */
function tlsRouteKeys(snapshot: Snapshot): ReadonlySet<string> {
  return new Set(snapshot.outcomes.filter((o) => (o.tls?.served.length ?? 0) > 0).map((o) => o.key));
}

export class EnvoyConfigMapDataPlane implements DataPlane {
  readonly kind = "envoy-configmap";
  readonly name: string;
  /** The last snapshot handed over and its TLS routes: standing() says they are not served. */
  private lastTls: { readonly version: string; readonly keys: ReadonlySet<string> } | undefined;
  readonly object: DataPlaneObject;
  private readonly collection: string;
  private readonly path: string;

  constructor(
    private readonly kube: KubeClient,
    private readonly opts: EnvoyConfigMapOptions,
  ) {
    this.name = opts.name ?? DEFAULT_CONFIGMAP_NAME;
    this.collection = `/api/v1/namespaces/${encodeURIComponent(opts.namespace)}/configmaps`;
    this.path = `${this.collection}/${encodeURIComponent(this.name)}`;
    this.object = { apiVersion: "v1", kind: "ConfigMap", namespace: opts.namespace, name: this.name };
  }

  private async read(signal?: AbortSignal): Promise<V1ConfigMap | undefined> {
    try {
      return await this.kube.json<V1ConfigMap>("GET", this.path, { timeoutMs: TIMEOUT_MS, signal });
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async current(signal?: AbortSignal): Promise<string | undefined> {
    return (await this.read(signal))?.metadata?.annotations?.[VERSION_ANNOTATION];
  }

  private get where(): string {
    return `ConfigMap ${this.opts.namespace}/${this.name}`;
  }

  /** Undefined without TLS routes: the push's verdict speaks for every route. */
  standing(version: string): RouteStanding | undefined {
    const tls = this.lastTls;
    if (tls === undefined || tls.version !== version || tls.keys.size === 0) return undefined;
    const served: RouteProgramming = { ok: true };
    // Rejected, not NoDataPlane: nothing will come to serve it, so no reconcile waits on it.
    const unserved: RouteProgramming = { ok: false, reason: "Rejected", message: NO_TLS_MESSAGE };
    return { live: (key) => (tls.keys.has(key) ? unserved : served), deleted: () => served };
  }

  async program(snapshot: Snapshot, opts: ProgramOptions = {}): Promise<ProgramResult> {
    const { version } = snapshot;
    this.lastTls = { version, keys: tlsRouteKeys(snapshot) };
    const { where } = this;
    const { signal } = opts;
    const data = envoyFiles(snapshot, this.opts.bootstrap);
    const size = configMapDataSize(data);
    if (size > CONFIGMAP_MAX_BYTES) {
      return {
        ok: false,
        version,
        reason: "SnapshotTooLarge",
        // The same words for every snapshot too large: the size is in the detail.
        message: `the snapshot of all routes is larger than the ${CONFIGMAP_MAX_BYTES} bytes a ConfigMap holds (${where}); the data plane keeps serving its last snapshot, and the sizes are in that ConfigMap's events`,
        detail: `snapshot ${version} needs ${size} bytes in ${where}, over the ${CONFIGMAP_MAX_BYTES}-byte limit of a ConfigMap; nothing was written`,
      };
    }
    const attempts = this.opts.maxAttempts ?? 8;
    const failed = (detail: string): ProgramResult => ({
      ok: false,
      version,
      reason: "PushFailed",
      message: `the operator could not write ${where}; the data plane keeps serving its last snapshot, and the cause is in that ConfigMap's events`,
      detail,
    });
    try {
      for (let attempt = 1; attempt <= attempts; attempt++) {
        const live = await this.read(signal);
        const annotations = live?.metadata?.annotations;
        const same = annotations?.[VERSION_ANNOTATION] === version;
        const held = parseReadRevision(annotations?.[READ_REVISION_ANNOTATION]);
        const verdict = judgeRevision(opts.read, held, same);
        if (!verdict.ok) return { ok: false, version, reason: "Superseded", message: verdict.message };
        if (same) {
          const record = verdict.record;
          if (!opts.fence || record === undefined || (held !== undefined && sameRevision(record, held)))
            return { ok: true, version, pushed: false };
        }
        await this.opts.beforeWrite?.(attempt);
        signal?.throwIfAborted();
        try {
          if (same && live !== undefined && verdict.record !== undefined) {
            // A fence: the same files, a later read recorded, replaced under the
            // resourceVersion read above (update, as the chart's Role grants).
            const fenced: V1ConfigMap = {
              ...live,
              metadata: {
                ...live.metadata,
                annotations: {
                  ...annotations,
                  [READ_REVISION_ANNOTATION]: formatReadRevision(verdict.record),
                },
              },
            };
            await this.kube.json("PUT", this.path, { body: fenced, timeoutMs: TIMEOUT_MS, signal });
            return { ok: true, version, pushed: false };
          }
          const recorded: Record<string, string> = { ...annotations, [VERSION_ANNOTATION]: version };
          if (verdict.record !== undefined)
            recorded[READ_REVISION_ANNOTATION] = formatReadRevision(verdict.record);
          else delete recorded[READ_REVISION_ANNOTATION];
          const body: V1ConfigMap = {
            apiVersion: "v1",
            kind: "ConfigMap",
            metadata: {
              name: this.name,
              namespace: this.opts.namespace,
              labels: { ...live?.metadata?.labels, "app.kubernetes.io/managed-by": "edge-operator" },
              annotations: recorded,
              ...(live?.metadata?.resourceVersion ? { resourceVersion: live.metadata.resourceVersion } : {}),
            },
            data,
          };
          // Create when absent, else replace under the resourceVersion read above.
          if (live === undefined)
            await this.kube.json("POST", this.collection, { body, timeoutMs: TIMEOUT_MS, signal });
          else await this.kube.json("PUT", this.path, { body, timeoutMs: TIMEOUT_MS, signal });
          return { ok: true, version, pushed: true };
        } catch (err) {
          // 409: someone wrote (or created) it since we read it. Read again and decide again.
          if (!isConflict(err)) throw err;
        }
      }
      return failed(`${where} kept changing under us: ${attempts} write conflicts in a row`);
    } catch (err) {
      if (isAbort(err, signal)) throw err;
      return failed(`writing ${where}: ${errorMessage(err)}`);
    }
  }
}
