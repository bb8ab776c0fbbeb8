import path from "node:path";
import { inClusterAccess, loadKubeconfigFiles, type ClusterAccess } from "./kubeconfig.js";

/**
 * Cluster access: an explicit --kubeconfig, else $KUBECONFIG (a list, merged as
 * kubectl merges it), else the in-cluster service account. Undefined when none
 * is there: the webhooks work without a cluster.
 */
export function loadKubeConfig(file?: string): ClusterAccess | undefined {
  if (file) return loadKubeconfigFiles([file]);
  const list = (process.env.KUBECONFIG ?? "").split(path.delimiter).filter((f) => f !== "");
  if (list.length > 0) return loadKubeconfigFiles(list, { skipMissing: true });
  if (process.env.KUBERNETES_SERVICE_HOST) return inClusterAccess();
  return undefined;
}
