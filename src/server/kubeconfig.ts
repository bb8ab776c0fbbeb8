import { KubeConfig } from "@kubernetes/client-node";

/**
 * Cluster access: an explicit --kubeconfig, else $KUBECONFIG, else the
 * in-cluster service account. Undefined when none is there: the webhooks work
 * without a cluster.
 */
export function loadKubeConfig(path?: string): KubeConfig | undefined {
  const kc = new KubeConfig();
  if (path) {
    kc.loadFromFile(path);
    return kc;
  }
  if (process.env.KUBECONFIG) {
    kc.loadFromDefault();
    return kc;
  }
  if (process.env.KUBERNETES_SERVICE_HOST) {
    kc.loadFromCluster();
    return kc;
  }
  return undefined;
}
