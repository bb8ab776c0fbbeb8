// The envoy-configmap data plane on a real apiserver: what it writes, that an
// unchanged snapshot writes nothing, that a concurrent writer is survived, and
// that a snapshot too large for a ConfigMap is refused without touching it.

import type { V1ConfigMap } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import type { KubeClient } from "../../src/kube/client.js";
import { XDS_FILES } from "../../src/envoy/envoy-resources.js";
import { buildSnapshot, type Snapshot } from "../../src/envoy/snapshot.js";
import {
  CONFIGMAP_MAX_BYTES,
  EnvoyConfigMapDataPlane,
  VERSION_ANNOTATION,
} from "../../src/dataplane/envoy-configmap.js";
import { BOOTSTRAP_FILE, envoyBootstrap } from "../../src/envoy/envoy-files.js";
import { startControlPlane, type ControlPlane } from "../harness/control-plane.js";
import { snapshotCase } from "../golden/snapshot-cases.js";
import { syntheticInput } from "../fixtures/synthetic-routes.js";

const NS = "edge-system";
let cp: ControlPlane;
let kube: KubeClient;

async function kubectl(args: string[]): Promise<string> {
  const r = await cp.kubectl(args);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(" ")} failed (${r.code}): ${r.stderr}`);
  return r.stdout;
}

/** The ConfigMap as a user sees it, through kubectl. */
async function getConfigMap(name: string): Promise<V1ConfigMap> {
  return JSON.parse(await kubectl(["get", "configmap", name, "-n", NS, "-o", "json"])) as V1ConfigMap;
}

function sink(name: string, extra: Partial<ConstructorParameters<typeof EnvoyConfigMapDataPlane>[1]> = {}) {
  return new EnvoyConfigMapDataPlane(kube, { namespace: NS, name, ...extra });
}

beforeAll(async () => {
  cp = await startControlPlane();
  kube = cp.kube();
  await kubectl(["create", "namespace", NS]);
});

afterAll(async () => {
  await cp?.stop();
});

describe("envoy-configmap data plane", () => {
  const a = snapshotCase("single-route");
  const b = snapshotCase("weighted-canary");

  it("creates the ConfigMap with the four DiscoveryResponses, the bootstrap and the version", async () => {
    const plane = sink("xds-basic");
    expect(await plane.current()).toBeUndefined();
    expect(await plane.program(a)).toEqual({ ok: true, version: a.version, pushed: true });

    const cm = await getConfigMap("xds-basic");
    expect(cm.metadata?.annotations?.[VERSION_ANNOTATION]).toBe(a.version);
    expect(Object.keys(cm.data ?? {}).sort()).toEqual([
      "cds.json",
      "eds.json",
      BOOTSTRAP_FILE,
      "lds.json",
      "rds.json",
    ]);
    const rds = JSON.parse(cm.data?.[XDS_FILES.rds] ?? "null") as unknown;
    expect(rds).toEqual({
      version_info: a.version,
      resources: a.resources.routeConfigurations,
      type_url: "type.googleapis.com/envoy.config.route.v3.RouteConfiguration",
    });
    const eds = JSON.parse(cm.data?.[XDS_FILES.eds] ?? "null") as { resources: unknown[] };
    expect(eds.resources).toEqual(a.resources.clusterLoadAssignments);
    expect(parse(cm.data?.[BOOTSTRAP_FILE] ?? "")).toEqual(envoyBootstrap());
    // A new process reads the live version from the cluster, not from memory.
    expect(await sink("xds-basic").current()).toBe(a.version);
  });

  it("writes nothing for an unchanged snapshot, and replaces it for a new one", async () => {
    const plane = sink("xds-idem");
    await plane.program(a);
    const before = (await getConfigMap("xds-idem")).metadata?.resourceVersion;
    for (let i = 0; i < 3; i++)
      expect(await plane.program(a)).toEqual({ ok: true, version: a.version, pushed: false });
    expect((await getConfigMap("xds-idem")).metadata?.resourceVersion).toBe(before);

    expect(await plane.program(b)).toEqual({ ok: true, version: b.version, pushed: true });
    const after = await getConfigMap("xds-idem");
    expect(after.metadata?.resourceVersion).not.toBe(before);
    expect(after.metadata?.annotations?.[VERSION_ANNOTATION]).toBe(b.version);
    expect(JSON.parse(after.data?.[XDS_FILES.cds] ?? "{}")).toMatchObject({
      version_info: b.version,
      resources: b.resources.clusters,
    });
  });

  it("re-reads and retries when another writer changes the ConfigMap between its read and its write", async () => {
    await sink("xds-race").program(a);
    const attempts: number[] = [];
    const plane = sink("xds-race", {
      beforeWrite: async (attempt) => {
        attempts.push(attempt);
        // Another writer, through kubectl, in the window: our resourceVersion is now stale.
        if (attempt === 1)
          await kubectl(["annotate", "configmap", "xds-race", "-n", NS, "example.com/touched=yes"]);
      },
    });
    expect(await plane.program(b)).toEqual({ ok: true, version: b.version, pushed: true });
    expect(attempts).toEqual([1, 2]);
    const cm = await getConfigMap("xds-race");
    expect(cm.metadata?.annotations).toMatchObject({
      [VERSION_ANNOTATION]: b.version,
      "example.com/touched": "yes",
    });
  });

  it("under concurrent writers, every push lands and the ConfigMap stays whole", async () => {
    const snapshots: Snapshot[] = [1, 2, 3, 4, 5, 6].map((n) =>
      buildSnapshot([], new Map(), { listener: { port: 8000 + n } }),
    );
    const results = await Promise.all(snapshots.map((s) => sink("xds-many").program(s)));
    expect(results.every((r) => r.ok)).toBe(true);
    const cm = await getConfigMap("xds-many");
    const version = cm.metadata?.annotations?.[VERSION_ANNOTATION];
    const winner = snapshots.find((s) => s.version === version);
    expect(winner).toBeDefined();
    // Every file comes from the same snapshot as the annotation.
    for (const file of Object.values(XDS_FILES))
      expect((JSON.parse(cm.data?.[file] ?? "{}") as { version_info?: string }).version_info).toBe(version);
    expect(JSON.parse(cm.data?.[XDS_FILES.lds] ?? "{}")).toMatchObject({
      resources: winner?.resources.listeners,
    });
  });

  it("refuses a snapshot over 1 MiB, says how large, and leaves the live ConfigMap as it was", async () => {
    const plane = sink("xds-big");
    await plane.program(a);
    const before = await getConfigMap("xds-big");
    const { routes, endpoints } = syntheticInput(8000);
    const big = buildSnapshot(routes, endpoints);
    const result = await plane.program(big);
    expect(result).toMatchObject({ ok: false, version: big.version, reason: "SnapshotTooLarge" });
    const size = Number(/needs (\d+) bytes/.exec(result.ok ? "" : result.message)?.[1]);
    expect(size).toBeGreaterThan(CONFIGMAP_MAX_BYTES);
    expect(result.ok ? "" : result.message).toContain(`${CONFIGMAP_MAX_BYTES}-byte limit`);
    const after = await getConfigMap("xds-big");
    expect(after.metadata?.resourceVersion).toBe(before.metadata?.resourceVersion);
    expect(after.data).toEqual(before.data);
    expect(await plane.current()).toBe(a.version);
  });

  it("creates the ConfigMap again when it was deleted", async () => {
    const plane = sink("xds-gone");
    await plane.program(a);
    await kubectl(["delete", "configmap", "xds-gone", "-n", NS]);
    expect(await plane.current()).toBeUndefined();
    expect(await plane.program(a)).toEqual({ ok: true, version: a.version, pushed: true });
    expect((await getConfigMap("xds-gone")).metadata?.annotations?.[VERSION_ANNOTATION]).toBe(a.version);
  });

  it("reports PushFailed with the apiserver's reason when it cannot write", async () => {
    const plane = new EnvoyConfigMapDataPlane(kube, { namespace: "no-such-namespace", name: "xds" });
    const result = await plane.program(a);
    expect(result).toMatchObject({ ok: false, reason: "PushFailed" });
    // The apiserver's own Status message, as a user reads it in the Programmed condition.
    expect(result.ok ? "" : result.message).toBe(
      'writing ConfigMap no-such-namespace/xds: 404: namespaces "no-such-namespace" not found',
    );
  });
});
