// Reading and patching routes without the conversion webhook: in the version
// they are stored in. The break-glass and the uninstall hook must work while
// the server is down, and a read in any other version makes the apiserver
// call /convert (failurePolicy is not a choice for conversion: it fails).

import { CRD_NAME, VERSIONS, isVersion, type EdgeRouteV2, type Version } from "../api/types.js";
import type { KubeClient } from "../kube/client.js";
import { errorMessage, isNotFound, kubeStatus } from "../kube/errors.js";
import { listAll } from "../kube/pager.js";
import { edgeRoutePath, edgeRoutesPath } from "../kube/paths.js";

interface CrdVersions {
  spec?: { versions?: { name: string; served?: boolean; storage?: boolean }[] };
  status?: { storedVersions?: string[] };
}

/**
 * The versions to read routes in, best first. When status.storedVersions
 * has one version, every object is stored in it: reading it needs no
 * conversion. Else the storage version (objects written since) first. The
 * rest follow, for a caller that may not read the CRD.
 */
export async function readVersions(kube: KubeClient): Promise<Version[]> {
  let crd: CrdVersions;
  try {
    crd = await kube.json<CrdVersions>(
      "GET",
      `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${CRD_NAME}`,
      { timeoutMs: 15_000 },
    );
  } catch (e) {
    // A ServiceAccount that may not read the CRD still gets every version to try, stored-first by default.
    if (kubeStatus(e) !== 403) throw e;
    return ["v1", "v2"];
  }
  const versions = crd.spec?.versions ?? [];
  const served = new Set(versions.filter((v) => v.served).map((v) => v.name));
  const order: string[] = [];
  const stored = crd.status?.storedVersions ?? [];
  if (stored.length === 1 && stored[0]) order.push(stored[0]);
  const storage = versions.find((v) => v.storage)?.name;
  if (storage) order.push(storage);
  return [...new Set([...order, ...VERSIONS])].filter((v): v is Version => isVersion(v) && served.has(v));
}

/**
 * Every route, listed in the first of `versions` that answers (a list that
 * needs a conversion the server cannot give fails whole); with the version
 * used. Only metadata is relied on: the spec is in that version's shape.
 */
export async function listRoutesStored(
  kube: KubeClient,
  versions: readonly Version[],
): Promise<{ version: Version; routes: EdgeRouteV2[] }> {
  const failures: string[] = [];
  for (const version of versions) {
    try {
      const { items } = await listAll<EdgeRouteV2>(kube, edgeRoutesPath(version));
      return { version, routes: items };
    } catch (e) {
      failures.push(`${version}: ${errorMessage(e)}`);
    }
  }
  throw new Error(`cannot list EdgeRoutes in any version (${failures.join("; ")})`);
}

/** One route in the first of `versions` that answers; undefined when it is gone. */
export async function getRouteStored(
  kube: KubeClient,
  versions: readonly Version[],
  namespace: string,
  name: string,
): Promise<{ version: Version; route: EdgeRouteV2 } | undefined> {
  let last: unknown = new Error(`cannot read EdgeRoute ${namespace}/${name}: no version to read it in`);
  for (const version of versions) {
    try {
      const route = await kube.json<EdgeRouteV2>("GET", edgeRoutePath(namespace, name, version), {
        timeoutMs: 15_000,
      });
      return { version, route };
    } catch (e) {
      if (isNotFound(e)) return undefined;
      last = e;
    }
  }
  throw last;
}
