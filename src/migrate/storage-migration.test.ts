import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { buildCrd } from "../api/crd.js";
import { KubeError } from "../kube/kube-error.js";
import { DeadlineExceeded } from "../kube/retry.js";
import {
  classifyWriteFailure,
  dryRunLine,
  isMigrated,
  planMigration,
  storageVersionHash,
  summaryLine,
  withTrimmedStoredVersions,
  type CrdStorageView,
  type MigrationPlan,
} from "./storage-migration.js";

function crd(storageVersion: "v1" | "v2", storedVersions: string[]): CrdStorageView {
  return { ...buildCrd({ storageVersion }), status: { storedVersions } };
}

function planOf(view: CrdStorageView): MigrationPlan {
  const r = planMigration(view);
  if (!r.ok) throw new Error(r.reason);
  return r.plan;
}

describe("planMigration", () => {
  it("rewrites into the storage version and trims storedVersions to it", () => {
    const plan = planOf(crd("v2", ["v1", "v2"]));
    expect(plan).toMatchObject({
      group: "net.10xdev.io",
      kind: "EdgeRoute",
      plural: "edgeroutes",
      storageVersion: "v2",
      storedVersions: ["v1", "v2"],
      trimmedStoredVersions: ["v2"],
      stale: ["v1"],
    });
    expect(isMigrated(plan)).toBe(false);
  });

  it("has nothing to do when only the storage version is stored", () => {
    expect(isMigrated(planOf(crd("v2", ["v2"])))).toBe(true);
    expect(isMigrated(planOf(crd("v1", ["v1"])))).toBe(true);
  });

  it("refuses a CRD without exactly one storage version, or one that does not serve it", () => {
    const base = crd("v2", ["v1", "v2"]);
    const none = {
      ...base,
      spec: { ...base.spec, versions: base.spec.versions.map((v) => ({ ...v, storage: false })) },
    };
    expect(planMigration(none)).toEqual({
      ok: false,
      reason: "CRD edgeroutes.net.10xdev.io has 0 storage versions, expected exactly one",
    });
    const unserved = {
      ...base,
      spec: { ...base.spec, versions: base.spec.versions.map((v) => ({ ...v, served: false })) },
    };
    expect(planMigration(unserved)).toEqual({
      ok: false,
      reason: "CRD edgeroutes.net.10xdev.io: the storage version v2 is not served",
    });
  });

  it("for any storedVersions, the trimmed list is the storage version alone and the stale list is the rest", () => {
    fc.assert(
      fc.property(
        fc.constantFrom("v1" as const, "v2" as const),
        fc.uniqueArray(fc.constantFrom("v1", "v2")),
        (storage, stored) => {
          const plan = planOf(crd(storage, stored));
          expect(plan.trimmedStoredVersions).toEqual([storage]);
          expect([...plan.stale, ...(stored.includes(storage) ? [storage] : [])].sort()).toEqual(
            [...stored].sort(),
          );
          const trimmed = withTrimmedStoredVersions(crd(storage, stored), plan);
          expect(trimmed.status?.storedVersions).toEqual([storage]);
          // The CRD as read is left alone: its resourceVersion and spec travel as the precondition.
          expect(trimmed.spec).toEqual(crd(storage, stored).spec);
        },
      ),
    );
  });
});

describe("storageVersionHash", () => {
  it("is 8 bytes of SHA-256 of group/version/kind in base64, and differs per version", () => {
    const v1 = storageVersionHash("net.10xdev.io", "v1", "EdgeRoute");
    const v2 = storageVersionHash("net.10xdev.io", "v2", "EdgeRoute");
    expect(Buffer.from(v1, "base64")).toHaveLength(8);
    expect(v1).not.toBe(v2);
    // The apiserver's value for apps/v1 Deployment, from any cluster's discovery.
    expect(storageVersionHash("apps", "v1", "Deployment")).toBe("8aSe+NMegvE=");
  });
});

describe("classifyWriteFailure", () => {
  const reset = Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });
  it.each([
    [reset, "retry"],
    [new DeadlineExceeded("no complete answer"), "retry"],
    [new Error("a bug, not the network"), "fatal"],
  ] as const)("%s → %s", (err, want) => {
    expect(classifyWriteFailure(err)).toBe(want);
  });
  it.each([
    [409, "reread"],
    [404, "gone"],
    [429, "retry"],
    [500, "retry"],
    [503, "retry"],
    [504, "retry"],
    [400, "fatal"],
    [403, "fatal"],
    [422, "fatal"],
  ] as const)("%i → %s", (status, want) => {
    expect(classifyWriteFailure(new KubeError(status, "", `${status}`))).toBe(want);
  });
});

describe("lines", () => {
  const plan = planOf(crd("v2", ["v1", "v2"]));
  it("summarizes a run in one line", () => {
    const line = summaryLine(plan, { rewritten: 500, conflicts: 2, gone: 1, restarts: 0 }, 2.5);
    expect(line).toBe(
      "migrated 500 EdgeRoutes to net.10xdev.io/v2 in 2.5 s (200/s; 2 conflicts re-read, 1 deleted meanwhile); status.storedVersions [v1, v2] → [v2]",
    );
    expect(line).not.toContain("\n");
  });
  it("says what a dry run would do", () => {
    expect(dryRunLine(plan, 500, 3)).toBe(
      "dry run: would rewrite 500 EdgeRoutes in 3 namespaces to net.10xdev.io/v2, then set status.storedVersions [v1, v2] → [v2]; nothing was written",
    );
    expect(dryRunLine(planOf(crd("v2", ["v2"])), 0, 0)).toMatch(/^dry run: nothing to migrate/);
  });
});
