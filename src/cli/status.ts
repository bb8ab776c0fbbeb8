import { parseArgs } from "node:util";
import type { Watched } from "../api/object-key.js";
import { CRD_NAME, type Version } from "../api/types.js";
import { ACK_COMPONENT, type StoredRecord } from "../dataplane/xds/ack-records.js";
import { recordFromLease } from "../dataplane/xds/ack-records-lease.js";
import { kubeClient, type KubeClient } from "../kube/client.js";
import { errorMessage, kubeStatus } from "../kube/errors.js";
import { listAll } from "../kube/pager.js";
import { edgeRoutesPath } from "../kube/paths.js";
import { readVersions } from "../reconcile/stored-version-reads.js";
import { UsageError, type Command } from "./command.js";
import { clusterFlagsHelp, clusterFlagOptions, requiredClusterAccess } from "./cluster-flags.js";
import { CLUSTER_ENV, helpFooter } from "./help-footer.js";
import {
  dataPlaneReport,
  routeRows,
  type DataPlaneReport,
  type ListedRoute,
  type StatusReport,
} from "./status-report.js";
import { OUTPUTS, render, type Output } from "./status-table.js";

const help = `Usage: edge-operator status [-n NS | -A] [-o table|json|yaml] [options]

What a person asks first, read from the apiserver with your kubeconfig:
  - the EdgeRoutes and their conditions: Accepted, Programmed and, on routes
    with spec.tls, ResolvedRefs (True, or False/REASON; * when the condition
    is about an older generation of the route);
  - each server replica's xDS clients, from the replica's ACK record Lease:
    the version the replica serves, the version each client ACKed, and its
    state: current, stale (holds an older version), nacked (refused the
    served version; MESSAGE has its words), pending (holds none yet) or
    unreachable. A replica that stopped renewing its record is (expired).
No port-forward: everything is in the apiserver. Reading it needs list on
edgeroutes.net.10xdev.io and on leases.coordination.k8s.io (the records
are Leases labelled app.kubernetes.io/component=${ACK_COMPONENT}).

Options:
  -n, --namespace NS        the routes of this namespace (default: the
                            context's namespace, else default)
  -A, --all-namespaces      the routes of every namespace
  -o, --output FMT          table (default) | json | yaml
  --operator-namespace NS   where the ACK records are (the release's namespace;
                            default: every namespace your access may list)
${clusterFlagsHelp()}
  -h, --help                this text
${helpFooter(CLUSTER_ENV)}`;

export interface StatusArgs {
  readonly namespace?: string;
  readonly allNamespaces: boolean;
  readonly output: Output;
  readonly operatorNamespace?: string;
  readonly kubeconfig?: string;
  readonly context?: string;
}

const isOutput = (v: string): v is Output => (OUTPUTS as readonly string[]).includes(v);

export function parseStatusArgs(argv: string[]): StatusArgs | "help" {
  const { values } = parseArgs({
    args: argv,
    options: {
      namespace: { type: "string", short: "n" },
      "all-namespaces": { type: "boolean", short: "A", default: false },
      output: { type: "string", short: "o", default: "table" },
      "operator-namespace": { type: "string" },
      ...clusterFlagOptions,
      help: { type: "boolean", short: "h" },
    },
    strict: true,
  });
  if (values.help) return "help";
  if (!isOutput(values.output))
    throw new UsageError(
      `--output: must be one of ${OUTPUTS.join(", ")}, got ${JSON.stringify(values.output)}`,
    );
  if (values.namespace !== undefined && values["all-namespaces"])
    throw new UsageError("give either --namespace or --all-namespaces");
  for (const flag of ["namespace", "operator-namespace"] as const) {
    const v = values[flag];
    if (v !== undefined && !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(v))
      throw new UsageError(`--${flag}: not a namespace name: ${JSON.stringify(v)}`);
  }
  return {
    allNamespaces: values["all-namespaces"],
    output: values.output,
    ...(values.namespace !== undefined ? { namespace: values.namespace } : {}),
    ...(values["operator-namespace"] !== undefined
      ? { operatorNamespace: values["operator-namespace"] }
      : {}),
    ...(values.kubeconfig ? { kubeconfig: values.kubeconfig } : {}),
    ...(values.context ? { context: values.context } : {}),
  };
}

