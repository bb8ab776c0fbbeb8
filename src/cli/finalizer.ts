import { parseArgs } from "node:util";
import { FINALIZER, type EdgeRouteV2 } from "../api/types.js";
import { kubeEventRecorder } from "../reconcile/events.js";
import { hasFinalizer, releaseFinalizer } from "../reconcile/finalizer.js";
import type { Logger } from "../observability/logger.js";
import { parseRouteKey } from "../reconcile/protocol.js";
import { getRouteStored, listRoutesStored, readVersions } from "../reconcile/stored-version-reads.js";
import { kubeClient } from "../kube/client.js";
import { isStale } from "../kube/errors.js";
import { edgeRoutePath } from "../kube/paths.js";
import type { Version } from "../api/types.js";
import { UsageError, type Command } from "./command.js";
import { clusterFlagsHelp, clusterFlagOptions, requiredClusterAccess } from "./cluster-flags.js";
import { CLUSTER_ENV, helpFooter } from "./help-footer.js";

const help = `Usage: edge-operator finalizer release NAMESPACE/NAME --reason TEXT [options]
       edge-operator finalizer release --all --reason TEXT [options]

The break-glass for a route stuck in Terminating (Programmed=False/DeprogramStuck):
removes the finalizer ${FINALIZER} by hand and records a Warning event with
your reason. The data plane may still send traffic to the route's backends
until it takes a snapshot without it; use this when it cannot, or no longer
matters (for example, the data plane is gone).

Options:
  --reason TEXT             why (required): kept in the event on the route
  --all                     every EdgeRoute that carries the finalizer, in all
                            namespaces (used by the chart's uninstall hook)
${clusterFlagsHelp()}
  -h, --help                this text
${helpFooter(CLUSTER_ENV)}`;

/**
 * Reads and patches in the version the route was read in, the stored one
 * (stored-version-reads.ts), so that neither needs the conversion webhook;
 * the webhooks' matchConditions let the server's ServiceAccount through.
 * Both together work with the server down.
 */
async function releaseOne(
  kube: ReturnType<typeof kubeClient>,
  route: EdgeRouteV2,
  version: Version,
  reason: string,
  logger: Logger,
): Promise<"released" | "none"> {
  if (!hasFinalizer(route)) return "none";
  const events = kubeEventRecorder(kube, logger);
  const namespace = route.metadata.namespace ?? "";
  const name = route.metadata.name ?? "";
  // Re-read on a conflict: the precondition guards against a stale view, not against the operator.
  for (let attempt = 0; ; attempt++) {
    try {
      await releaseFinalizer(kube, route, reason, edgeRoutePath(namespace, name, version));
      break;
    } catch (e) {
      if (!isStale(e) || attempt >= 5) throw e;
      const fresh = await getRouteStored(kube, [version], namespace, name);
      if (!fresh || !hasFinalizer(fresh.route)) return "none";
      route = fresh.route;
    }
  }
  await events.record(
    route,
    "Warning",
    "FinalizerReleasedByHand",
    `finalizer ${FINALIZER} removed by hand: ${reason}`,
  );
  return "released";
}

export const finalizerCommand: Command = {
  help,
  async run(argv, logger) {
    const [sub, ...rest] = argv;
    if (sub === "-h" || sub === "--help" || sub === undefined) {
      process.stdout.write(help);
      return sub === undefined ? 2 : 0;
    }
    if (sub !== "release")
      throw new UsageError(`unknown subcommand ${JSON.stringify(sub)}; the only one is 'release'`);
    const { values, positionals } = parseArgs({
      args: rest,
      options: {
        reason: { type: "string" },
        all: { type: "boolean", default: false },
        ...clusterFlagOptions,
        help: { type: "boolean", short: "h" },
      },
      allowPositionals: true,
      strict: true,
    });
    if (values.help) {
      process.stdout.write(help);
      return 0;
    }
    if (!values.reason?.trim())
      throw new UsageError("--reason is required: say why the finalizer is removed by hand");
    if (values.all === positionals.length > 0) throw new UsageError("give either NAMESPACE/NAME or --all");
    if (positionals.length > 1) throw new UsageError("give one NAMESPACE/NAME");
    const access = requiredClusterAccess(values);
    const kube = kubeClient(access);
    const versions = await readVersions(kube);

    if (values.all) {
      const listed = await listRoutesStored(kube, versions);
      const routes = listed.routes.filter(hasFinalizer);
      let released = 0;
      for (const r of routes)
        if ((await releaseOne(kube, r, listed.version, values.reason, logger)) === "released") released++;
      process.stdout.write(`released the finalizer of ${released} EdgeRoute(s)\n`);
      return 0;
    }
    const key = positionals[0] ?? "";
    const ref = parseRouteKey(key);
    if (!ref) throw new UsageError(`${JSON.stringify(key)} is not NAMESPACE/NAME`);
    const found = await getRouteStored(kube, versions, ref.namespace, ref.name);
    if (!found) {
      process.stderr.write(`edge-operator finalizer: EdgeRoute ${key} not found\n`);
      return 1;
    }
    const out = await releaseOne(kube, found.route, found.version, values.reason, logger);
    process.stdout.write(
      out === "released"
        ? `edgeroute ${key}: finalizer ${FINALIZER} released\n`
        : `edgeroute ${key}: has no ${FINALIZER} finalizer; nothing to do\n`,
    );
    // What it costs, as kubectl says a warning: the data plane was never told.
    if (out === "released")
      process.stderr.write(
        `Warning: a data plane that has not taken a snapshot without ${key} may still send its traffic to the route's backends until it does\n`,
      );
    return 0;
  },
};
