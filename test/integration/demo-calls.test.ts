// The demo's `watchGone` against a real apiserver: the finalizer step in
// tools/demo/lifecycle.ts proves its order (the client stopped reaching the
// route, then the object went) with the moment this watch saw the DELETED
// event. A delete that completes before kubectl has listed the object would
// go unseen, so the watch says when it has listed, and says why it failed.

import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify as toYaml } from "yaml";
import { buildCrd } from "../../src/api/crd.js";
import { CRD_NAME } from "../../src/api/types.js";
import { operatorCalls, type OperatorCalls } from "../../tools/demo/operator-calls.js";
import { DEMO_NAMESPACE } from "../../tools/demo/manifests.js";
import type { ControlPlane } from "../../tools/testenv/control-plane.js";
import { must, waitFor } from "../../tools/testenv/process.js";
import { startControlPlane } from "../harness/control-plane.js";
import { v2Route } from "./routes.js";

let cp: ControlPlane;
let calls: OperatorCalls;

beforeAll(async () => {
  cp = await startControlPlane();
  // No webhooks: nothing holds a delete, so it completes at once, the race at its tightest.
  const crd = buildCrd({ storageVersion: "v2", served: ["v2"] });
  await must("kubectl apply crd", cp.kubectl(["apply", "-f", "-"], { input: toYaml(crd) }));
  await must(
    "kubectl wait crd",
    cp.kubectl(["wait", "--for=condition=Established", `crd/${CRD_NAME}`, "--timeout=60s"]),
  );
  calls = operatorCalls({
    kubectl: (args, input) => cp.kubectl(args, { input }),
    kubectlPath: path.join(cp.binDir, "kubectl"),
    kubeconfig: cp.kubeconfig,
    call: () => Promise.reject(new Error("no server in this test")),
    clientUrl: () => Promise.reject(new Error("no client in this test")),
  });
}, 120_000);

afterAll(async () => {
  await cp?.stop();
});

describe("the demo's watch for a deleted route", () => {
  it("sees every delete issued once it has listed the route, even one that completes at once", async () => {
    for (let i = 0; i < 5; i++) {
      const name = `gone-${i}`;
      await calls.apply(v2Route(name, { namespace: DEMO_NAMESPACE }));
      const gone = calls.watchGone(name);
      try {
        await gone.listed;
        const before = Date.now();
        await must(
          "kubectl delete",
          cp.kubectl(["delete", "edgeroute", name, "-n", DEMO_NAMESPACE, "--wait=false"]),
        );
        const at = await waitFor(`the watch to see ${name} deleted`, async () => gone.at(), 10_000);
        expect(at).toBeGreaterThanOrEqual(before);
      } finally {
        gone.stop();
      }
    }
  }, 120_000);

  it("a watch on a route that is not there fails with kubectl's reason, not silence", async () => {
    const gone = calls.watchGone("never-created");
    try {
      await expect(gone.listed).rejects.toThrow(/never-created.*NotFound|not found/i);
      expect(gone.at()).toBeUndefined();
    } finally {
      gone.stop();
    }
  }, 90_000);
});
