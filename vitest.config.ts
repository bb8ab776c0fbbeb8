import { defineConfig } from "vitest/config";

// Unit tests sit beside the code they test; the suites that need the real
// control plane live under test/ and share one control plane per file.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: "unit",
          include: ["src/**/*.test.ts", "test/unit/**/*.test.ts"],
          environment: "node",
        },
      },
      {
        test: {
          name: "integration",
          include: ["test/integration/**/*.test.ts", "test/e2e/**/*.test.ts"],
          environment: "node",
          globalSetup: ["test/harness/global-setup.ts"],
          testTimeout: 120_000,
          hookTimeout: 300_000,
          // Each file starts its own apiserver; two cores carry two at once.
          fileParallelism: true,
          maxWorkers: 2,
          minWorkers: 1,
        },
      },
    ],
  },
});
