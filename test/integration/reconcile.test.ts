// The lab's lifecycle on a real apiserver, with the server and the watcher as
// processes and kubectl as the user. Each test works in a namespace of its own,
// with hostnames of its own, and looks only at its own routes in the data
// plane, so the tests pass in any order (`vitest --sequence.shuffle`).

import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startControlPlane } from "../harness/control-plane.js";
import type { ControlPlane } from "../../tools/testenv/control-plane.js";
import { startCli } from "../../tools/testenv/operator.js";
import { startOperatorStack, type OperatorStack } from "../harness/operator-stack.js";
import { sleep, waitFor } from "../../tools/testenv/process.js";
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
  // A test that made pushes fail leaves them failing for nobody else.
  afterEach(async () => {
    await stack?.failNextPush(0);
  });

  /** A namespace for one test, with the Service `checkout` in it. */
  const fresh = async (ns: string): Promise<string> => {
    const made = await cp.kubectl(["create", "namespace", ns]);
    expect(made.code, made.stderr).toBe(0);
    await apply(cp, service("checkout", ns));
    return ns;
  };
  /** A route in `ns`, on a hostname no other test uses. */
  const route = (name: string, ns: string, opts: { path?: string; host?: string; service?: string } = {}) =>
    v2Route(name, { namespace: ns, host: opts.host ?? `${name}.${ns}.example.com`, ...opts });
  /** The keys of `ns`'s routes the data plane serves. */
  const servedIn = async (ns: string): Promise<string[]> =>
    (await stack.dataPlane()).routes.filter((k) => k.startsWith(`${ns}/`));

  it("self-heals: ServiceNotFound first, then Valid and Synced when the Service appears, with no edit of the route", async () => {
    const ns = "self-heal";
    expect((await cp.kubectl(["create", "namespace", ns])).code).toBe(0);
    await apply(cp, route("r1", ns));
    const before = await waitForConditions(cp, "r1", "False(ServiceNotFound)", "False(Pending)", ns);
    expect(before.status?.conditions?.find((c) => c.type === "Accepted")?.message).toContain(
      `${ns}/checkout`,
    );
    expect(await servedIn(ns)).toEqual([]);
    // The route key and the snapshot key judge the route the same way, word for
    // word: reconciling it again writes nothing.
    for (const key of [`${ns}/r1`, "$snapshot", `${ns}/r1`, "$snapshot"]) {
      expect((await stack.reconcile(key)).status).toBe(200);
    }
    expect((await getRoute(cp, "r1", ns))?.metadata.resourceVersion).toBe(before.metadata.resourceVersion);

    await apply(cp, service("checkout", ns));
    const after = await waitForConditions(cp, "r1", "True(Valid)", "True(Synced)", ns);
    expect(after.metadata.generation).toBe(before.metadata.generation);
    expect(after.status?.observedGeneration).toBe(after.metadata.generation);
    expect(await servedIn(ns)).toEqual([`${ns}/r1`]);
  });

  it("is idempotent: five reconciles of unchanged state push nothing and write nothing", async () => {
    const ns = await fresh("idempotent");
    await apply(cp, route("r1", ns));
    await waitForConditions(cp, "r1", "True(Valid)", "True(Synced)", ns);
    // Whatever an earlier test left in motion settles first.
    await waitFor("the snapshot to be unchanged", async () => {
      const snap = await stack.reconcile("$snapshot");
      return (snap.body as { did?: string[] }).did?.join(" ").includes("unchanged; nothing to write")
        ? true
        : undefined;
    });
    const before = await getRoute(cp, "r1", ns);
    const pushes = (await stack.dataPlane()).pushes;
    for (let i = 0; i < 5; i++) {
      const one = await stack.reconcile(`${ns}/r1`);
      expect(one.status).toBe(200);
      const snap = await stack.reconcile("$snapshot");
      expect(snap.status).toBe(200);
      expect((snap.body as { did: string[] }).did.join(" ")).toMatch(/unchanged; nothing to write/);
    }
    expect((await stack.dataPlane()).pushes).toBe(pushes);
    const after = await getRoute(cp, "r1", ns);
    expect(after?.metadata.resourceVersion).toBe(before?.metadata.resourceVersion);
  });

  it("turns away callers without credentials (401) or without the RBAC grant (403)", async () => {
    const none = await stack.reconcile("$snapshot", "");
    expect(none.status).toBe(401);
    const bad = await stack.reconcile("$snapshot", "not-a-token");
    expect(bad.status).toBe(401);
    const ns = await fresh("intruders");
    const other = await cp.kubectl(["create", "serviceaccount", "intruder", "-n", ns]);
    expect(other.code, other.stderr).toBe(0);
    const token = (await cp.kubectl(["create", "token", "intruder", "-n", ns])).stdout.trim();
    const forbidden = await stack.reconcile("$snapshot", token);
    expect(forbidden.status).toBe(403);
    expect(JSON.stringify(forbidden.body)).toContain("may not call /reconcile");
  });

  it("rebuilds the whole set: deleting r1 leaves exactly r2 in the data plane", async () => {
    const ns = await fresh("rebuild");
    await apply(cp, route("r1", ns));
    await apply(cp, v1Route("r2", { namespace: ns, host: `r2.${ns}.example.com` }));
    await waitForConditions(cp, "r1", "True(Valid)", "True(Synced)", ns);
    await waitForConditions(cp, "r2", "True(Valid)", "True(Synced)", ns);
    expect(await servedIn(ns)).toEqual([`${ns}/r1`, `${ns}/r2`]);
    const del = await cp.kubectl(["delete", "edgeroute", "r1", "-n", ns, "--wait=true", "--timeout=30s"]);
    expect(del.code, del.stderr).toBe(0);
    expect(await getRoute(cp, "r1", ns)).toBeUndefined();
    expect(await servedIn(ns)).toEqual([`${ns}/r2`]);
  });

  it("says Programmed only after the data plane took the push, and retries a failed push", async () => {
    const ns = await fresh("push-fails");
    await stack.failNextPush(1_000_000);
    await apply(cp, route("r3", ns));
    const failed = await waitForConditions(cp, "r3", "True(Valid)", "False(PushFailed)", ns);
    expect(failed.status?.conditions?.find((c) => c.type === "Programmed")?.message).toContain(
      "refuses pushes",
    );
    expect(await servedIn(ns)).not.toContain(`${ns}/r3`);
    // The watcher retries with backoff; once the data plane takes the push, r3 says so.
    await stack.failNextPush(0);
    await waitForConditions(cp, "r3", "True(Valid)", "True(Synced)", ns, 60_000);
    expect((await stack.dataPlane()).failures).toBeGreaterThanOrEqual(1);
    expect(await servedIn(ns)).toContain(`${ns}/r3`);
  });

  it("holds a deleted route behind its finalizer until the deprogramming push, says DeprogramStuck past its bound, then lets it go", async () => {
    const ns = await fresh("deprogram");
    await apply(cp, route("r3", ns), route("r4", ns));
    await waitForConditions(cp, "r3", "True(Valid)", "True(Synced)", ns);
    await stack.failNextPush(1_000_000);
    const del = await cp.kubectl(["delete", "edgeroute", "r3", "-n", ns, "--wait=false"]);
    expect(del.code, del.stderr).toBe(0);
    const terminating = await waitFor("r3 to be Terminating", async () => {
      const r = await getRoute(cp, "r3", ns);
      return r?.metadata.deletionTimestamp ? r : undefined;
    });
    expect(terminating.metadata.finalizers).toContain("net.10xdev.io/deprogram");
    // The data plane still routes to r3 while the push fails, so r3 must stay;
    // past --deprogram-timeout (3s here) it says so, with a Warning event.
    const stuck = await waitForConditions(cp, "r3", "True(Valid)", "False(DeprogramStuck)", ns, 30_000);
    expect(stuck.metadata.deletionTimestamp).toBeDefined();
    expect(await servedIn(ns)).toContain(`${ns}/r3`);
    const events = await cp.kubectl([
      "get",
      "events",
      "-n",
      ns,
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
    await cp.kubectl(["annotate", "service", "checkout", "-n", ns, `poke=${Date.now()}`, "--overwrite"]);
    await waitFor(
      "r3 to be gone",
      async () => ((await getRoute(cp, "r3", ns)) === undefined ? true : undefined),
      90_000,
      200,
    );
    expect(await servedIn(ns)).toEqual([`${ns}/r4`]);
    await waitForConditions(cp, "r4", "True(Valid)", "True(Synced)", ns);
  });

  it("lets the break-glass release a stuck finalizer by hand, and records why", async () => {
    const ns = await fresh("break-glass");
    await apply(cp, route("stuck", ns), route("bystander", ns));
    await waitForConditions(cp, "stuck", "True(Valid)", "True(Synced)", ns);
    await stack.failNextPush(1_000_000);
    expect((await cp.kubectl(["delete", "edgeroute", "stuck", "-n", ns, "--wait=false"])).code).toBe(0);
    await waitForConditions(cp, "stuck", "True(Valid)", "False(DeprogramStuck)", ns, 30_000);

    const bad = startCli("finalizer", ["finalizer", "release", `${ns}/stuck`, "--kubeconfig", cp.kubeconfig]);
    expect(await bad.exited).toBe(2);
    expect(bad.output()).toContain("--reason is required");

    const release = startCli("finalizer", [
      "finalizer",
      "release",
      `${ns}/stuck`,
      "--reason",
      "data plane replaced during an incident",
      "--kubeconfig",
      cp.kubeconfig,
    ]);
    expect(await release.exited, release.output()).toBe(0);
    expect(release.output()).toContain(`edgeroute ${ns}/stuck: finalizer net.10xdev.io/deprogram released`);
    await waitFor("stuck to be gone", async () =>
      (await getRoute(cp, "stuck", ns)) === undefined ? true : undefined,
    );
    const events = await cp.kubectl([
      "get",
      "events",
      "-n",
      ns,
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
    await cp.kubectl(["annotate", "service", "checkout", "-n", ns, `poke=${Date.now()}`, "--overwrite"]);
    await waitForConditions(cp, "bystander", "True(Valid)", "True(Synced)", ns, 60_000);
  });

  it("follows endpoint churn without any edit of the route", async () => {
    const ns = await fresh("endpoints");
    await apply(cp, route("r2", ns));
    const before = await waitForConditions(cp, "r2", "True(Valid)", "True(Synced)", ns);
    const endpointsIn = async (): Promise<string[]> =>
      Object.entries((await stack.dataPlane()).endpoints)
        .filter(([cluster]) => cluster.startsWith(`${ns}/`))
        .flatMap(([, eps]) => eps);
    await apply(cp, endpointSlice("checkout", ["10.1.0.1", "10.1.0.2"], ns));
    await waitFor("the endpoints to reach the data plane", async () => {
      const eps = await endpointsIn();
      return eps.includes("10.1.0.1:8080") && eps.includes("10.1.0.2:8080") ? true : undefined;
    });
    await apply(cp, endpointSlice("checkout", ["10.1.0.3"], ns));
    await waitFor("the endpoints to change", async () => {
      const eps = await endpointsIn();
      return eps.length === 1 && eps[0] === "10.1.0.3:8080" ? true : undefined;
    });
    const after = await getRoute(cp, "r2", ns);
    expect(after?.metadata.generation).toBe(before.metadata.generation);
  });

  it("resolves conflicts oldest-wins, and promotes the younger route when the older goes", async () => {
    const ns = await fresh("conflicts");
    const host = `shop.${ns}.example.com`;
    await apply(cp, route("older", ns, { host, path: "/cart" }));
    await waitForConditions(cp, "older", "True(Valid)", "True(Synced)", ns);
    // creationTimestamp has one-second resolution: make the order unambiguous.
    await sleep(1100);
    await apply(cp, route("younger", ns, { host, path: "/cart" }));
    const younger = await waitForConditions(cp, "younger", "False(Conflicted)", "False(Pending)", ns);
    expect(younger.status?.conditions?.find((c) => c.type === "Accepted")?.message).toContain(`${ns}/older`);
    expect(await servedIn(ns)).toEqual([`${ns}/older`]);

    const del = await cp.kubectl(["delete", "edgeroute", "older", "-n", ns, "--wait=true", "--timeout=30s"]);
    expect(del.code, del.stderr).toBe(0);
    await waitForConditions(cp, "younger", "True(Valid)", "True(Synced)", ns);
    expect(await servedIn(ns)).toEqual([`${ns}/younger`]);
  });

  it("processes the queue: every route converges and the metrics say so", async () => {
    const ns = await fresh("queue");
    const names = ["q1", "q2", "q3"];
    await apply(cp, ...names.map((name) => route(name, ns)));
    for (const name of names) await waitForConditions(cp, name, "True(Valid)", "True(Synced)", ns);
    const listed = await cp.kubectl(["get", "edgeroutes", "-n", ns, "-o", "name"]);
    expect(listed.stdout.trim().split("\n").sort()).toEqual(names.map((n) => `edgeroute.net.10xdev.io/${n}`));
    expect(await servedIn(ns)).toEqual(names.map((n) => `${ns}/${n}`));
    const metrics = await fetchText(`${stack.serve.url}/metrics`, stack.serve.caPem);
    expect(metrics).toMatch(
      /edge_operator_reconcile_duration_seconds_count\{kind="snapshot",result="done"\} [1-9]/,
    );
    expect(metrics).toMatch(/edge_operator_dataplane_pushes_total\{result="ok"\} [1-9]/);
    expect(cond(await getRoute(cp, "q1", ns), "Programmed")).toBe("True(Synced)");
  });

  it("programs an edit of a v1 object's v2-spec annotation alone, which moves no generation", async () => {
    const ns = await fresh("annotation");
    await apply(cp, service("cart", ns));
    const twoRules = route("annotated", ns, { path: "/a" });
    twoRules.spec.rules.push({
      matches: [{ path: { type: "PathPrefix", value: "/b" } }],
      backends: [{ name: "cart", port: 8080 }],
    });
    await apply(cp, twoRules);
    const synced = await waitForConditions(cp, "annotated", "True(Valid)", "True(Synced)", ns);
    const clusters = async () =>
      Object.keys((await stack.dataPlane()).endpoints)
        .filter((c) => c.startsWith(`${ns}/`))
        .sort();
    expect(await clusters()).toEqual([`${ns}/cart:8080`, `${ns}/checkout:8080`]);

    // Stored as v1, the second rule lives in the annotation; a v1 client edits
    // only that, dropping the rule.
    const v1 = await cp.kubectl(["get", "edgeroutes.v1.net.10xdev.io", "annotated", "-n", ns, "-o", "json"]);
    expect(v1.code, v1.stderr).toBe(0);
    const annotations = (JSON.parse(v1.stdout) as { metadata: { annotations?: Record<string, string> } })
      .metadata.annotations;
    const annotated = JSON.parse(annotations?.["net.10xdev.io/v2-spec"] ?? "null") as typeof twoRules.spec;
    expect(annotated.rules).toHaveLength(2);
    const oneRule = JSON.stringify({ ...annotated, rules: annotated.rules.slice(0, 1) });
    const before = await stack.dataPlane();
    const edit = await cp.kubectl([
      "annotate",
      "edgeroutes.v1.net.10xdev.io",
      "annotated",
      "-n",
      ns,
      "--overwrite",
      `net.10xdev.io/v2-spec=${oneRule}`,
    ]);
    expect(edit.code, edit.stderr).toBe(0);
    const edited = await getRoute(cp, "annotated", ns);
    expect(edited?.spec.rules).toHaveLength(1);
    expect(edited?.metadata.generation).toBe(synced.metadata.generation);

    // Nobody reconciles by hand: the watcher sees the meaning change and the
    // data plane stops routing /b to cart (the resync is 5 minutes away).
    await waitFor(
      "the data plane to drop the removed rule",
      async () => ((await clusters()).includes(`${ns}/cart:8080`) ? undefined : true),
      15_000,
    );
    const after = await stack.dataPlane();
    expect(after.version).not.toBe(before.version);
    expect(await clusters()).toEqual([`${ns}/checkout:8080`]);
    expect(await servedIn(ns)).toEqual([`${ns}/annotated`]);
  });
});

async function fetchText(url: string, caPem: string): Promise<string> {
  const { httpsJson } = await import("../../tools/testenv/https-json.js");
  const r = await httpsJson(url, caPem, "GET");
  return typeof r.body === "string" ? r.body : JSON.stringify(r.body);
}
