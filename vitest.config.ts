import { spawnSync } from "node:child_process";
import { configDefaults, defineConfig } from "vitest/config";

// The integration suites need the real control plane, built from Go modules.
// Only outside CI, and only without Go, are they left out, and loudly.
const hasGo = spawnSync("go", ["version"], { stdio: "ignore" }).status === 0;
const skipIntegration = !hasGo && !process.env.CI;
if (skipIntegration) {
  const line =
    "!!! SKIPPING INTEGRATION TESTS: Go is not installed, and the test control plane is built from Go modules. Install Go 1.26+ to run them. !!!";
  process.stderr.write(`\n${line}\n\n`);
}

// The real cluster (test/cluster) needs root on Linux. Outside CI a machine
// that cannot host it leaves those suites out, loudly; in CI they must run.
const canHostCluster = process.platform === "linux" && process.getuid?.() === 0 && hasGo;
const skipCluster = !canHostCluster && !process.env.CI;
const CLUSTER_SUITES = ["test/cluster/**/*.test.ts", "test/e2e/cluster-*.test.ts"];
if (skipCluster) {
  process.stderr.write(
    "\n!!! SKIPPING THE REAL-CLUSTER TESTS (test/cluster, test/e2e/cluster-*): they need root on Linux and Go 1.26+. !!!\n\n",
  );
}

// Unit tests sit beside the code they test; the suites that need the real
// control plane live under test/ and each file starts its own control plane.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: "unit",
          include: ["src/**/*.test.ts", "test/unit/**/*.test.ts", "tools/**/*.test.ts"],
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
          // The suites on the real cluster run in the cluster project below.
          exclude: [...configDefaults.exclude, ...CLUSTER_SUITES],
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
      {
        test: {
          name: "cluster",
          include: skipCluster ? [] : ["test/cluster/**/*.test.ts", "test/e2e/cluster-*.test.ts"],
          passWithNoTests: skipCluster,
          environment: "node",
          globalSetup: skipCluster ? [] : ["test/harness/global-setup.ts", "test/harness/cluster-setup.ts"],
          testTimeout: 300_000,
          hookTimeout: 600_000,
          // Last, alone: one cluster per machine (fixed paths and addresses), one file at a time.
          sequence: { groupOrder: 2 },
          fileParallelism: false,
          maxWorkers: 1,
        },
      },
    ],
  },
});
