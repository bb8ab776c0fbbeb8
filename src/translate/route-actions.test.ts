import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseGatewayDuration } from "../api/duration.js";
import type { RouteRule } from "../api/types.js";
import type { RouteAction } from "../envoy/envoy-resources.js";
import { protoDuration } from "../envoy/proto-duration.js";
import { RouteActions } from "./route-actions.js";
import type { ServiceEndpoints } from "../routing/service-endpoints.js";

const port80: ServiceEndpoints = { ports: [{ port: 80, addresses: [] }] };
const endpoints = new Map<string, ServiceEndpoints>([
  ["ns1/a", port80],
  ["ns1/b", port80],
  [
    "ns1/c",
    {
      ports: [
        { port: 80, addresses: [] },
        { port: 81, addresses: [] },
      ],
    },
  ],
  ["ns2/a", port80],
]);

/** The action written plainly: no sharing, a Map of weights, one sort. */
function plainAction(namespace: string, rule: RouteRule): RouteAction | undefined {
  const weights = new Map<string, number>();
  for (const b of rule.backends) {
    const ports = endpoints.get(`${namespace}/${b.name}`)?.ports ?? [];
    if (!ports.some((p) => p.port === b.port)) return undefined;
    const weight = b.weight ?? 1;
    if (weight <= 0) continue;
    const name = `${namespace}/${b.name}:${b.port}`;
    weights.set(name, (weights.get(name) ?? 0) + weight);
  }
  const ms = rule.timeout === undefined ? undefined : parseGatewayDuration(rule.timeout);
  const timeout = ms === undefined ? {} : { timeout: protoDuration(ms) };
  if (weights.size === 1) return { cluster: [...weights.keys()][0] as string, ...timeout };
  const clusters = [...weights]
    .map(([name, weight]) => ({ name, weight }))
    .sort((x, y) => (x.name < y.name ? -1 : 1));
  return { weighted_clusters: { clusters }, ...timeout };
}

const ruleArb: fc.Arbitrary<RouteRule> = fc
  .record(
    {
      matches: fc.constant([{ path: { value: "/" } }]),
      backends: fc.array(
        fc.record(
          {
            name: fc.constantFrom("a", "b", "c", "missing"),
            port: fc.constantFrom(80, 80, 81),
            weight: fc.integer({ min: 0, max: 3 }),
          },
          { requiredKeys: ["name", "port"] },
        ),
        { minLength: 1, maxLength: 4 },
      ),
      timeout: fc.constantFrom("15s", "500ms", "1m30s"),
    },
    { requiredKeys: ["matches", "backends"] },
  )
  .filter((r) => r.backends.some((b) => (b.weight ?? 1) > 0));

describe("RouteActions", () => {
  it("gives the same action as a plain construction, whatever came before it in the build", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom("ns1", "ns2"), ruleArb), { minLength: 1, maxLength: 12 }),
        (rules) => {
          const actions = new RouteActions(endpoints);
          for (const [namespace, rule] of rules)
            expect(actions.actionOf(namespace, rule)).toEqual(plainAction(namespace, rule));
        },
      ),
      { numRuns: 500 },
    );
  });

  it("shares one object between rules that send the same way", () => {
    const actions = new RouteActions(endpoints);
    const canary: RouteRule = {
      matches: [{ path: { value: "/" } }],
      backends: [
        { name: "b", port: 80, weight: 10 },
        { name: "a", port: 80, weight: 90 },
      ],
      timeout: "15s",
    };
    const first = actions.actionOf("ns1", canary);
    expect(actions.actionOf("ns1", { ...canary, backends: [...canary.backends].reverse() })).toBe(first);
    expect(actions.actionOf("ns1", { ...canary, timeout: "15000ms" })).toBe(first);
    expect(actions.actionOf("ns1", { ...canary, timeout: "16s" })).not.toBe(first);
    expect(actions.actionOf("ns2", canary)).toBeUndefined();
  });
});
