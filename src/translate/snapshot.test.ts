import { createHash } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { EdgeRouteV2, RouteRule } from "../api/types.js";
import { contentJson } from "../envoy/content-hash.js";
import type { EnvoyRoute } from "../envoy/envoy-resources.js";
import { parseGatewayDuration } from "../api/duration.js";
import { protoDuration } from "../envoy/proto-duration.js";
import { envoyPathMatch, normalizePath, type EnvoyPathMatch } from "../routing/path-match.js";
import { endpointsByService, type ServiceEndpoints } from "../routing/service-endpoints.js";
import { buildSnapshot, type Snapshot } from "./snapshot.js";

/** Envoy's documented semantics of a path specifier (query and fragment already stripped). */
function envoyMatches(m: EnvoyPathMatch, path: string): boolean {
  if ("path" in m) return path === m.path;
  if ("prefix" in m) return path.startsWith(m.prefix);
  if ("safe_regex" in m) throw new Error("no regex in these routes");
  return path === m.path_separated_prefix || path.startsWith(`${m.path_separated_prefix}/`);
}

/** The Gateway API's PathPrefix, written independently: the prefix's segments lead the path's. */
function gatewayPrefixMatches(prefix: string, path: string): boolean {
  const segs = prefix.split("/");
  while (segs.length > 1 && segs[segs.length - 1] === "") segs.pop();
  const pathSegs = path.split("/");
  return segs.length <= pathSegs.length && segs.every((s, i) => s === pathSegs[i]);
}

const pathArb = fc.stringMatching(/^\/[ab/]{0,6}$/);

describe("PathPrefix matches whole segments", () => {
  it("the examples the Gateway API gives", () => {
    const m = envoyPathMatch("PathPrefix", normalizePath("PathPrefix", "/abc"));
    expect(["/abc", "/abc/", "/abc/def"].map((p) => envoyMatches(m, p))).toEqual([true, true, true]);
    expect(envoyMatches(m, "/abcd")).toBe(false);
    expect(envoyPathMatch("PathPrefix", normalizePath("PathPrefix", "/abc/"))).toEqual({
      path_separated_prefix: "/abc",
    });
    expect(envoyPathMatch("PathPrefix", normalizePath("PathPrefix", "/"))).toEqual({ prefix: "/" });
    expect(envoyPathMatch("PathPrefix", normalizePath("PathPrefix", "///"))).toEqual({ prefix: "/" });
    expect(envoyPathMatch("Exact", normalizePath("Exact", "/abc/"))).toEqual({ path: "/abc/" });
  });

  it("Envoy's match agrees with segment matching for every prefix and path", () => {
    fc.assert(
      fc.property(pathArb, pathArb, (prefix, path) => {
        const m = envoyPathMatch("PathPrefix", normalizePath("PathPrefix", prefix));
        expect(envoyMatches(m, path)).toBe(gatewayPrefixMatches(prefix, path));
      }),
      { numRuns: 2000 },
    );
  });
});

describe("Gateway API durations", () => {
  it("parses and prints the forms Envoy takes", () => {
    expect(parseGatewayDuration("1h")).toBe(3_600_000);
    expect(parseGatewayDuration("1m30s")).toBe(90_000);
    expect(parseGatewayDuration("500ms")).toBe(500);
    expect(parseGatewayDuration("1s500ms")).toBe(1500);
    expect(parseGatewayDuration("1s1s")).toBeUndefined();
    expect(parseGatewayDuration("1.5s")).toBeUndefined();
    expect(parseGatewayDuration("")).toBeUndefined();
    expect([90_000, 500, 1500, 0, 5].map(protoDuration)).toEqual(["90s", "0.500s", "1.500s", "0s", "0.005s"]);
  });
});

// Generated inputs: few hosts, paths and Services, so that conflicts, ties and
// shared clusters happen often.
const SERVICES = ["a", "b", "c"];
const services: ReadonlyMap<string, ServiceEndpoints> = endpointsByService(
  ["ns1", "ns2"].flatMap((namespace) =>
    SERVICES.map((name) => ({
      metadata: { namespace, name },
      spec: { ports: [{ name: "http", port: 80 }] },
    })),
  ),
  ["ns1", "ns2"].flatMap((namespace) =>
    SERVICES.map((name, i) => ({
      metadata: { namespace, name: `${name}-1`, labels: { "kubernetes.io/service-name": name } },
      addressType: "IPv4",
      ports: [{ name: "http", port: 8080 }],
      endpoints: [{ addresses: [`10.0.${i}.1`], conditions: { ready: true } }],
    })),
  ),
);

