// The envoy-configmap data plane on a real apiserver: what it writes, that an
// unchanged snapshot writes nothing, that a concurrent writer is survived, that
// among concurrent pushes the snapshot read last wins and an older one never
// lands after it, and that a snapshot too large for a ConfigMap is refused
// without touching it.

import type { V1ConfigMap } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import type { KubeClient } from "../../src/kube/client.js";
import { XDS_FILES } from "../../src/envoy/envoy-resources.js";
import { buildSnapshot, type Snapshot } from "../../src/translate/snapshot.js";
import {
  CONFIGMAP_MAX_BYTES,
  EnvoyConfigMapDataPlane,
  NO_TLS_MESSAGE,
  READ_REVISION_ANNOTATION,
  VERSION_ANNOTATION,
} from "../../src/dataplane/envoy-configmap.js";
import { failureDetail, type ProgramResult } from "../../src/dataplane/dataplane.js";
import type { ReadRevision } from "../../src/dataplane/read-revision.js";
import { BOOTSTRAP_FILE, envoyBootstrap } from "../../src/translate/envoy-files.js";
import { startControlPlane } from "../harness/control-plane.js";
import type { ControlPlane } from "../../tools/testenv/control-plane.js";
import { waitFor } from "../../tools/testenv/process.js";
import { goldenSnapshot } from "../golden/xds-cases.js";
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

