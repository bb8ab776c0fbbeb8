// The apiserver's work per route change at growing cluster sizes, from the
// apiserver's own /metrics (test/harness/apiserver-cost.ts): requests, LISTs
// and response bytes on EdgeRoutes, Services and EndpointSlices per change,
// watches left out. The operator (serve with the memory sink + one watcher)
// runs as processes on a fresh control plane; each size adds routes to the
// last, settles, then makes CHANGES spec edits one after another, each waited
// for until the data plane serves it. Floor in the same run: the change
// itself (1 PATCH) and its status write (1 PATCH).
//
//   RUNS=2 SIZES=200,2000 CHANGES=20 npm run bench:cache-cost
//   EDGE_OPERATOR_CLI=/path/to/older/dist/src/cli/main.js tsx bench/cache-cost.bench.ts   (before/after)

import os from "node:os";
import { startControlPlane } from "../tools/testenv/control-plane.js";
import { startOperatorStack } from "../test/harness/operator-stack.js";
import { costPerChange, createCostRoutes, settle } from "../test/harness/apiserver-cost.js";
import { fmt } from "./stats.js";

const RUNS = Number(process.env.RUNS ?? 2);
const SIZES = (process.env.SIZES ?? "200,2000").split(",").map(Number);
const CHANGES = Number(process.env.CHANGES ?? 20);
const NS = "cost";

console.log(
  `cli=${process.env.EDGE_OPERATOR_CLI ?? "this checkout"} cores=${os.cpus().length} load=${os
    .loadavg()
    .map((l) => fmt(l, 1))
    .join("/")}`,
);
for (let run = 1; run <= RUNS; run++) {
  const cp = await startControlPlane();
  const stack = await startOperatorStack(cp, { watchArgs: ["--resync", "0"] });
  try {
    const kube = cp.kube();
    let have = 0;
    for (const [i, n] of SIZES.entries()) {
      await createCostRoutes(kube, NS, have, n);
      have = n;
      await settle(cp, stack, NS, n, 900_000);
      const c = await costPerChange(cp, stack, kube, NS, n, CHANGES, i + 1);
      console.log(
        `run ${run} routes=${n}: per change requests=${fmt(c.requests, 1)} lists=${fmt(c.lists, 2)} ` +
          `bytes=${fmt(c.bytes / 1024, 1)} KiB statusWrites=${fmt(c.statusWrites, 2)} (floor: 2 requests) ` +
          `load=${fmt(os.loadavg()[0] ?? NaN, 1)}`,
      );
    }
  } finally {
    await stack.stop();
    await cp.stop();
  }
}
