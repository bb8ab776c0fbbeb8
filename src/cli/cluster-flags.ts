// --kubeconfig and --context, as kubectl takes them, for every command that
// talks to a cluster: one resolution (kube/load-kubeconfig.ts) and one kind
// of failure. Reading the kubeconfig is local, so whatever goes wrong there
// is the configuration's fault: a usage error, exit 2.

import type { ClusterAccess } from "../kube/kubeconfig.js";
import { resolveClusterAccess } from "../kube/load-kubeconfig.js";
import { UsageError } from "./command.js";

export const clusterFlagOptions = {
  kubeconfig: { type: "string" },
  context: { type: "string" },
} as const;

/** The two flags' lines of a --help whose descriptions start at column `column`. */
export function clusterFlagsHelp(column = 28): string {
  const pad = " ".repeat(column);
  const flag = (name: string) => `  ${name}`.padEnd(column);
  return [
    `${flag("--kubeconfig FILE")}the kubeconfig file (default: $KUBECONFIG, a list`,
    `${pad}merged as kubectl merges it, else ~/.kube/config,`,
    `${pad}else the in-cluster service account)`,
    `${flag("--context NAME")}the kubeconfig context to use (default: its`,
    `${pad}current-context)`,
  ].join("\n");
}

export interface ClusterFlags {
  readonly kubeconfig?: string | undefined;
  readonly context?: string | undefined;
}

/** The cluster these flags lead to, or undefined when there is none to find. */
export function optionalClusterAccess(
  flags: ClusterFlags,
  env: NodeJS.ProcessEnv = process.env,
): ClusterAccess | undefined {
  try {
    return resolveClusterAccess({
      env,
      ...(flags.kubeconfig ? { kubeconfig: flags.kubeconfig } : {}),
      ...(flags.context ? { context: flags.context } : {}),
    });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

/** The cluster these flags lead to; a usage error saying where it looked when there is none. */
export function requiredClusterAccess(
  flags: ClusterFlags,
  env: NodeJS.ProcessEnv = process.env,
): ClusterAccess {
  const access = optionalClusterAccess(flags, env);
  if (!access)
    throw new UsageError(
      "no cluster access: pass --kubeconfig, set KUBECONFIG, write ~/.kube/config, or run in a pod",
    );
  return access;
}