/** Every version the ConfigMap takes, in the order the apiserver stored them (a watch's order). */
async function watchVersions(name: string): Promise<{ versions: string[]; stop(): void }> {
  const versions: string[] = [];
  const abort = new AbortController();
  const res = await kube.stream(
    `/api/v1/namespaces/${NS}/configmaps?watch=1&fieldSelector=${encodeURIComponent(`metadata.name=${name}`)}`,
    { signal: abort.signal },
  );
  res.setEncoding("utf8");
  let rest = "";
  res.on("data", (chunk: string) => {
    const lines = (rest + chunk).split("\n");
    rest = lines.pop() ?? "";
    for (const line of lines) {
      if (line.trim() === "") continue;
      const ev = JSON.parse(line) as { object?: V1ConfigMap };
      const v = ev.object?.metadata?.annotations?.[VERSION_ANNOTATION];
      if (v !== undefined && v !== versions.at(-1)) versions.push(v);
    }
  });
  res.on("error", () => undefined);
  return { versions, stop: () => abort.abort() };
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
  const a = goldenSnapshot("single-route");
  const b = goldenSnapshot("weighted-canary");

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

  it("serves no TLS: a route's HTTPS hosts stay out of the files and the route hears it is not served", async () => {
    const snap = goldenSnapshot("tls-single-host");
    const tlsKeys = snap.outcomes.filter((o) => (o.tls?.served.length ?? 0) > 0).map((o) => o.key);
    expect(tlsKeys.length).toBeGreaterThan(0);
    const plane = sink("xds-tls");
    expect((await plane.program(snap)).ok).toBe(true);
    const data = (await getConfigMap("xds-tls")).data ?? {};
    expect(Object.values(data).join("\n")).not.toContain("PRIVATE KEY");
    const standing = plane.standing(snap.version);
    for (const key of tlsKeys)
      expect(standing?.live(key)).toEqual({ ok: false, reason: "Rejected", message: NO_TLS_MESSAGE });
    // Without TLS routes the push's verdict speaks for every route.
    const plain = goldenSnapshot("single-route");
    await plane.program(plain);
    expect(plane.standing(plain.version)).toBeUndefined();
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

  it("under concurrent writers, the snapshot read last wins, and none read earlier lands after it", async () => {
    const at = (n: number): ReadRevision => ({
      routes: String(100 + n),
      services: String(100 + n),
      endpointslices: String(100 + n),
    });
    for (let round = 0; round < 4; round++) {
      const name = `xds-many-${round}`;
      const snapshots: Snapshot[] = [1, 2, 3, 4, 5, 6].map((n) =>
        buildSnapshot([], new Map(), { listener: { port: 8000 + 10 * round + n } }),
      );
      const watch = await watchVersions(name);
      // Each writer re-reads after every conflict, so every order of arrival is tried.
      const results: ProgramResult[] = await Promise.all(
        snapshots.map((s, i) => sink(name).program(s, { read: at(i + 1) })),
      );
      // The newest read always lands; the others either landed before it or were refused.
      expect(results[5]).toEqual({ ok: true, version: snapshots[5]?.version, pushed: true });
      for (const [i, r] of results.entries())
        if (!r.ok) expect(r, `push ${i + 1}`).toMatchObject({ reason: "Superseded" });
      // In the order the apiserver stored them, the reads only ever move forward.
      await waitFor("the watch to see the last write", async () =>
        watch.versions.at(-1) === snapshots[5]?.version ? true : undefined,
      );
      watch.stop();
      const order = watch.versions.map((v) => snapshots.findIndex((s) => s.version === v) + 1);
      expect(order).toEqual([...order].sort((x, y) => x - y));
      expect(order.filter((n, i) => n === order[i - 1])).toEqual([]);

      const cm = await getConfigMap(name);
      const winner = snapshots[5] as Snapshot;
      expect(cm.metadata?.annotations?.[VERSION_ANNOTATION]).toBe(winner.version);
      expect(cm.metadata?.annotations?.[READ_REVISION_ANNOTATION]).toBe(
        "routes=106,services=106,endpointslices=106",
      );
      // Every file comes from the same snapshot as the annotation.
      for (const file of Object.values(XDS_FILES))
        expect((JSON.parse(cm.data?.[file] ?? "{}") as { version_info?: string }).version_info).toBe(
          winner.version,
        );
      expect(JSON.parse(cm.data?.[XDS_FILES.lds] ?? "{}")).toMatchObject({
        resources: winner.resources.listeners,
      });
      // A late writer with an older read finds it and leaves it.
      const late = await sink(name).program(snapshots[0] as Snapshot, { read: at(1) });
      expect(late).toMatchObject({ ok: false, reason: "Superseded" });
      expect((await getConfigMap(name)).metadata?.resourceVersion).toBe(cm.metadata?.resourceVersion);
    }
  });

  it("refuses a snapshot read earlier in any one type, and records a later read of the same snapshot when fencing", async () => {
    const plane = sink("xds-fence");
    const read = (routes: string, services: string, endpointslices: string): ReadRevision => ({
      routes,
      services,
      endpointslices,
    });
    expect(await plane.program(a, { read: read("50", "50", "50") })).toMatchObject({
      ok: true,
      pushed: true,
    });
    // Newer routes, older endpoints: not newer.
    expect(await plane.program(b, { read: read("60", "60", "49") })).toMatchObject({ reason: "Superseded" });
    const before = (await getConfigMap("xds-fence")).metadata?.resourceVersion;
    // The same snapshot read later writes nothing unless asked to fence.
    expect(await plane.program(a, { read: read("70", "70", "70") })).toMatchObject({
      ok: true,
      pushed: false,
    });
    expect((await getConfigMap("xds-fence")).metadata?.resourceVersion).toBe(before);
    expect(await plane.program(a, { read: read("70", "70", "70"), fence: true })).toMatchObject({
      ok: true,
      pushed: false,
    });
    const fenced = await getConfigMap("xds-fence");
    expect(fenced.metadata?.annotations?.[READ_REVISION_ANNOTATION]).toBe(
      "routes=70,services=70,endpointslices=70",
    );
    expect(fenced.metadata?.annotations?.[VERSION_ANNOTATION]).toBe(a.version);
    // After the fence, a snapshot read at 60 no longer lands.
    expect(await plane.program(b, { read: read("60", "60", "60") })).toMatchObject({ reason: "Superseded" });
    expect(await plane.current()).toBe(a.version);
  });

  it("refuses a snapshot over 1 MiB, says how large, and leaves the live ConfigMap as it was", async () => {
    const plane = sink("xds-big");
    await plane.program(a);
    const before = await getConfigMap("xds-big");
    const { routes, endpoints } = syntheticInput(8000);
    const big = buildSnapshot(routes, endpoints);
    const result = await plane.program(big);
    expect(result).toMatchObject({ ok: false, version: big.version, reason: "SnapshotTooLarge" });
    const detail = failureDetail(result) ?? "";
    const size = Number(/needs (\d+) bytes/.exec(detail)?.[1]);
    expect(size).toBeGreaterThan(CONFIGMAP_MAX_BYTES);
    expect(detail).toContain(`${CONFIGMAP_MAX_BYTES}-byte limit`);
    // What routes say holds no size or version: the same words for every snapshot too large.
    const other = await plane.program(buildSnapshot(syntheticInput(8100).routes, endpoints));
    expect(other).toMatchObject({ ok: false, reason: "SnapshotTooLarge" });
    expect(other.ok ? "" : other.message).toBe(result.ok ? "-" : result.message);
    expect(result.ok ? "" : result.message).not.toContain(big.version);
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
    // The apiserver's own Status message, as a user reads it in the ConfigMap's events.
    expect(failureDetail(result)).toBe(
      'writing ConfigMap no-such-namespace/xds: 404: namespaces "no-such-namespace" not found',
    );
  });
});
