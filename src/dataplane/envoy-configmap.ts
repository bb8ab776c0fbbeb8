// The envoy-configmap sink: the snapshot as files in one ConfigMap that the
// Envoy Deployment mounts and watches. Written with optimistic concurrency
// (replace carries the resourceVersion read; a conflict re-reads and tries
// again), skipped when the version annotation already matches, and refused
// whole when it would not fit: a ConfigMap holds at most 1 MiB of data, and a
// route table cut short would send traffic to the wrong place.

import type { V1ConfigMap } from "@kubernetes/client-node";
import { GROUP } from "../api/types.js";
import type { KubeClient } from "../kube/client.js";
import { errorMessage, isConflict, isNotFound } from "../kube/errors.js";
import type { Snapshot } from "../envoy/snapshot.js";
import type { DataPlane, ProgramResult } from "./dataplane.js";
import { envoyFiles, type BootstrapOptions } from "../envoy/envoy-files.js";

export const VERSION_ANNOTATION = `${GROUP}/snapshot-version`;
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

export class EnvoyConfigMapDataPlane implements DataPlane {
  readonly kind = "envoy-configmap";
  readonly name: string;
  private readonly collection: string;
  private readonly path: string;

  constructor(
    private readonly kube: KubeClient,
    private readonly opts: EnvoyConfigMapOptions,
  ) {
    this.name = opts.name ?? DEFAULT_CONFIGMAP_NAME;
    this.collection = `/api/v1/namespaces/${encodeURIComponent(opts.namespace)}/configmaps`;
    this.path = `${this.collection}/${encodeURIComponent(this.name)}`;
  }

  private async read(): Promise<V1ConfigMap | undefined> {
    try {
      return await this.kube.json<V1ConfigMap>("GET", this.path, { timeoutMs: TIMEOUT_MS });
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async current(): Promise<string | undefined> {
    return (await this.read())?.metadata?.annotations?.[VERSION_ANNOTATION];
  }

  async program(snapshot: Snapshot): Promise<ProgramResult> {
    const { version } = snapshot;
    const where = `ConfigMap ${this.opts.namespace}/${this.name}`;
    const data = envoyFiles(snapshot, this.opts.bootstrap);
    const size = configMapDataSize(data);
    if (size > CONFIGMAP_MAX_BYTES) {
      const message = `snapshot ${version} needs ${size} bytes in ${where}, over the ${CONFIGMAP_MAX_BYTES}-byte limit of a ConfigMap; nothing was written`;
      return { ok: false, version, reason: "SnapshotTooLarge", message };
    }
    const attempts = this.opts.maxAttempts ?? 8;
    try {
      for (let attempt = 1; attempt <= attempts; attempt++) {
        const live = await this.read();
        if (live?.metadata?.annotations?.[VERSION_ANNOTATION] === version)
          return { ok: true, version, pushed: false };
        await this.opts.beforeWrite?.(attempt);
        const body: V1ConfigMap = {
          apiVersion: "v1",
          kind: "ConfigMap",
          metadata: {
            name: this.name,
            namespace: this.opts.namespace,
            labels: { ...live?.metadata?.labels, "app.kubernetes.io/managed-by": "edge-operator" },
            annotations: { ...live?.metadata?.annotations, [VERSION_ANNOTATION]: version },
            ...(live?.metadata?.resourceVersion ? { resourceVersion: live.metadata.resourceVersion } : {}),
          },
          data,
        };
        try {
          // Create when absent, else replace under the resourceVersion read above.
          if (live === undefined)
            await this.kube.json("POST", this.collection, { body, timeoutMs: TIMEOUT_MS });
          else await this.kube.json("PUT", this.path, { body, timeoutMs: TIMEOUT_MS });
          return { ok: true, version, pushed: true };
        } catch (err) {
          // 409: someone wrote (or created) it since we read it. Read again and decide again.
          if (!isConflict(err)) throw err;
        }
      }
      return {
        ok: false,
        version,
        reason: "PushFailed",
        message: `${where} kept changing under us: ${attempts} write conflicts in a row`,
      };
    } catch (err) {
      return { ok: false, version, reason: "PushFailed", message: `writing ${where}: ${errorMessage(err)}` };
    }
  }
}