/**
 * The routes of one namespace or all, read in the version they are stored in
 * (stored-version-reads.ts): a report must not need the conversion webhook,
 * which may be the very thing that is down.
 */
async function listRoutes(kube: KubeClient, namespace: string | undefined): Promise<ListedRoute[]> {
  const failures: string[] = [];
  let versions: Version[];
  try {
    versions = await readVersions(kube);
  } catch (err) {
    if (kubeStatus(err) === 404) throw new Error(`the CRD ${CRD_NAME} is not installed in this cluster`);
    throw err;
  }
  for (const version of versions) {
    try {
      return (await listAll<ListedRoute>(kube, edgeRoutesPath(version, namespace))).items;
    } catch (err) {
      if (kubeStatus(err) === 403) throw err;
      failures.push(`${version}: ${errorMessage(err)}`);
    }
  }
  throw new Error(`cannot list EdgeRoutes in any version (${failures.join("; ")})`);
}

const LEASE_SELECTOR = `labelSelector=${encodeURIComponent(`app.kubernetes.io/component=${ACK_COMPONENT}`)}`;

/** Every ACK record the caller may read, with a note when some could not be read. */
async function readAckRecords(
  kube: KubeClient,
  namespace: string | undefined,
  nowMs: number,
): Promise<DataPlaneReport> {
  const where = namespace === undefined ? "" : `/namespaces/${encodeURIComponent(namespace)}`;
  let leases: Watched[];
  try {
    leases = (await listAll<Watched>(kube, `/apis/coordination.k8s.io/v1${where}/leases?${LEASE_SELECTOR}`))
      .items;
  } catch (err) {
    if (kubeStatus(err) !== 403) throw err;
    return dataPlaneReport(
      [],
      nowMs,
      namespace === undefined
        ? "not allowed to list Leases in all namespaces; pass --operator-namespace (the release's namespace)"
        : `not allowed to list Leases in ${namespace}`,
    );
  }
  const records: { lease: string; record: StoredRecord }[] = [];
  const unreadable: string[] = [];
  for (const lease of leases) {
    const name = `${String(lease.metadata?.namespace ?? "")}/${String(lease.metadata?.name ?? "")}`;
    try {
      const record = recordFromLease(lease);
      if (record) records.push({ lease: name, record });
    } catch (err) {
      unreadable.push(`${name} (${(err as Error).message})`);
    }
  }
  const note =
    unreadable.length > 0
      ? `unreadable: ${unreadable.join(", ")}`
      : records.length === 0
        ? `none in ${namespace ?? "any namespace"}; a server writes one only with --dataplane xds, in a pod (POD_NAME and POD_NAMESPACE set)`
        : undefined;
  return dataPlaneReport(records, nowMs, note);
}

/** The report for these flags, read with `kube`. */
export async function statusReport(
  kube: KubeClient,
  args: StatusArgs,
  defaultNamespace: string,
  nowMs = Date.now(),
): Promise<StatusReport> {
  const namespace = args.allNamespaces ? undefined : (args.namespace ?? defaultNamespace);
  const [routes, dataPlane] = await Promise.all([
    listRoutes(kube, namespace),
    readAckRecords(kube, args.operatorNamespace, nowMs),
  ]);
  return { routes: routeRows(routes), dataPlane };
}

export const statusCommand: Command = {
  help,
  async run(argv) {
    const args = parseStatusArgs(argv);
    if (args === "help") {
      process.stdout.write(help);
      return 0;
    }
    const access = requiredClusterAccess(args);
    const now = Date.now();
    const report = await statusReport(kubeClient(access), args, access.namespace ?? "default", now);
    process.stdout.write(render(report, args.output, now, args.allNamespaces));
    return 0;
  },
};
