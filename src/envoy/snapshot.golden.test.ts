// Golden files: test/golden/snapshot/NAME.in.yaml (EdgeRoutes, Services,
// EndpointSlices) → NAME.out.json (outcomes first, then the Envoy resources).
// UPDATE_GOLDEN=1 rewrites the expected files; their diff shows what changes for users.

import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { SNAPSHOT_GOLDEN_DIR, snapshotCase, snapshotCases } from "../../test/golden/snapshot-cases.js";

describe("snapshot golden files", () => {
  const cases = snapshotCases();
  it("covers the cases the design names", () => {
    for (const name of [
      "single-route",
      "weighted-canary",
      "header-matches",
      "exact-vs-prefix",
      "wildcard-host",
      "conflict-oldest-wins",
      "partial-conflict",
      "missing-endpoints",
      "timeouts",
    ])
      expect(cases).toContain(name);
  });
  for (const name of cases) {
    it(name, () => {
      const { version, outcomes, resources } = snapshotCase(name);
      const actual = `${JSON.stringify({ version, outcomes, resources }, null, 2)}\n`;
      const file = join(SNAPSHOT_GOLDEN_DIR, `${name}.out.json`);
      if (process.env.UPDATE_GOLDEN === "1") writeFileSync(file, actual);
      expect(actual).toBe(readFileSync(file, "utf8"));
    });
  }
});
