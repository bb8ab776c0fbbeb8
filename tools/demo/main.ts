#!/usr/bin/env node
// The demo's executable: `npm run demo` (which builds first), or
// `node dist/tools/demo/main.js`. Tooling, not product: it lives outside src/,
// so neither the shipped CLI nor the image holds it (docs/architecture.md,
// "Tools outside the product").

import { parseArgs } from "node:util";
import { playLabLifecycle, playVersionsAndDataPlane, StepFailed, type Output } from "./lifecycle.js";
import { Teardown } from "./teardown.js";
import type { DemoEnvironment } from "./environment.js";

const help = `Usage: npm run demo -- [--keep] [--out-of-cluster]
   or: node dist/tools/demo/main.js [--keep] [--out-of-cluster]

The main job in one command, on this machine. By default on a real
single-node cluster (root on Linux): starts it (etcd, kube-apiserver,
controller-manager, scheduler, containerd, kubelet, kube-proxy, built from
their Go modules on first use, then cached), builds the operator's image and
the demo's workload image without Docker and loads them into the cluster,
runs 'helm install' with the chart's defaults (the xds data plane, two
servers, two leader-elected watchers; set: the local images, the plaintext
ADS port for proxyless gRPC clients, and a 15s deprogram timeout), starts
gRPC backends behind Services and gRPC's own xDS client (@grpc/grpc-js-xds)
in a pod, and plays the lab's lifecycle, the data plane's fields read from
that client (what it holds, where its RPCs went):

  apply (service missing):       Accepted=false(ServiceNotFound) Programmed=false dpPushes=0 rpcs=fail(UNAVAILABLE)
  service created (self-heal):   Accepted=true(Valid) Programmed=true(Synced) dpPushes=1 dpRoutes=1 rpcs=served(2 backends)
  reconcile x2 (idempotent):     Accepted=true Programmed=true dpPushes=1
  delete issued (Terminating):   exists=true deletionTimestamp=set finalizer=net.10xdev.io/deprogram Programmed=false(Pending) dpRoutes=1 rpcs=served(2 backends)
  link back (finalizer cleanup): exists=false dpPushes=2 dpRoutes=0 rpcs=fail(UNAVAILABLE)

The delete is issued with the client's link to the operator cut (a relay in
the client stops passing bytes: a partition), so the route stays behind its
finalizer and is still served; with the link back, the client takes a
version without it, its RPCs stop reaching it, and only then does the object
go (the demo checks that order). Then the break-glass (a route deleted while
the link stays cut past the deprogram timeout: DeprogramStuck, released with
'edge-operator finalizer release'), a v1 and a v2 route side by side, an
invalid route refused by the apiserver, and what the client holds and each
server recorded of it. Results go to stdout, progress to stderr. Exits 1
when a step does not hold; everything it started is stopped when it ends.

With --out-of-cluster, or where this machine cannot host a cluster (not root,
not Linux), it runs a test control plane (etcd and kube-apiserver only), the
chart in out-of-cluster mode, 'edge-operator serve' and 'watch' as child
processes with the chart's identities, and the same xDS client and backends
as processes on this machine.

Options:
  --keep            leave it all running and print the KUBECONFIG to use with
                    kubectl; Ctrl-C (SIGINT or SIGTERM) tears it down
  --out-of-cluster  no cluster: serve, watch and the workloads as local processes
  -h, --help        this text
`;

function parseDemoArgs(argv: string[]): { keep: boolean; outOfCluster: boolean } | "help" {
  const { values } = parseArgs({
    args: argv,
    options: {
      keep: { type: "boolean", default: false },
      "out-of-cluster": { type: "boolean", default: false },
      help: { type: "boolean", short: "h" },
    },
    strict: true,
    allowPositionals: false,
  });
  return values.help ? "help" : { keep: values.keep, outOfCluster: values["out-of-cluster"] };
}

