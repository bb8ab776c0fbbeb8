import { describe, expect, it } from "vitest";
import { parseDuration } from "./duration-flag.js";
import { caBundleProblem, parseWatchArgs } from "./watch.js";
import { createCa } from "../certs/pki.js";

describe("parseDuration", () => {
  it("reads Go-style durations", () => {
    expect(parseDuration("--x", "300ms")).toBe(300);
    expect(parseDuration("--x", "15s")).toBe(15_000);
    expect(parseDuration("--x", "1m30s")).toBe(90_000);
    expect(parseDuration("--x", "1.5h")).toBe(5_400_000);
    expect(parseDuration("--x", "0")).toBe(0);
  });

  it("names the flag and the bad value", () => {
    for (const bad of ["", "5", "5x", "s", "1m 30s", "-1s", "1s2"]) {
      expect(() => parseDuration("--resync", bad)).toThrow(
        `--resync: must be a duration such as 300ms, 15s or 5m, got ${JSON.stringify(bad)}`,
      );
    }
  });
});

describe("parseWatchArgs", () => {
  it("has the documented defaults", () => {
    const o = parseWatchArgs(["--reconcile-url", "https://op:9443/reconcile", "--identity", "w1"]);
    expect(o).toMatchObject({
      reconcileUrl: "https://op:9443/reconcile",
      leaderElect: true,
      leaseName: "edge-operator-watcher",
      leaseDurationMs: 15_000,
      identity: "w1",
      concurrency: 4,
      qps: 50,
      burst: 300,
      routeKeyQps: 10,
      routeKeyBurst: 20,
      resyncMs: 300_000,
      snapshotHoldOffMs: 200,
      snapshotMaxHoldOffMs: 1000,
      watchTimeoutSeconds: 300,
      unhealthyAfterMs: 120_000,
    });
    expect(o !== "help" && o.metricsListen).toBeFalsy();
  });

  it("rejects bad input with one line naming the flag", () => {
    const cases: [string[], string][] = [
      [[], "--reconcile-url is required"],
      [["--reconcile-url", "nope"], '--reconcile-url: not a URL: "nope"'],
      [["--reconcile-url", "ftp://x"], '--reconcile-url: must be http:// or https://, got "ftp://x"'],
      [
        ["--reconcile-url", "http://x", "--concurrency", "2.5"],
        '--concurrency: must be a positive integer, got "2.5"',
      ],
      [["--reconcile-url", "http://x", "--qps", "0"], '--qps: must be a positive number, got "0"'],
      [
        ["--reconcile-url", "http://x", "--route-key-qps", "x"],
        '--route-key-qps: must be a number, 0 or more, got "x"',
      ],
      [["--reconcile-url", "http://x", "--lease-duration", "1s"], "--lease-duration: must be at least 3s"],
      [
        ["--reconcile-url", "http://x", "--metrics-listen", "8081"],
        '--metrics-listen: must be HOST:PORT, got "8081"',
      ],
      [
        ["--reconcile-url", "http://x", "--unhealthy-after", "500ms"],
        "--unhealthy-after: must be at least 1s",
      ],
    ];
    for (const [args, message] of cases) expect(() => parseWatchArgs(args)).toThrow(message);
  });

  it("turns leader election off with --no-leader-elect", () => {
    const o = parseWatchArgs(["--reconcile-url", "http://x", "--no-leader-elect"]);
    expect(o !== "help" && o.leaderElect).toBe(false);
  });
});

describe("caBundleProblem", () => {
  it("takes a bundle whose every certificate parses, and names what is wrong otherwise", () => {
    const a = createCa().cert;
    const b = createCa().cert;
    expect(caBundleProblem(a)).toBeUndefined();
    expect(caBundleProblem(`${a}\n${b}`)).toBeUndefined();
    expect(caBundleProblem("")).toBe("holds no PEM certificate");
    expect(caBundleProblem("not a certificate")).toBe("holds no PEM certificate");
    // A file caught half-written: the second certificate's body is cut short.
    const lines = b.trim().split("\n");
    const cut = [...lines.slice(0, 4), lines.at(-1)].join("\n");
    expect(caBundleProblem(`${a}\n${cut}`)).toMatch(/^certificate 2 does not parse: /);
  });
});
