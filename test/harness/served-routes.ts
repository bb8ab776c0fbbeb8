// What a data plane serves, read from the data plane itself: the route keys
// (`namespace/name`) in the envoy-configmap sink's RDS file, as Envoy reads it.

import type { V1ConfigMap } from "@kubernetes/client-node";
import type { KubeClient } from "../../src/kube/client.js";
import { XDS_FILES } from "../../src/envoy/envoy-resources.js";

/** Envoy route names are `namespace/name/rN/mN`: the route they came from is the first two parts. */
export function configMapRoutes(cm: V1ConfigMap | undefined): string[] {
  const rds = JSON.parse(cm?.data?.[XDS_FILES.rds] ?? "{}") as {
    resources?: { virtual_hosts?: { routes?: { name: string }[] }[] }[];
  };
  const keys = new Set<string>();
  for (const rc of rds.resources ?? [])
    for (const vh of rc.virtual_hosts ?? [])
      for (const r of vh.routes ?? []) keys.add(r.name.split("/").slice(0, 2).join("/"));
  return [...keys].sort();
}

export async function readConfigMap(
  kube: KubeClient,
  namespace: string,
  name: string,
): Promise<V1ConfigMap | undefined> {
  try {
    return await kube.json<V1ConfigMap>(
      "GET",
      `/api/v1/namespaces/${encodeURIComponent(namespace)}/configmaps/${encodeURIComponent(name)}`,
    );
  } catch (e) {
    if ((e as { status?: number }).status === 404) return undefined;
    throw e;
  }
}
