import { spawnSync } from "node:child_process";
import { defineConfig } from "vitest/config";

// The integration suites need the real control plane, built from Go modules.
// Only outside CI, and only without Go, are they left out, and loudly.
const hasGo = spawnSync("go", ["version"], { stdio: "ignore" }).status === 0;
const skipIntegration = !hasGo && !process.env.CI;
if (skipIntegration) {
  const line =
    "!!! SKIPPING INTEGRATION TESTS: Go is not installed, and the test control plane is built from Go modules. Install Go 1.26+ to run them. !!!";
  process.stderr.write(`\n${line}\n\n`);
}

// Unit tests sit beside the code they test; the suites that need the real
// control plane live under test/ and each file starts its own control plane.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: "unit",
          include: ["src/**/*.test.ts", "test/unit/**/*.test.ts"],
          environment: "node",
          // Property and fuzz tests run thousands of cases; a shared 2-core machine needs the slack.
          testTimeout: 60_000,
          // Unit tests first, then the control-plane suites (their worker limits differ).
          sequence: { groupOrder: 0 },
        },
      },
      {
        test: {
          name: "integration",
          include: skipIntegration ? [] : ["test/integration/**/*.test.ts", "test/e2e/**/*.test.ts"],
          passWithNoTests: skipIntegration,
          environment: "node",
          globalSetup: ["test/harness/global-setup.ts"],
          testTimeout: 180_000,
          hookTimeout: 300_000,
          sequence: { groupOrder: 1 },
          // Each file starts its own apiserver; two cores carry two at once.
          fileParallelism: true,
          maxWorkers: 2,
        },
      },
    ],
  },
});
