import { describe, expect, it } from "vitest";
import { UsageError } from "./command.js";
import { parseMigrateArgs } from "./migrate.js";

describe("edge-operator migrate arguments", () => {
  it("has defaults for a large cluster", () => {
    expect(parseMigrateArgs([])).toEqual({
      kubeconfig: undefined,
      options: {
        crdName: "edgeroutes.net.10xdev.io",
        dryRun: false,
        pageSize: 500,
        concurrency: 8,
        progressEvery: 1000,
        progressIntervalMs: 10_000,
        discoveryTimeoutMs: 60_000,
      },
    });
  });

  it("takes every flag", () => {
    const args = parseMigrateArgs([
      "--kubeconfig=/k",
      "--dry-run",
      "--page-size",
      "50",
      "--concurrency",
      "2",
      "--progress-every",
      "10",
      "--progress-interval",
      "2s",
      "--wait",
      "1m30s",
    ]);
    expect(args).toEqual({
      kubeconfig: "/k",
      options: {
        crdName: "edgeroutes.net.10xdev.io",
        dryRun: true,
        pageSize: 50,
        concurrency: 2,
        progressEvery: 10,
        progressIntervalMs: 2000,
        discoveryTimeoutMs: 90_000,
      },
    });
    expect(parseMigrateArgs(["-h"])).toBe("help");
  });

  it.each([
    [["--page-size", "0"], '--page-size: must be an integer from 1 to 10000, got "0"'],
    [["--concurrency", "1.5"], '--concurrency: must be an integer from 1 to 256, got "1.5"'],
    [["--wait", "soon"], '--wait: must be a duration such as 300ms, 15s or 5m, got "soon"'],
  ])("refuses %j with one clear line", (argv, message) => {
    expect(() => parseMigrateArgs(argv)).toThrow(new UsageError(message));
  });

  it("refuses unknown flags", () => {
    expect(() => parseMigrateArgs(["--force"])).toThrow(/Unknown option '--force'/);
  });
});