/** Plays the demo; the exit code: 0 when every step held, 1 when one did not, 130 when interrupted. */
async function runDemo(opts: { keep: boolean; outOfCluster: boolean }): Promise<number> {
  const started = Date.now();
  const elapsed = () => `${((Date.now() - started) / 1000).toFixed(1)} s`;
  const out: Output = {
    line: (text) => process.stdout.write(`${text}\n`),
    progress: (text) => process.stderr.write(`demo: ${text}\n`),
  };
  const teardown = new Teardown();
  const stopAll = async (): Promise<void> => {
    out.progress("tearing down everything the demo started");
    const errors = await teardown.run((what, ms) =>
      out.progress(`stopped ${what} (${(ms / 1000).toFixed(1)} s)`),
    );
    for (const e of errors) out.progress(`teardown: ${e}`);
  };

  // A signal before --keep's wait interrupts the demo: tear down what exists
  // and exit. (Children also die with us: each runs under scripts/supervise.sh.)
  let waitingForCtrlC: ((sig: NodeJS.Signals) => void) | undefined;
  let interrupted = false;
  const onSignal = (sig: NodeJS.Signals): void => {
    if (waitingForCtrlC) return waitingForCtrlC(sig);
    interrupted = true;
    out.progress(`${sig}: interrupted after ${elapsed()}`);
    void stopAll().finally(() => process.exit(130));
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);

  try {
    // Loaded here, each environment only when it is the one played: --help and a bad flag load neither.
    const { clusterUnsupported } = await import("../testenv/cluster-bin.js");
    const unsupported = opts.outOfCluster ? undefined : clusterUnsupported();
    if (unsupported)
      out.progress(`!!! NO REAL CLUSTER: ${unsupported}; running the operator out of cluster instead !!!`);
    let env: DemoEnvironment;
    if (opts.outOfCluster || unsupported) {
      const { startDemoEnvironment } = await import("./environment.js");
      env = await startDemoEnvironment({ runId: `demo-${process.pid}`, progress: out.progress }, teardown);
    } else {
      const { startClusterDemoEnvironment } = await import("./cluster-environment.js");
      env = await startClusterDemoEnvironment(out.progress, teardown);
    }
    out.progress(`operator running (${elapsed()}); playing the lab's lifecycle`);
    out.line("");
    await playLabLifecycle(env, out);
    await playVersionsAndDataPlane(env, out);
    out.line("");
    out.progress(`all steps held in ${elapsed()}`);
    if (opts.keep) {
      out.line("The cluster (or control plane) and the operator keep running. In another shell:");
      out.line(`export KUBECONFIG=${env.kubeconfig}`);
      out.line(`${env.kubectlPath} get edgeroutes -A`);
      out.line("Press Ctrl-C to stop everything.");
      const sig = await new Promise<NodeJS.Signals>((resolve) => (waitingForCtrlC = resolve));
      out.progress(`${sig}: tearing down`);
    }
    await stopAll();
    out.progress(`done in ${elapsed()}`);
    return 0;
  } catch (e) {
    // Interrupted: the steps fail as their processes go; the signal's path reports and exits.
    if (interrupted) return 130;
    out.progress(e instanceof StepFailed ? `FAILED: ${e.message}` : `error: ${(e as Error).message}`);
    await stopAll();
    return 1;
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}

/** Parses the flags and plays the demo; a bad flag is a usage error (exit code 2), as in the shipped CLI. */
async function main(argv: string[]): Promise<number> {
  let opts: ReturnType<typeof parseDemoArgs>;
  try {
    opts = parseDemoArgs(argv);
  } catch (err) {
    process.stderr.write(`demo: ${(err as Error).message.split("\n")[0]}\n`);
    return 2;
  }
  if (opts === "help") {
    process.stdout.write(help);
    return 0;
  }
  return runDemo(opts);
}

// Done means done: whatever the steps left open (sockets, timers) must not keep
// the process alive, as src/cli/main.ts does for the shipped commands.
main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`demo: ${(err as Error).message}\n`);
    process.exit(1);
  },
);
