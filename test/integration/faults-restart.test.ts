// Fault suite, part 2: the control plane's own processes restarted under load.
// kube-apiserver, then etcd, are killed (SIGKILL) and started again on the same
// ports and data in the middle of a 500-route burst of creates followed by
// deletes. The load (kubectl) retries each chunk as a user would; the
// operator must ride it out alone. After each, nothing stranded, nothing
// served that is gone, nothing missing, nothing crashed.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startControlPlane } from "../harness/control-plane.js";
import type { ControlPlane } from "../../tools/testenv/control-plane.js";
import { awaitConvergence, summaryLine, type FaultOutcome } from "../harness/fault-checks.js";
import { startOperatorStack, type OperatorStack } from "../harness/operator-stack.js";
import { createRoutes, deleteRoutes, routeName } from "./fault-load.js";
import { apply, service } from "./routes.js";

let cp: ControlPlane;
let stack: OperatorStack;

beforeAll(async () => {
  cp = await startControlPlane();
  stack = await startOperatorStack(cp, { watchArgs: ["--lease-duration", "6s"] });
  for (const ns of ["apiserver", "etcd"]) {
    expect((await cp.kubectl(["create", "namespace", ns])).code).toBe(0);
    await apply(cp, service("checkout", ns));
  }
});

afterAll(async () => {
  await stack?.stop();
  await cp?.stop();
});

function expectClean(o: FaultOutcome): void {
  expect(o.strandedFinalizers, "stranded finalizers").toEqual([]);
  expect(o.servedGone, "served but gone").toEqual([]);
  expect(o.missing, "missing from the data plane").toEqual([]);
  expect(o.crashed, "crashed processes").toEqual([]);
}

const ROUTES = 500;
const DELETED = 150;

describe.each(["kube-apiserver", "etcd"] as const)(
  "%s restarted in the middle of a 500-route burst",
  (component) => {
    it("converges with nothing stranded, stale or missing, and no operator process down", async () => {
      const ns = component === "etcd" ? "etcd" : "apiserver";
      let restart: Promise<{ seconds: number }> | undefined;
      const load = await createRoutes(cp, ns, "r", ROUTES, (created) => {
        if (created === 150) restart = cp.restart(component, { kill: true, downMs: 2000 });
      });
      await deleteRoutes(
        cp,
        ns,
        Array.from({ length: DELETED }, (_, i) => routeName("r", i)),
      );
      const { seconds } = (await restart) ?? { seconds: 0 };
      const watcher = stack.watchers[0];
      if (!watcher) throw new Error("no watcher");
      const outcome = await awaitConvergence(cp, stack, [ns], [stack.serve.process, watcher]);
      console.log(
        summaryLine(
          `${component}-restart`,
          `${component} SIGKILLed after 150 of ${ROUTES} creates, back in ${seconds.toFixed(1)} s; ${load.retries} kubectl chunks retried`,
          outcome,
        ),
      );
      expectClean(outcome);
      expect(outcome.routesChecked).toBe(ROUTES - DELETED);
    });
  },
);
