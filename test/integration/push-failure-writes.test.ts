// Status writes under failing pushes (BENCHMARKS.md, Fault suite): a data plane that keeps refusing snapshots costs no write
// per route per retry. The server runs the envoy-configmap sink; two routes big
// enough to push the snapshot past a ConfigMap's 1 MiB make every push fail
// with SnapshotTooLarge, and each endpoint change makes a new snapshot whose
// failure has new words (its version and size). Routes say it once; the words
// go to the ConfigMap's events.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startControlPlane } from "../harness/control-plane.js";
import type { ControlPlane } from "../../tools/testenv/control-plane.js";
import { reconcileCall } from "../harness/reconcile-call.js";
import { startOperatorStack, SYSTEM_NAMESPACE, type OperatorStack } from "../harness/operator-stack.js";
import { httpsJson } from "../../tools/testenv/https-json.js";
import { apply, cond, endpointSlice, service, v2Route } from "./routes.js";
import type { EdgeRouteV2 } from "../../src/api/types.js";

const NS = "fail";
const CONFIGMAP = "edge-xds";
/** Routes that say Synced before the data plane fails; EDGE_PUSH_FAILURE_ROUTES makes more, for BENCHMARKS.md. */
const SMALL = Number(process.env.EDGE_PUSH_FAILURE_ROUTES ?? 30);

async function metric(stack: OperatorStack, name: string): Promise<number> {
  const r = await httpsJson(`${stack.serve.url}/metrics`, stack.serve.caPem, "GET");
  let sum = 0;
  for (const line of String(r.body).split("\n"))
    if (line.startsWith(name)) sum += Number(line.split(" ").pop());
  return sum;
}

/**
 * A route of about 59 KB as a proxy receives it (under the 64 KiB a route may
 * be), on 16 hostnames: 16 rules × 8 long-path matches, about 0.9 MiB in
 * Envoy's file form, which repeats them in each host. Two are past 1 MiB.
 */
function bigRoute(name: string) {
  const long = "x".repeat(350);
  return {
    apiVersion: "net.10xdev.io/v2",
    kind: "EdgeRoute",
    metadata: { name, namespace: NS },
    spec: {
      hostnames: Array.from({ length: 16 }, (_, h) => `${name}-${h}.example.com`),
      rules: Array.from({ length: 16 }, (_, r) => ({
        matches: Array.from({ length: 8 }, (_, m) => ({
          path: { type: "PathPrefix", value: `/${r}/${m}/${long}` },
        })),
        backends: [{ name: "checkout", port: 8080 }],
      })),
    },
  };
}

