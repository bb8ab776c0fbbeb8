// The lab's lifecycle on a real apiserver, with the server and the watcher as
// processes and kubectl as the user.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startControlPlane, type ControlPlane } from "../harness/control-plane.js";
import { startCli } from "../harness/operator.js";
import { startOperatorStack, type OperatorStack } from "../harness/operator-stack.js";
import { sleep, waitFor } from "../harness/process.js";
import {
  apply,
  cond,
  endpointSlice,
  getRoute,
  service,
  v1Route,
  v2Route,
  waitForConditions,
} from "./routes.js";

describe("reconcile: the lab's lifecycle", () => {
  let cp: ControlPlane;
  let stack: OperatorStack;

  beforeAll(async () => {
    cp = await startControlPlane();
    stack = await startOperatorStack(cp, { serveArgs: ["--deprogram-timeout", "3s"] });
  });
  afterAll(async () => {
    await stack?.stop();
    await cp?.stop();
  });

  it("self-heals: ServiceNotFound first, then Valid and Synced when the Service appears, with no edit of the route", async () => {
    await apply(cp, v2Route("r1", { service: "checkout" }));
    const before = await waitForConditions(cp, "r1", "False(ServiceNotFound)", "False(Pending)");
    expect(before.status?.conditions?.find((c) => c.type === "Accepted")?.message).toContain(
      "default/checkout",
    );
    expect((await stack.dataPlane()).pushes).toBe(0);
    // The route key and the snapshot key judge the route the same way, word for
    // word: reconciling it again writes nothing.
    for (const key of ["default/r1", "$snapshot", "default/r1", "$snapshot"]) {
      expect((await stack.reconcile(key)).status).toBe(200);
    }
    expect((await getRoute(cp, "r1"))?.metadata.resourceVersion).toBe(before.metadata.resourceVersion);

    await apply(cp, service("checkout"));
    const after = await waitForConditions(cp, "r1", "True(Valid)", "True(Synced)");
    expect(after.metadata.generation).toBe(before.metadata.generation);
    expect(after.status?.observedGeneration).toBe(after.metadata.generation);
    const dp = await stack.dataPlane();
    expect(dp.pushes).toBe(1);
    expect(dp.routes).toEqual(["default/r1"]);
  });

  it("is idempotent: five reconciles of unchanged state push nothing and write nothing", async () => {
    const before = await getRoute(cp, "r1");
    const pushes = (await stack.dataPlane()).pushes;
    for (let i = 0; i < 5; i++) {
      const route = await stack.reconcile("default/r1");
      expect(route.status).toBe(200);
      const snap = await stack.reconcile("$snapshot");
      expect(snap.status).toBe(200);
      expect((snap.body as { did: string[] }).did.join(" ")).toMatch(/unchanged; nothing to write/);
    }
    expect((await stack.dataPlane()).pushes).toBe(pushes);
    const after = await getRoute(cp, "r1");
    expect(after?.metadata.resourceVersion).toBe(before?.metadata.resourceVersion);
  });

  it("turns away callers without credentials (401) or without the RBAC grant (403)", async () => {
    const none = await stack.reconcile("$snapshot", "");
    expect(none.status).toBe(401);
    const bad = await stack.reconcile("$snapshot", "not-a-token");
    expect(bad.status).toBe(401);
    const other = await cp.kubectl(["create", "serviceaccount", "intruder", "-n", "default"]);
    expect(other.code, other.stderr).toBe(0);
    const token = (await cp.kubectl(["create", "token", "intruder", "-n", "default"])).stdout.trim();
    const forbidden = await stack.reconcile("$snapshot", token);
    expect(forbidden.status).toBe(403);
    expect(JSON.stringify(forbidden.body)).toContain("may not call /reconcile");
  });

  it("rebuilds the whole set: deleting r1 leaves exactly r2 in the data plane", async () => {
    await apply(cp, v1Route("r2", { service: "checkout" }));
    await waitForConditions(cp, "r2", "True(Valid)", "True(Synced)");
    expect((await stack.dataPlane()).routes).toEqual(["default/r1", "default/r2"]);
    const del = await cp.kubectl(["delete", "edgeroute", "r1", "--wait=true", "--timeout=30s"]);
    expect(del.code, del.stderr).toBe(0);
    expect(await getRoute(cp, "r1")).toBeUndefined();
    expect((await stack.dataPlane()).routes).toEqual(["default/r2"]);
  });

  it("says Programmed only after the data plane took the push, and retries a failed push", async () => {
    await stack.failNextPush(1_000_000);
    await apply(cp, v2Route("r3", { service: "checkout" }));
    const failed = await waitForConditions(cp, "r3", "True(Valid)", "False(PushFailed)");
    expect(failed.status?.conditions?.find((c) => c.type === "Programmed")?.message).toContain(
      "refuses pushes",
    );
    expect((await stack.dataPlane()).routes).not.toContain("default/r3");
    // The watcher retries with backoff; once the data plane takes the push, r3 says so.
    await stack.failNextPush(0);
    await waitForConditions(cp, "r3", "True(Valid)", "True(Synced)", "default", 60_000);
    const dp = await stack.dataPlane();
    expect(dp.failures).toBeGreaterThanOrEqual(1);
    expect(dp.routes).toContain("default/r3");
  });

  it("holds a deleted route behind its finalizer until the deprogramming push, says DeprogramStuck past its bound, then lets it go", async () => {
    await stack.failNextPush(1_000_000);
    const del = await cp.kubectl(["delete", "edgeroute", "r3", "--wait=false"]);
    expect(del.code, del.stderr).toBe(0);
    const terminating = await waitFor("r3 to be Terminating", async () => {
      const r = await getRoute(cp, "r3");
      return r?.metadata.deletionTimestamp ? r : undefined;
    });
    expect(terminating.metadata.finalizers).toContain("net.10xdev.io/deprogram");
    // The data plane still routes to r3 while the push fails, so r3 must stay;
    // past --deprogram-timeout (3s here) it says so, with a Warning event.
    const stuck = await waitForConditions(
      cp,
      "r3",
      "True(Valid)",
      "False(DeprogramStuck)",
      "default",
      30_000,
    );
    expect(stuck.metadata.deletionTimestamp).toBeDefined();
    expect((await stack.dataPlane()).routes).toContain("default/r3");
    const events = await cp.kubectl([
      "get",
      "events",
      "--field-selector",
      "involvedObject.name=r3",
      "-o",
      "json",
    ]);
    const reasons = (JSON.parse(events.stdout) as { items: { reason: string; type: string }[] }).items.map(
      (e) => `${e.type}/${e.reason}`,
    );
    expect(reasons).toContain("Warning/DeprogramStuck");

    await stack.failNextPush(0);
    await cp.kubectl(["annotate", "service", "checkout", `poke=${Date.now()}`, "--overwrite"]);
    await waitFor(
      "r3 to be gone",
      async () => ((await getRoute(cp, "r3")) === undefined ? true : undefined),
      90_000,
      200,
    );
    expect((await stack.dataPlane()).routes).not.toContain("default/r3");
    await waitForConditions(cp, "r2", "True(Valid)", "True(Synced)");
  });

  it("lets the break-glass release a stuck finalizer by hand, and records why", async () => {
    await apply(cp, v2Route("stuck", { service: "checkout" }));
    await waitForConditions(cp, "stuck", "True(Valid)", "True(Synced)");
    await stack.failNextPush(1_000_000);
    expect((await cp.kubectl(["delete", "edgeroute", "stuck", "--wait=false"])).code).toBe(0);
    await waitForConditions(cp, "stuck", "True(Valid)", "False(DeprogramStuck)", "default", 30_000);

    const bad = startCli("finalizer", [
      "finalizer",
      "release",
      "default/stuck",
      "--kubeconfig",
      cp.kubeconfig,
    ]);
    expect(await bad.exited).toBe(2);
    expect(bad.output()).toContain("--reason is required");

    const release = startCli("finalizer", [
      "finalizer",
      "release",
      "default/stuck",
      "--reason",
      "data plane replaced during an incident",
      "--kubeconfig",
      cp.kubeconfig,
    ]);
    expect(await release.exited, release.output()).toBe(0);
    expect(release.output()).toContain("edgeroute default/stuck: finalizer net.10xdev.io/deprogram released");
    await waitFor("stuck to be gone", async () =>
      (await getRoute(cp, "stuck")) === undefined ? true : undefined,
    );
    const events = await cp.kubectl([
      "get",
      "events",
      "--field-selector",
      "involvedObject.name=stuck",
      "-o",
      "json",
    ]);
    const items = (JSON.parse(events.stdout) as { items: { reason: string; message: string }[] }).items;
    expect(items.find((e) => e.reason === "FinalizerReleasedByHand")?.message).toContain(
      "data plane replaced during an incident",
    );
    await stack.failNextPush(0);
    // Many failures have pushed the snapshot key's backoff far out: a Service event brings it back now.
    await cp.kubectl(["annotate", "service", "checkout", `poke=${Date.now()}`, "--overwrite"]);
    await waitForConditions(cp, "r2", "True(Valid)", "True(Synced)", "default", 60_000);
  });

  it("follows endpoint churn without any edit of the route", async () => {
    const before = await getRoute(cp, "r2");
    await apply(cp, endpointSlice("checkout", ["10.1.0.1", "10.1.0.2"]));
    await waitFor("the endpoints to reach the data plane", async () => {
      const dp = await stack.dataPlane();
      const eps = Object.values(dp.endpoints).flat();
      return eps.includes("10.1.0.1:8080") && eps.includes("10.1.0.2:8080") ? true : undefined;
    });
    await apply(cp, endpointSlice("checkout", ["10.1.0.3"]));
    await waitFor("the endpoints to change", async () => {
      const eps = Object.values((await stack.dataPlane()).endpoints).flat();
      return eps.length === 1 && eps[0] === "10.1.0.3:8080" ? true : undefined;
    });
    const after = await getRoute(cp, "r2");
    expect(after?.metadata.generation).toBe(before?.metadata.generation);
  });

  it("resolves conflicts oldest-wins, and promotes the younger route when the older goes", async () => {
    await apply(cp, v2Route("older", { host: "shop.example.com", path: "/cart", service: "checkout" }));
    await waitForConditions(cp, "older", "True(Valid)", "True(Synced)");
    // creationTimestamp has one-second resolution: make the order unambiguous.
    await sleep(1100);
    await apply(cp, v2Route("younger", { host: "shop.example.com", path: "/cart", service: "checkout" }));
    const younger = await waitForConditions(cp, "younger", "False(Conflicted)", "False(Pending)");
    expect(younger.status?.conditions?.find((c) => c.type === "Accepted")?.message).toContain(
      "default/older",
    );
    expect((await stack.dataPlane()).routes).toContain("default/older");
    expect((await stack.dataPlane()).routes).not.toContain("default/younger");

    const del = await cp.kubectl(["delete", "edgeroute", "older", "--wait=true", "--timeout=30s"]);
    expect(del.code, del.stderr).toBe(0);
    await waitForConditions(cp, "younger", "True(Valid)", "True(Synced)");
    expect((await stack.dataPlane()).routes).toContain("default/younger");
  });

  it("processes the queue: every route converges and the metrics say so", async () => {
    for (const name of ["q1", "q2", "q3"]) await apply(cp, v2Route(name, { service: "checkout" }));
    for (const name of ["q1", "q2", "q3"]) await waitForConditions(cp, name, "True(Valid)", "True(Synced)");
    const routes = await cp.kubectl(["get", "edgeroutes", "-o", "name"]);
    expect(routes.stdout.trim().split("\n").sort()).toEqual(
      [
        "edgeroute.net.10xdev.io/q1",
        "edgeroute.net.10xdev.io/q2",
        "edgeroute.net.10xdev.io/q3",
        "edgeroute.net.10xdev.io/r2",
        "edgeroute.net.10xdev.io/younger",
      ].sort(),
    );
    const metrics = await fetchText(`${stack.serve.url}/metrics`, stack.serve.caPem);
    expect(metrics).toMatch(
      /edge_operator_reconcile_duration_seconds_count\{kind="snapshot",result="done"\} [1-9]/,
    );
    expect(metrics).toMatch(/edge_operator_dataplane_pushes_total\{result="ok"\} [1-9]/);
    expect(cond(await getRoute(cp, "q1"), "Programmed")).toBe("True(Synced)");
  });
});

async function fetchText(url: string, caPem: string): Promise<string> {
  const { httpsJson } = await import("../harness/operator-stack.js");
  const r = await httpsJson(url, caPem, "GET");
  return typeof r.body === "string" ? r.body : JSON.stringify(r.body);
}
