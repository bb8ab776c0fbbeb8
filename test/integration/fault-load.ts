// The load a fault test runs its faults under: routes created and deleted in
// chunks by kubectl, each chunk tried again (bounded) when the apiserver is
// down or refusing, as a user's or a CI job's retry would.

import { stringify as toYaml } from "yaml";
import type { ControlPlane } from "../../tools/testenv/control-plane.js";
import { sleep } from "../../tools/testenv/process.js";
import { v2Route } from "./routes.js";

const CHUNK = 50;
const TRIES = 40;

async function retried(cp: ControlPlane, args: string[], input?: string): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    const r = await cp.kubectl(args, input === undefined ? {} : { input });
    if (r.code === 0) return attempt;
    if (attempt >= TRIES) throw new Error(`kubectl ${args.join(" ")} failed ${TRIES} times: ${r.stderr}`);
    await sleep(500);
  }
}

export const routeName = (prefix: string, i: number): string => `${prefix}-${i}`;

/** Creates `count` routes `prefix-0..` in `namespace`, each its own path, in chunks; `onChunk` runs after each. */
export async function createRoutes(
  cp: ControlPlane,
  namespace: string,
  prefix: string,
  count: number,
  onChunk: (created: number) => Promise<void> | void = () => undefined,
): Promise<{ retries: number }> {
  let retries = 0;
  for (let from = 0; from < count; from += CHUNK) {
    const docs: string[] = [];
    for (let i = from; i < Math.min(count, from + CHUNK); i++)
      // Host and path unique across namespaces too: a clash would make one Conflicted, not served.
      docs.push(
        toYaml(
          v2Route(routeName(prefix, i), {
            namespace,
            host: `${routeName(prefix, i)}.${namespace}.example.com`,
            service: "checkout",
            path: `/${prefix}/${i}`,
          }),
        ),
      );
    retries += (await retried(cp, ["apply", "-f", "-"], docs.join("---\n"))) - 1;
    await onChunk(Math.min(count, from + CHUNK));
  }
  return { retries };
}

/** Deletes the named routes without waiting for their finalizers, in chunks. */
export async function deleteRoutes(
  cp: ControlPlane,
  namespace: string,
  names: readonly string[],
): Promise<void> {
  for (let from = 0; from < names.length; from += CHUNK) {
    await retried(cp, [
      "delete",
      "edgeroutes.v2.net.10xdev.io",
      "-n",
      namespace,
      "--wait=false",
      "--ignore-not-found",
      ...names.slice(from, from + CHUNK),
    ]);
  }
}
