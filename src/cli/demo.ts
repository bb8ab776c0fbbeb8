import { parseArgs } from "node:util";
import { playLabLifecycle, playVersionsAndDataPlane, StepFailed, type Output } from "../demo/lifecycle.js";
import { Teardown } from "../demo/teardown.js";
import type { Command } from "./command.js";

const help = `Usage: edge-operator demo [--keep]

The main job in one command, on this machine: starts a test control plane
(etcd and kube-apiserver, built from their Go modules on first use, about ten
minutes, then cached), installs the chart with helm in out-of-cluster mode,
starts 'edge-operator serve' (memory data plane) and 'edge-operator watch' as
child processes with the chart's identities, and plays the lab's lifecycle:

  apply (service missing):       Accepted=false(ServiceNotFound) Programmed=false dpPushes=0
  service created (self-heal):   Accepted=true(Valid) Programmed=true(Synced) dpPushes=1
  reconcile x2 (idempotent):     Accepted=true Programmed=true dpPushes=1
  delete issued (Terminating):   exists=true deletionTimestamp=set finalizer=net.10xdev.io/deprogram dpRoutes=1
  reconcile (finalizer cleanup): exists=false dpPushes=2 dpRoutes=0

then a v1 and a v2 route side by side, an invalid route refused by the
apiserver, and the live data-plane version. Results go to stdout, progress to
stderr. Exits 1 when a step does not hold; everything it started is stopped
when it ends.

Options:
  --keep      leave it all running and print the KUBECONFIG to use with
              kubectl; Ctrl-C (SIGINT or SIGTERM) tears it down
  -h, --help  this text
`;

export function parseDemoArgs(argv: string[]): { keep: boolean } | "help" {
  const { values } = parseArgs({
    args: argv,
    options: { keep: { type: "boolean", default: false }, help: { type: "boolean", short: "h" } },
    strict: true,
    allowPositionals: false,
  });
  return values.help ? "help" : { keep: values.keep };
}

export const demoCommand: Command = {
  name: "demo",
  summary: "the lab's lifecycle on a local control plane, with the chart, serve and watch",
  help,
  async run(argv) {
    const opts = parseDemoArgs(argv);
    if (opts === "help") {
      process.stdout.write(help);
      return 0;
    }
    const started = Date.now();
    const elapsed = () => `${((Date.now() - started) / 1000).toFixed(1)} s`;
    const out: Output = {
      line: (text) => process.stdout.write(`${text}\n`),
      progress: (text) => process.stderr.write(`demo: ${text}\n`),
    };
    const teardown = new Teardown();
    const stopAll = async (): Promise<void> => {
      out.progress("stopping the watcher, the control plane and the server");
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
      // Loaded here: the test control plane's code is for the demo only, not for serve or watch.
      const { startDemoEnvironment } = await import("../demo/environment.js");
      const env = await startDemoEnvironment(
        { runId: `demo-${process.pid}`, progress: out.progress },
        teardown,
      );
      out.progress(`operator running (${elapsed()}); playing the lab's lifecycle`);
      out.line("");
      await playLabLifecycle(env, out);
      await playVersionsAndDataPlane(env, out);
      out.line("");
      out.progress(`all steps held in ${elapsed()}`);
      if (opts.keep) {
        out.line("The control plane and the operator keep running. In another shell:");
        out.line(`export KUBECONFIG=${env.kubeconfig}`);
        out.line(`${env.cp.binDir}/kubectl get edgeroutes`);
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
  },
};