const ruleArb: fc.Arbitrary<RouteRule> = fc.record({
  matches: fc.array(
    fc.record({
      path: fc.record({
        type: fc.constantFrom("PathPrefix" as const, "Exact" as const),
        value: fc.constantFrom("/", "/a", "/a/", "/a/b", "/b"),
      }),
      headers: fc.array(
        fc.record({ name: fc.constantFrom("x-a", "X-A", "x-b"), value: fc.constantFrom("1", "2") }),
        { maxLength: 2 },
      ),
    }),
    { minLength: 1, maxLength: 3 },
  ),
  backends: fc.array(
    fc.record({
      name: fc.constantFrom(...SERVICES, "missing"),
      port: fc.constantFrom(80, 80, 80, 81),
      weight: fc.integer({ min: 1, max: 3 }),
    }),
    { minLength: 1, maxLength: 2 },
  ),
});

const routesArb: fc.Arbitrary<EdgeRouteV2[]> = fc
  .uniqueArray(
    fc.record({
      namespace: fc.constantFrom("ns1", "ns2"),
      name: fc.constantFrom("r1", "r2", "r3", "r4", "r5", "r6"),
      day: fc.integer({ min: 1, max: 3 }),
      hostnames: fc.uniqueArray(fc.constantFrom("x.example.com", "*.example.com", "y.example.com"), {
        maxLength: 2,
      }),
      rules: fc.array(ruleArb, { minLength: 1, maxLength: 3 }),
    }),
    { selector: (r) => `${r.namespace}/${r.name}`, maxLength: 8 },
  )
  .map((rs) =>
    rs.map((r): EdgeRouteV2 => ({
      apiVersion: "net.10xdev.io/v2",
      kind: "EdgeRoute",
      metadata: { namespace: r.namespace, name: r.name, creationTimestamp: `2025-01-0${r.day}T00:00:00Z` },
      spec: { hostnames: r.hostnames, rules: r.rules },
    })),
  );

function allRoutes(s: Snapshot): { host: string; route: EnvoyRoute }[] {
  return (s.resources.routeConfigurations[0]?.virtual_hosts ?? []).flatMap((vh) =>
    vh.routes.flatMap((route) => ("route" in route ? [{ host: vh.name, route }] : [])),
  );
}

function matchIdentity(host: string, r: EnvoyRoute): string {
  return JSON.stringify([host, r.match]);
}

