// The migrator's answers to what the real apiserver cannot be made to do on
// demand in a test: a list whose continue token expires (410) in the middle of
// a pass, a write that meets a conflict or a deletion at a chosen moment, a
// CRD that changes under a run. The apiserver here is a small in-memory model
// of the few endpoints migrate calls; the whole path on the real control plane
// is test/integration/migration.test.ts.

import { describe, expect, it } from "vitest";
import { buildCrd } from "../api/crd.js";
import { CRD_NAME } from "../api/types.js";
import { KubeError, type KubeClient, type RequestOptions } from "../kube/client.js";
import { migrateStorage, MigrationError, type MigrateOptions } from "./migrator.js";
import { storageVersionHash } from "./storage-migration.js";

interface Obj {
  apiVersion: string;
  metadata: { name: string; namespace: string; uid: string; resourceVersion: string };
  spec: { n: number };
}

const CRD_PATH = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${CRD_NAME}`;

/** An apiserver holding `count` EdgeRoutes, stored as v1, with storage switched to v2. */
function apiserver(count: number) {
  let rv = 1;
  const store = new Map<string, Obj & { storedAs: string }>();
  for (let i = 0; i < count; i++) {
    const name = `r${String(i).padStart(3, "0")}`;
    store.set(`ns/${name}`, {
      apiVersion: "net.10xdev.io/v2",
      metadata: { name, namespace: "ns", uid: `u${i}`, resourceVersion: String(rv++) },
      spec: { n: i },
      storedAs: "v1",
    });
  }
  let crd = {
    ...buildCrd({ storageVersion: "v2" }),
    metadata: { name: CRD_NAME, resourceVersion: "1", generation: 2 },
    status: { storedVersions: ["v1", "v2"] },
  };
  const hooks: {
    /** Called before each list page; may throw. */
    beforeList?: (cont: string | undefined) => void;
    /** Called before each object write; may change the store. */
    beforePut?: (key: string) => void;
  } = {};
  const calls: string[] = [];

  const fail = (status: number, body: unknown = {}): never => {
    throw new KubeError(status, "", `${status}`, body);
  };
  const client: KubeClient = {
    async json<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
      calls.push(`${method} ${path}`);
      if (method === "GET" && path === CRD_PATH) return structuredClone(crd) as T;
      if (method === "PUT" && path === `${CRD_PATH}/status`) {
        const body = opts.body as typeof crd;
        if (body.metadata.resourceVersion !== crd.metadata.resourceVersion) fail(409);
        crd = { ...crd, status: body.status, metadata: { ...crd.metadata, resourceVersion: String(rv++) } };
        return crd as T;
      }
      if (method === "GET" && path === "/apis/net.10xdev.io/v2") {
        return {
          resources: [
            {
              name: "edgeroutes",
              storageVersionHash: storageVersionHash("net.10xdev.io", "v2", "EdgeRoute"),
            },
          ],
        } as T;
      }
      if (method === "GET" && path === "/apis/net.10xdev.io/v2/edgeroutes") {
        const cont = opts.query?.continue as string | undefined;
        hooks.beforeList?.(cont);
        const keys = [...store.keys()].sort();
        const start = cont ? keys.findIndex((k) => k > cont) : 0;
        const limit = Number(opts.query?.limit);
        const slice = start < 0 ? [] : keys.slice(start, start + limit);
        const more = start >= 0 && start + limit < keys.length;
        return {
          metadata: more
            ? { continue: slice[slice.length - 1], remainingItemCount: keys.length - start - limit }
            : {},
          items: slice.map((k) => {
            const { storedAs: _s, ...o } = store.get(k) as Obj & { storedAs: string };
            return structuredClone(o);
          }),
        } as T;
      }
      const m = /^\/apis\/net\.10xdev\.io\/v2\/namespaces\/([^/]+)\/edgeroutes\/([^/]+)$/.exec(path);
      if (m) {
        const key = `${m[1]}/${m[2]}`;
        if (method === "PUT") hooks.beforePut?.(key);
        const cur = store.get(key);
        if (!cur) return fail(404);
        if (method === "GET") {
          const { storedAs: _s, ...o } = cur;
          return structuredClone(o) as T;
        }
        const body = opts.body as Obj;
        if (body.metadata.resourceVersion !== cur.metadata.resourceVersion) return fail(409);
        store.set(key, {
          ...body,
          metadata: { ...body.metadata, resourceVersion: String(rv++) },
          storedAs: "v2",
        });
        return body as T;
      }
      return fail(404);
    },
    stream() {
      throw new Error("not used");
    },
  };
  const touch = (key: string): void => {
    const cur = store.get(key) as Obj & { storedAs: string };
    store.set(key, {
      ...cur,
      spec: { n: -1 },
      metadata: { ...cur.metadata, resourceVersion: String(rv++) },
      storedAs: "v2",
    });
  };
  return {
    client,
    store,
    hooks,
    calls,
    touch,
    crd: () => crd,
    setCrdGeneration: (g: number) => (crd = { ...crd, metadata: { ...crd.metadata, generation: g } }),
  };
}

function options(log: string[] = []): MigrateOptions {
  return {
    crdName: CRD_NAME,
    dryRun: false,
    pageSize: 10,
    concurrency: 3,
    progressEvery: 1000,
    progressIntervalMs: 60_000,
    discoveryTimeoutMs: 1000,
    log: (l) => log.push(l),
  };
}

const storedAs = (api: ReturnType<typeof apiserver>) => [...api.store.values()].map((o) => o.storedAs);

describe("migrateStorage", () => {
  it("goes on from the 410's continue token when the list expires mid-pass, and rewrites every object once", async () => {
    const api = apiserver(35);
    let expired = false;
    api.hooks.beforeList = (cont) => {
      if (cont === "ns/r019" && !expired) {
        expired = true;
        throw new KubeError(410, "Expired", "410 the continue token is too old", {
          metadata: { continue: "ns/r019" },
        });
      }
    };
    const log: string[] = [];
    const out = await migrateStorage(api.client, options(log));
    expect(out.kind).toBe("migrated");
    expect(out.kind === "migrated" && out.tally).toEqual({
      rewritten: 35,
      conflicts: 0,
      gone: 0,
      restarts: 1,
    });
    expect(log).toContain("migrate: the list expired (410); going on from the next object");
    expect(storedAs(api).every((s) => s === "v2")).toBe(true);
    expect(api.calls.filter((c) => c.startsWith("PUT /apis/net.10xdev.io")).length).toBe(35);
    expect(api.crd().status.storedVersions).toEqual(["v2"]);
  });

  it("starts over when the 410 carries no token", async () => {
    const api = apiserver(25);
    let expired = false;
    api.hooks.beforeList = (cont) => {
      if (cont === "ns/r019" && !expired) {
        expired = true;
        throw new KubeError(410, "Expired", "410", {});
      }
    };
    const out = await migrateStorage(api.client, options());
    expect(out.kind === "migrated" && out.tally).toEqual({
      rewritten: 25,
      conflicts: 0,
      gone: 0,
      restarts: 1,
    });
    expect(storedAs(api).every((s) => s === "v2")).toBe(true);
  });

  it("re-reads on a conflict and keeps the other writer's change; skips an object deleted meanwhile", async () => {
    const api = apiserver(20);
    const touched = new Set<string>();
    api.hooks.beforePut = (key) => {
      if (key === "ns/r004" && !touched.has(key)) {
        touched.add(key);
        api.touch(key);
      }
      if (key === "ns/r007") api.store.delete(key);
    };
    const out = await migrateStorage(api.client, options());
    expect(out.kind === "migrated" && out.tally).toEqual({
      rewritten: 19,
      conflicts: 1,
      gone: 1,
      restarts: 0,
    });
    expect(api.store.get("ns/r004")?.spec).toEqual({ n: -1 });
    expect(api.store.has("ns/r007")).toBe(false);
    expect(api.crd().status.storedVersions).toEqual(["v2"]);
  });

  it("trims nothing when a write fails, and says which route", async () => {
    const api = apiserver(20);
    api.hooks.beforePut = (key) => {
      if (key === "ns/r012")
        throw new KubeError(
          400,
          "BadRequest",
          'PUT x: 400 admission webhook "validate.edgeroutes.net.10xdev.io" denied the request',
        );
    };
    await expect(migrateStorage(api.client, options())).rejects.toThrow(
      new MigrationError(
        'rewriting EdgeRoute ns/r012 failed: PUT x: 400 admission webhook "validate.edgeroutes.net.10xdev.io" denied the request',
      ),
    );
    expect(api.crd().status.storedVersions).toEqual(["v1", "v2"]);
  });

  it("trims nothing when the CRD changed during the run", async () => {
    const api = apiserver(5);
    api.hooks.beforePut = () => api.setCrdGeneration(3);
    await expect(migrateStorage(api.client, options())).rejects.toThrow(
      /the CRD changed during the migration \(generation 2 → 3\); run migrate again/,
    );
    expect(api.crd().status.storedVersions).toEqual(["v1", "v2"]);
  });

  it("a dry run counts and writes nothing", async () => {
    const api = apiserver(25);
    const out = await migrateStorage(api.client, { ...options(), dryRun: true });
    expect(out).toMatchObject({ kind: "dry-run", count: 25 });
    expect(api.calls.filter((c) => c.startsWith("PUT"))).toEqual([]);
  });
});
