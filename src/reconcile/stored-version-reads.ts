// Reading and patching routes without the conversion webhook: in the version
// they are stored in. The break-glass and the uninstall hook must work while
// the server is down, and a read in any other version makes the apiserver
// call /convert (failurePolicy is not a choice for conversion: it fails).

import { CRD_NAME, GROUP, PLURAL, VERSIONS, type EdgeRouteV2 } from "../api/types.js";
import { kubeStatus, type KubeClient } from "../kube/client.js";

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
export async function readVersions(kube: KubeClient): Promise<string[]> {
  const order: string[] = [];
  try {
    const crd = await kube.json<CrdVersions>(
      "GET",
      `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${CRD_NAME}`,
      { timeoutMs: 15_000 },
    );
    const versions = crd.spec?.versions ?? [];
    const served = new Set(versions.filter((v) => v.served).map((v) => v.name));
    const stored = crd.status?.storedVersions ?? [];
    if (stored.length === 1 && stored[0]) order.push(stored[0]);
    const storage = versions.find((v) => v.storage)?.name;
    if (storage) order.push(storage);
    return [...new Set([...order, ...VERSIONS])].filter((v) => served.has(v));
  } catch (e) {
    // A ServiceAccount that may not read the CRD still gets every version to try.
    if (kubeStatus(e) !== 403) throw e;
    return ["v1", "v2"];
  }
}

export function routePathIn(version: string, namespace: string, name: string): string {
  return `/apis/${GROUP}/${version}/namespaces/${encodeURIComponent(namespace)}/${PLURAL}/${encodeURIComponent(name)}`;
}

interface RouteList {
  items: EdgeRouteV2[];
  metadata?: { continue?: string };
}

/**
 * Every route, listed in the first of `versions` that answers (a list that
 * needs a conversion the server cannot give fails whole); with the version
 * used. Only metadata is relied on: the spec is in that version's shape.
 */
export async function listRoutesStored(
  kube: KubeClient,
  versions: readonly string[],
): Promise<{ version: string; routes: EdgeRouteV2[] }> {
  const failures: string[] = [];
  for (const version of versions) {
    try {
      const routes: EdgeRouteV2[] = [];
      let cont: string | undefined;
      do {
        const page = await kube.json<RouteList>("GET", `/apis/${GROUP}/${version}/${PLURAL}`, {
          query: { limit: 500, continue: cont },
          timeoutMs: 60_000,
        });
        routes.push(...page.items);
        cont = page.metadata?.continue || undefined;
      } while (cont);
      return { version, routes };
    } catch (e) {
      failures.push(`${version}: ${(e as Error).message.split("\n")[0]}`);
    }
  }
  throw new Error(`cannot list EdgeRoutes in any version (${failures.join("; ")})`);
}

/** One route in the first of `versions` that answers; undefined when it is gone. */
export async function getRouteStored(
  kube: KubeClient,
  versions: readonly string[],
  namespace: string,
  name: string,
): Promise<{ version: string; route: EdgeRouteV2 } | undefined> {
  let last: unknown;
  for (const version of versions) {
    try {
      const route = await kube.json<EdgeRouteV2>("GET", routePathIn(version, namespace, name), {
        timeoutMs: 15_000,
      });
      return { version, route };
    } catch (e) {
      if (kubeStatus(e) === 404) return undefined;
      last = e;
    }
  }
  throw last instanceof Error ? last : new Error(`cannot read EdgeRoute ${namespace}/${name}`);
}
