import { existsSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { inClusterAccess, loadKubeconfigFiles, type ClusterAccess } from "./kubeconfig.js";

export interface KubeconfigLookup {
  /** kubectl's --kubeconfig: this one file, which must exist. */
  readonly kubeconfig?: string;
  /** kubectl's --context. */
  readonly context?: string;
  /** Default: process.env (KUBECONFIG, KUBERNETES_SERVICE_HOST). */
  readonly env?: NodeJS.ProcessEnv;
  /** Where ~/.kube/config is looked up (default: the user's home directory). */
  readonly home?: string;
  /** The in-cluster service account's files (default: where the kubelet mounts them). */
  readonly serviceAccountDir?: string;
}

/** Which kubeconfig files to read, in kubectl's order, and whether they must exist. */
export function kubeconfigFiles(lookup: KubeconfigLookup): { files: string[]; mustExist: boolean } {
  if (lookup.kubeconfig) return { files: [lookup.kubeconfig], mustExist: true };
  const env = lookup.env ?? process.env;
  const list = (env.KUBECONFIG ?? "").split(path.delimiter).filter((f) => f !== "");
  if (list.length > 0) return { files: [...new Set(list)], mustExist: false };
  return { files: [path.join(lookup.home ?? os.homedir(), ".kube", "config")], mustExist: false };
}

/**
 * Cluster access resolved as kubectl resolves it: --kubeconfig; else
 * $KUBECONFIG, a list merged with the first file to name an entry winning and
 * missing files left out; else ~/.kube/config; and when none of those files
 * exists, the in-cluster service account. --context picks a context other
 * than current-context. Undefined when there is none of these: the webhooks
 * work without a cluster. A file that is there but wrong is an error, never
 * passed over.
 */
export function resolveClusterAccess(lookup: KubeconfigLookup = {}): ClusterAccess | undefined {
  const env = lookup.env ?? process.env;
  const { files, mustExist } = kubeconfigFiles(lookup);
  const present = mustExist ? files : files.filter((f) => existsSync(f));
  const context = lookup.context ? { context: lookup.context } : {};
  if (present.length > 0) return loadKubeconfigFiles(present, { skipMissing: !mustExist, ...context });
  if (lookup.context)
    throw new Error(
      `--context ${lookup.context}: no kubeconfig to find it in (looked in ${files.join(", ")})`,
    );
  if (env.KUBERNETES_SERVICE_HOST)
    return inClusterAccess({
      env,
      ...(lookup.serviceAccountDir ? { serviceAccountDir: lookup.serviceAccountDir } : {}),
    });
  // A $KUBECONFIG that names only missing files is a mistake worth naming; a missing ~/.kube/config is not.
  if (env.KUBECONFIG) throw new Error(`${files.join(path.delimiter)}: no kubeconfig file exists`);
  return undefined;
}

/** resolveClusterAccess with an explicit file (or none), for callers that take only --kubeconfig. */
export function loadKubeConfig(
  file?: string,
  lookup: Omit<KubeconfigLookup, "kubeconfig"> = {},
): ClusterAccess | undefined {
  return resolveClusterAccess({ ...lookup, ...(file ? { kubeconfig: file } : {}) });
}