describe("a failing data plane and the routes' status", () => {
  let cp: ControlPlane;
  let stack: OperatorStack;

  async function routes(): Promise<EdgeRouteV2[]> {
    const r = await cp.kubectl(["get", "edgeroutes.v2.net.10xdev.io", "-n", NS, "-o", "json"]);
    if (r.code !== 0) throw new Error(r.stderr);
    return (JSON.parse(r.stdout) as { items: EdgeRouteV2[] }).items;
  }

  /** The resourceVersion of one object, for `seen`: the server's cache answers once it has seen it. */
  async function rvOf(resource: string, name: string): Promise<string> {
    const r = await cp.kubectl([
      "get",
      resource,
      name,
      "-n",
      NS,
      "-o",
      "jsonpath={.metadata.resourceVersion}",
    ]);
    expect(r.code, r.stderr).toBe(0);
    return r.stdout.trim();
  }

  /** POST /reconcile of the snapshot, as the watcher calls it: with what was last written, seen. */
  async function reconcileSnapshot(
    seen: Record<string, string> = {},
  ): Promise<{ result: string; did: string[] }> {
    const r = await reconcileCall(
      `${stack.serve.url}/reconcile`,
      stack.serve.caPem,
      { key: "$snapshot", seen },
      stack.token,
    );
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body as { result: string; did: string[] };
  }

  beforeAll(async () => {
    cp = await startControlPlane();
    stack = await startOperatorStack(cp, {
      watcher: false,
      serveArgs: [
        "--dataplane",
        "envoy-configmap",
        "--dataplane-namespace",
        SYSTEM_NAMESPACE,
        "--dataplane-configmap",
        CONFIGMAP,
      ],
    });
    expect((await cp.kubectl(["create", "namespace", NS])).code).toBe(0);
    await apply(cp, service("checkout", NS), endpointSlice("checkout", ["10.0.0.1"], NS));
    await apply(
      cp,
      ...Array.from({ length: SMALL }, (_, i) => v2Route(`r${i}`, { namespace: NS, path: `/r${i}` })),
    );
  });
  afterAll(async () => {
    await stack?.stop();
    await cp?.stop();
  });

  it("writes each route's status once when the data plane starts failing, then never again while it fails", async () => {
    // A large set takes more than one call's write budget: call until it settles.
    for (let i = 0; i < 10 && (await routes()).some((r) => cond(r, "Programmed") !== "True(Synced)"); i++)
      await reconcileSnapshot();
    expect((await routes()).map((r) => cond(r, "Programmed"))).toEqual(Array(SMALL).fill("True(Synced)"));
    const writesSynced = await metric(stack, "edge_operator_status_writes_total");

    await apply(cp, bigRoute("big"), bigRoute("big2"));
    let first = await reconcileSnapshot({ routes: await rvOf("edgeroutes.v2.net.10xdev.io", "big2") });
    expect(first.result).toBe("requeue");
    // A large set may take more than one call's write budget.
    for (let i = 0; i < 10 && first.did.some((d) => d.includes("left for the next call")); i++)
      first = await reconcileSnapshot();
    const failing = await routes();
    expect(failing.map((r) => cond(r, "Programmed"))).toEqual(
      Array(SMALL + 2).fill("False(SnapshotTooLarge)"),
    );
    const versions = new Map(failing.map((r) => [r.metadata.name, r.metadata.resourceVersion]));
    const writesBefore = await metric(stack, "edge_operator_status_writes_total");
    const firstWrites = writesBefore - writesSynced;
    expect(firstWrites).toBe(SMALL + 2);

    // Each endpoint change is a new snapshot, refused in new words.
    const details = new Set<string>();
    const retries = 6;
    for (let i = 0; i < retries; i++) {
      await apply(cp, endpointSlice("checkout", [`10.0.1.${i + 1}`], NS));
      const again = await reconcileSnapshot({ endpointslices: await rvOf("endpointslices", "checkout-1") });
      expect(again.result).toBe("requeue");
      const detail = again.did.find((d) => d.includes("needs"));
      expect(detail, again.did.join("; ")).toMatch(/snapshot [0-9a-f]{16} needs \d+ bytes/);
      details.add(detail ?? "");
      expect(again.did.join("; ")).not.toMatch(/status written/);
    }
    expect(details.size).toBe(retries);

    const writes = (await metric(stack, "edge_operator_status_writes_total")) - writesBefore;
    const after = await routes();
    const rewritten = after.filter((r) => versions.get(r.metadata.name) !== r.metadata.resourceVersion);
    process.stdout.write(
      `push failures: ${after.length} routes, ${firstWrites} status writes when the data plane began failing, then ${retries} failing pushes with new words each: ${writes} status writes, ${rewritten.length} routes rewritten\n`,
    );
    expect(writes).toBe(0);
    expect(rewritten.map((r) => r.metadata.name)).toEqual([]);

    // The words are in one place: the ConfigMap's events, one per distinct failure.
    const ev = await cp.kubectl([
      "get",
      "events",
      "-n",
      SYSTEM_NAMESPACE,
      "--field-selector",
      `involvedObject.kind=ConfigMap,involvedObject.name=${CONFIGMAP},reason=SnapshotTooLarge`,
      "-o",
      "json",
    ]);
    expect(ev.code, ev.stderr).toBe(0);
    // Aggregated as client-go's recorder does: one Event for the repeated
    // reason, its count bumped for each failure and its message the latest.
    const events = (JSON.parse(ev.stdout) as { items: { message: string; type: string; count?: number }[] })
      .items;
    expect(events.length).toBe(1);
    expect(events[0]?.type).toBe("Warning");
    expect(events[0]?.count).toBe(retries + 1);
    expect(events[0]?.message).toMatch(/needs \d+ bytes/);
    // What `kubectl describe edgeroute` shows names where the details are, and no version or size.
    const condition = after[0]?.status?.conditions?.find((c) => c.type === "Programmed");
    expect(condition?.message).toContain(`ConfigMap ${SYSTEM_NAMESPACE}/${CONFIGMAP}`);
    expect(condition?.message).not.toMatch(/[0-9a-f]{16}|needs \d+/);
  });

  it("says Synced again once the data plane takes a snapshot, and lets the big routes go", async () => {
    const del = await cp.kubectl(["delete", "edgeroute", "big", "big2", "-n", NS, "--wait=false"]);
    expect(del.code, del.stderr).toBe(0);
    const done = await reconcileSnapshot({ routes: await rvOf("edgeroutes.v2.net.10xdev.io", "big2") });
    expect(done.result).toBe("done");
    expect(done.did.join("; ")).toMatch(/released the finalizer of 2 deleted route\(s\)/);
    const now = await routes();
    expect(now.map((r) => r.metadata.name).sort()).toEqual(
      Array.from({ length: SMALL }, (_, i) => `r${i}`).sort(),
    );
    expect(now.map((r) => cond(r, "Programmed"))).toEqual(Array(SMALL).fill("True(Synced)"));
  });
});
