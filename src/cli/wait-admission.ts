import { parseArgs } from "node:util";
import { API_VERSION_V2, FINALIZER, KIND } from "../api/types.js";
import { kubeClient, KubeError, type KubeClient } from "../kube/client.js";
import { edgeRoutesPath } from "../kube/paths.js";
import { UsageError, type Command } from "./command.js";
import { clusterFlagsHelp, clusterFlagOptions, requiredClusterAccess } from "./cluster-flags.js";
import { CLUSTER_ENV, helpFooter } from "./help-footer.js";
import { parseDuration } from "./duration-flag.js";

const help = `Usage: edge-operator wait-admission [options]

Waits until the apiserver admits an EdgeRoute create: sends a server-side dry
run (nothing is stored) of a probe route every second until one is admitted
with the finalizer ${FINALIZER} added. That takes the operator's
webhooks answering and, with the chart's finalizer policy, the apiserver's
policy plugin knowing the CRD (for a few seconds after the CRD is created it
answers 503 "Resource kind ... not found"). The chart's post-install hook runs
it, so that 'helm install' returns once routes can be created.

Options:
  --namespace NS            where the probe is sent: a namespace the webhooks
                            and the policy cover (default "default")
  --timeout DUR             give up after this long, exit 1 (default 5m)
${clusterFlagsHelp()}
  -h, --help                this text
${helpFooter(CLUSTER_ENV)}`;

export interface WaitAdmissionOptions {
  readonly namespace: string;
  readonly timeoutMs: number;
  /** Between two probes (default 1 s). */
  readonly intervalMs?: number;
  /** Told each time the reason for waiting changes. */
  readonly onWaiting?: (reason: string) => void;
}

export type WaitAdmissionResult =
  | { readonly admitted: true; readonly afterMs: number; readonly probes: number }
  | { readonly admitted: false; readonly afterMs: number; readonly probes: number; readonly reason: string };

/** A route that any operator version admits: one host, one backend. */
function probeRoute(namespace: string): object {
  return {
    apiVersion: API_VERSION_V2,
    kind: KIND,
    metadata: { generateName: "admission-probe-", namespace },
    spec: {
      hostnames: ["admission-probe.invalid"],
      rules: [
        {
          matches: [{ path: { type: "PathPrefix", value: "/" } }],
          backends: [{ name: "admission-probe", port: 80 }],
        },
      ],
    },
  };
}

/**
 * An answer that will not change by waiting: the probe itself is refused as
 * invalid. Everything else may: 503 from the policy plugin, a webhook not
 * reachable yet, RBAC not yet in force, 404 while the new CRD is not yet
 * served (which a namespace that does not exist also answers).
 */
function final(err: unknown): boolean {
  return err instanceof KubeError && (err.status === 400 || err.status === 422);
}

function describe(err: unknown): string {
  if (err instanceof KubeError) return `${err.status} ${err.reason}: ${err.message}`;
  return err instanceof Error ? err.message : String(err);
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Sends the dry-run create until it is admitted with the finalizer, or the time is up. */
export async function waitForAdmission(
  kube: KubeClient,
  opts: WaitAdmissionOptions,
): Promise<WaitAdmissionResult> {
  const started = Date.now();
  const deadline = started + opts.timeoutMs;
  const interval = opts.intervalMs ?? 1000;
  let reason = "";
  for (let probes = 1; ; probes++) {
    let now: string;
    try {
      const answer = await kube.json<{ metadata?: { finalizers?: unknown } }>(
        "POST",
        edgeRoutesPath("v2", opts.namespace),
        {
          query: { dryRun: "All" },
          body: probeRoute(opts.namespace),
          retry: false,
          timeoutMs: Math.max(1000, Math.min(10_000, deadline - Date.now())),
        },
      );
      const finalizers = answer.metadata?.finalizers;
      if (Array.isArray(finalizers) && finalizers.includes(FINALIZER))
        return { admitted: true, afterMs: Date.now() - started, probes };
      now = `admitted without the finalizer ${FINALIZER}: neither the finalizer policy nor /mutate added it`;
    } catch (err) {
      now = describe(err);
      if (final(err)) return { admitted: false, afterMs: Date.now() - started, probes, reason: now };
    }
    if (now !== reason) opts.onWaiting?.(now);
    reason = now;
    if (Date.now() + interval > deadline)
      return { admitted: false, afterMs: Date.now() - started, probes, reason };
    await sleep(interval);
  }
}

export const waitAdmissionCommand: Command = {
  help,
  async run(argv) {
    const { values, positionals } = parseArgs({
      args: argv,
      options: {
        namespace: { type: "string", default: "default" },
        timeout: { type: "string", default: "5m" },
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
    if (positionals.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0])}`);
    if (!values.namespace) throw new UsageError("--namespace must not be empty");
    const timeoutMs = parseDuration("--timeout", values.timeout);
    if (timeoutMs <= 0) throw new UsageError("--timeout must be more than 0");
    const kube = kubeClient(requiredClusterAccess(values));
    const out = await waitForAdmission(kube, {
      namespace: values.namespace,
      timeoutMs,
      onWaiting: (reason) => process.stderr.write(`waiting: ${reason}\n`),
    });
    const seconds = (out.afterMs / 1000).toFixed(1);
    if (out.admitted) {
      process.stdout.write(
        `admission ready: a dry-run EdgeRoute create in ${values.namespace} was admitted with the finalizer after ${seconds} s (${out.probes} probe(s))\n`,
      );
      return 0;
    }
    process.stderr.write(
      `edge-operator wait-admission: not admitted after ${seconds} s (${out.probes} probe(s)): ${out.reason}\n`,
    );
    return 1;
  },
};
