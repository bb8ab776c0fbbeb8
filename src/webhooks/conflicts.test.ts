import net from "node:net";
import type { AddressInfo } from "node:net";
import { KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConflictLookup, conflictWarnings, type RouteSummary } from "./conflicts.js";

const v2 = (
  name: string,
  ts: string | undefined,
  hostnames: string[],
  paths: string[],
  extra: Partial<RouteSummary> = {},
): RouteSummary => ({
  namespace: "default",
  name,
  ...(ts ? { creationTimestamp: ts } : {}),
  terminating: false,
  spec: {
    hostnames,
    rules: [{ matches: paths.map((value) => ({ path: { value } })), backends: [{ name: "a", port: 80 }] }],
  },
  ...extra,
});

describe("conflictWarnings", () => {
  const older = v2("older", "2026-01-01T00:00:00Z", ["shop.example.com"], ["/api"]);

  it("warns when an older route owns the same host and match", () => {
    const mine = v2("new", undefined, ["shop.example.com", "b.example.com"], ["/other", "/api"]);
    expect(conflictWarnings(mine, [older])).toEqual([
      "conflicts with older EdgeRoute default/older on shop.example.com PathPrefix /api; that route wins",
    ]);
  });

  it("sees a v1-shaped route as the same claim", () => {
    const v1: RouteSummary = {
      namespace: "b",
      name: "legacy",
      creationTimestamp: "2025-01-01T00:00:00Z",
      terminating: false,
      spec: { host: "shop.example.com", pathPrefix: "/api", service: "a", port: 80 },
    };
    expect(conflictWarnings(v2("new", undefined, ["shop.example.com"], ["/api"]), [v1])).toEqual([
      "conflicts with older EdgeRoute b/legacy on shop.example.com PathPrefix /api; that route wins",
    ]);
  });

  it("is silent for a newer route, itself, a terminating one, another host or another match", () => {
    const mine = v2("mine", "2026-02-01T00:00:00Z", ["shop.example.com"], ["/api"]);
    expect(
      conflictWarnings(mine, [
        v2("newer", "2026-03-01T00:00:00Z", ["shop.example.com"], ["/api"]),
        v2("mine", "2026-01-01T00:00:00Z", ["shop.example.com"], ["/api"]),
        v2("gone", "2026-01-01T00:00:00Z", ["shop.example.com"], ["/api"], { terminating: true }),
        v2("host", "2026-01-01T00:00:00Z", ["other.example.com"], ["/api"]),
        v2("path", "2026-01-01T00:00:00Z", ["shop.example.com"], ["/api/v2"]),
      ]),
    ).toEqual([]);
  });

  it("breaks a creation-time tie by namespace/name, and names only the first owner of a claim", () => {
    const ts = "2026-01-01T00:00:00Z";
    const mine = v2("m", ts, [], ["/"]);
    expect(
      conflictWarnings(mine, [
        v2("z", ts, [], ["/"]),
        v2("a", ts, [], ["/"]),
        v2("b", "2025-01-01T00:00:00Z", [], ["/"]),
      ]),
    ).toEqual(["conflicts with older EdgeRoute default/b on any host PathPrefix /; that route wins"]);
  });
});

describe("ConflictLookup", () => {
  // An apiserver that accepts connections and never answers.
  let silent: net.Server;
  const sockets: net.Socket[] = [];
  beforeAll(async () => {
    silent = net.createServer((s) => sockets.push(s));
    await new Promise<void>((r) => silent.listen(0, "127.0.0.1", r));
  });
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((r) => silent.close(() => r()));
  });

  function kubeConfig(server: string): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: "c", server, skipTLSVerify: true }],
      users: [{ name: "u", token: "t" }],
      contexts: [{ name: "x", cluster: "c", user: "u" }],
      currentContext: "x",
    });
    return kc;
  }

  it("gives up after its budget when the apiserver does not answer, and shares the one request", async () => {
    const lookup = new ConflictLookup(
      kubeConfig(`http://127.0.0.1:${(silent.address() as AddressInfo).port}`),
      { budgetMs: 200 },
    );
    const started = Date.now();
    const all = await Promise.all(
      Array.from({ length: 20 }, () => lookup.warnings(v2("x", undefined, [], ["/"]))),
    );
    const took = Date.now() - started;
    expect(all.every((w) => w.length === 0)).toBe(true);
    expect(took).toBeGreaterThanOrEqual(190);
    expect(took).toBeLessThan(1000);
    expect(sockets.length).toBe(1);
  });

  it("answers no warnings, at once, when the apiserver is unreachable", async () => {
    const port = await new Promise<number>((resolve) => {
      const s = net.createServer();
      s.listen(0, "127.0.0.1", () => {
        const p = (s.address() as AddressInfo).port;
        s.close(() => resolve(p));
      });
    });
    const lookup = new ConflictLookup(kubeConfig(`http://127.0.0.1:${port}`), { budgetMs: 5000 });
    const started = Date.now();
    expect(await lookup.warnings(v2("x", undefined, [], ["/"]))).toEqual([]);
    expect(Date.now() - started).toBeLessThan(2000);
  });
});