describe("buildSnapshot laws", () => {
  it("is independent of the order of its input", () => {
    fc.assert(
      fc.property(
        routesArb.chain((rs) => fc.tuple(fc.constant(rs), fc.shuffledSubarray(rs, { minLength: rs.length }))),
        ([a, b]) => {
          expect(buildSnapshot(b, services)).toEqual(buildSnapshot(a, services));
        },
      ),
      { numRuns: 300 },
    );
  });

  it("lists one outcome per route, in key order, whatever the namespaces", () => {
    // Namespaces that prefix one another, and one with a "/" (which the apiserver refuses).
    const keyArb = fc.record({
      namespace: fc.constantFrom("a", "a-b", "ab", "a0", "b", "a/b", ""),
      name: fc.constantFrom("x", "x-y", "y", "a"),
      day: fc.integer({ min: 1, max: 3 }),
    });
    fc.assert(
      fc.property(
        fc.uniqueArray(keyArb, { selector: (k) => `${k.namespace}/${k.name}`, maxLength: 20 }),
        (ks) => {
          const routes = ks.map((k): EdgeRouteV2 => ({
            apiVersion: "net.10xdev.io/v2",
            kind: "EdgeRoute",
            metadata: {
              namespace: k.namespace,
              name: k.name,
              creationTimestamp: `2025-01-0${k.day}T00:00:00Z`,
            },
            spec: { rules: [{ matches: [{ path: { value: "/" } }], backends: [{ name: "a", port: 80 }] }] },
          }));
          const keys = ks.map((k) => `${k.namespace}/${k.name}`).sort();
          expect(buildSnapshot(routes, services).outcomes.map((o) => o.key)).toEqual(keys);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("its version is the SHA-256 of its content JSON (each virtual host, cluster and endpoint list as its own hash)", () => {
    fc.assert(
      fc.property(routesArb, (routes) => {
        const s = buildSnapshot(routes, services);
        const whole = createHash("sha256").update(contentJson(s.resources)).digest("hex");
        expect(s.version).toBe(whole.slice(0, 16));
      }),
      { numRuns: 300 },
    );
  });

  it("its version changes exactly when its resources change", () => {
    fc.assert(
      fc.property(routesArb, routesArb, (a, b) => {
        const sa = buildSnapshot(a, services);
        const sb = buildSnapshot(b, services);
        expect(sa.version === sb.version).toBe(JSON.stringify(sa.resources) === JSON.stringify(sb.resources));
      }),
      { numRuns: 300 },
    );
  });

  it("an endpoint change alone changes the version", () => {
    const route: EdgeRouteV2 = {
      apiVersion: "net.10xdev.io/v2",
      kind: "EdgeRoute",
      metadata: { namespace: "ns1", name: "r", creationTimestamp: "2025-01-01T00:00:00Z" },
      spec: { rules: [{ matches: [{ path: { value: "/" } }], backends: [{ name: "a", port: 80 }] }] },
    };
    const moved = new Map(services);
    moved.set("ns1/a", { ports: [{ port: 80, addresses: [{ ip: "10.9.9.9", port: 8080 }] }] });
    expect(buildSnapshot([route], moved).version).not.toBe(buildSnapshot([route], services).version);
  });

  it("gives each host and match to exactly one route, the oldest that asked", () => {
    fc.assert(
      fc.property(routesArb, (routes) => {
        const s = buildSnapshot(routes, services);
        const seen = new Set<string>();
        for (const { host, route } of allRoutes(s)) {
          const id = matchIdentity(host, route);
          expect(seen.has(id)).toBe(false);
          seen.add(id);
        }
        const byKey = new Map(s.outcomes.map((o) => [o.key, o]));
        const created = new Map(
          routes.map((r) => [
            `${r.metadata.namespace}/${r.metadata.name}`,
            r.metadata.creationTimestamp as string,
          ]),
        );
        expect(s.outcomes.length).toBe(routes.length);
        for (const o of s.outcomes) {
          const programmed = allRoutes(s).some(({ route }) => route.name.startsWith(`${o.key}/`));
          expect(programmed).toBe(o.accepted);
          if (!o.accepted || o.dropped.length === 0) continue;
          for (const d of o.dropped) {
            const owner = byKey.get(d.owner);
            expect(owner?.accepted).toBe(true);
            // The owner is older, or as old and first by namespace/name.
            const [ot, mt] = [created.get(d.owner) as string, created.get(o.key) as string];
            expect(ot < mt || (ot === mt && d.owner < o.key)).toBe(true);
          }
        }
      }),
      { numRuns: 300 },
    );
  });

  it("orders each virtual host by Gateway API precedence", () => {
    const rank = (r: EnvoyRoute): [number, number, number] => {
      const m = r.match;
      const kind = "path" in m ? 0 : 1;
      const len =
        "path" in m
          ? m.path.length
          : "prefix" in m
            ? 1
            : "path_separated_prefix" in m
              ? m.path_separated_prefix.length
              : m.safe_regex.regex.length;
      return [kind, -len, -(m.headers?.length ?? 0)];
    };
    fc.assert(
      fc.property(routesArb, (routes) => {
        for (const vh of buildSnapshot(routes, services).resources.routeConfigurations[0]?.virtual_hosts ??
          []) {
          for (let i = 1; i < vh.routes.length; i++) {
            const [a, b] = [rank(vh.routes[i - 1] as EnvoyRoute), rank(vh.routes[i] as EnvoyRoute)];
            expect(a[0] < b[0] || (a[0] === b[0] && (a[1] < b[1] || (a[1] === b[1] && a[2] <= b[2])))).toBe(
              true,
            );
          }
        }
      }),
      { numRuns: 300 },
    );
  });

  it("makes a cluster for every Service port a programmed route sends to, and no other", () => {
    fc.assert(
      fc.property(routesArb, (routes) => {
        const s = buildSnapshot(routes, services);
        const sent = new Set<string>();
        for (const { route } of allRoutes(s)) {
          if (!("route" in route)) continue;
          if ("cluster" in route.route) sent.add(route.route.cluster);
          else for (const c of route.route.weighted_clusters.clusters) sent.add(c.name);
        }
        expect(s.resources.clusters.map((c) => c.name)).toEqual([...sent].sort());
        expect(s.resources.clusterLoadAssignments.map((c) => c.cluster_name)).toEqual([...sent].sort());
      }),
      { numRuns: 300 },
    );
  });
});

describe("conflicts", () => {
  const route = (name: string, day: number, headers: { name: string; value: string }[]): EdgeRouteV2 => ({
    apiVersion: "net.10xdev.io/v2",
    kind: "EdgeRoute",
    metadata: { namespace: "ns1", name, creationTimestamp: `2025-01-0${day}T00:00:00Z` },
    spec: {
      hostnames: ["x.example.com"],
      rules: [{ matches: [{ path: { value: "/a" }, headers }], backends: [{ name: "a", port: 80 }] }],
    },
  });

  it("header sets are compared without regard to order or name case", () => {
    const s = buildSnapshot(
      [
        route("young", 2, [
          { name: "X-B", value: "2" },
          { name: "x-a", value: "1" },
        ]),
        route("old", 1, [
          { name: "x-a", value: "1" },
          { name: "x-b", value: "2" },
        ]),
      ],
      services,
    );
    expect(s.outcomes).toEqual([
      { key: "ns1/old", accepted: true, dropped: [] },
      expect.objectContaining({ key: "ns1/young", accepted: false, reason: "Conflicted" }),
    ]);
    expect(s.outcomes[1]).toMatchObject({ message: expect.stringContaining("owned by ns1/old") });
  });

  it("a different header value is a different match", () => {
    const s = buildSnapshot(
      [route("young", 2, [{ name: "x-a", value: "2" }]), route("old", 1, [{ name: "x-a", value: "1" }])],
      services,
    );
    expect(s.outcomes.every((o) => o.accepted)).toBe(true);
  });
});

describe("endpoints from EndpointSlices", () => {
  it("joins by port name, keeps ready IPs only, and sorts", () => {
    const map = endpointsByService(
      [
        {
          metadata: { namespace: "n", name: "s" },
          spec: {
            ports: [
              { name: "web", port: 80 },
              { name: "admin", port: 9000 },
            ],
          },
        },
      ],
      [
        {
          metadata: { namespace: "n", name: "s-1", labels: { "kubernetes.io/service-name": "s" } },
          addressType: "IPv4",
          ports: [
            { name: "web", port: 8080 },
            { name: "admin", port: 9901 },
          ],
          endpoints: [
            { addresses: ["10.0.0.9"] },
            { addresses: ["10.0.0.2"], conditions: { ready: true } },
            { addresses: ["10.0.0.3"], conditions: { ready: false } },
          ],
        },
        {
          metadata: { namespace: "n", name: "s-2", labels: { "kubernetes.io/service-name": "s" } },
          addressType: "FQDN",
          ports: [{ name: "web", port: 8080 }],
          endpoints: [{ addresses: ["db.example.com"] }],
        },
        {
          metadata: { namespace: "other", name: "s-1", labels: { "kubernetes.io/service-name": "s" } },
          addressType: "IPv4",
          ports: [{ name: "web", port: 8080 }],
          endpoints: [{ addresses: ["10.9.0.1"] }],
        },
      ],
    );
    expect([...map]).toEqual([
      [
        "n/s",
        {
          ports: [
            {
              port: 80,
              addresses: [
                { ip: "10.0.0.2", port: 8080 },
                { ip: "10.0.0.9", port: 8080 },
              ],
            },
            {
              port: 9000,
              addresses: [
                { ip: "10.0.0.2", port: 9901 },
                { ip: "10.0.0.9", port: 9901 },
              ],
            },
          ],
        },
      ],
    ]);
  });
});
