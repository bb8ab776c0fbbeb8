// Runs the real cluster in a process of its own until SIGINT or SIGTERM:
// `node dist/tools/testenv/cluster-main.js`. Prints `export KUBECONFIG=...` and
// then `ready` once pods can be created. The test of recovery after SIGKILL
// starts the cluster this way, and kills this process.

import { startCluster } from "./cluster.js";

// EDGE_CLUSTER_WAIT_MS: how long to wait for another process's cluster to stop first.
const cluster = await startCluster({
  waitForOtherMs: Number(process.env.EDGE_CLUSTER_WAIT_MS ?? 0),
  progress: (l) => process.stderr.write(`cluster: ${l}\n`),
});
process.stdout.write(`export KUBECONFIG=${cluster.kubeconfig}\nready\n`);
let stopping = false;
const stop = (): void => {
  if (stopping) return;
  stopping = true;
  cluster.stop().then(
    () => process.exit(0),
    (e: Error) => {
      process.stderr.write(`${e.message}\n`);
      process.exit(1);
    },
  );
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
