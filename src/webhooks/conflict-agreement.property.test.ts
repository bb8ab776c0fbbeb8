// Admission's conflict warnings and the snapshot's Conflicted verdicts come
// from one model of claims (src/routing): for any set of routes, the older
// routes admission names as owners of a route's claims are exactly the owners
// the snapshot records for the matches it drops from that route. Generated
// from small pools so that routes collide often: hosts, prefixes with and
// without a trailing slash, header names in either case, and
// creation times that tie, are missing or are malformed.

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { EdgeRouteV2, HeaderMatch, RouteMatch } from "../api/types.js";
import { buildSnapshot } from "../translate/snapshot.js";
import { objectKey } from "../api/object-key.js";
import type { ServiceEndpoints } from "../routing/service-endpoints.js";
import { validateRoute } from "../rules/validate.js";
import { conflictWarnings, summarize } from "./conflicts.js";

const header: fc.Arbitrary<HeaderMatch> = fc.record({
  name: fc.constantFrom("x-canary", "X-Canary", "x-user"),
  value: fc.constantFrom("1", "2"),
});

const match: fc.Arbitrary<RouteMatch> = fc.record(
  {
    path: fc.record(
      {
        type: fc.constantFrom("PathPrefix" as const, "Exact" as const),
        value: fc.constantFrom("/", "/api", "/api/", "/shop"),
      },
      { requiredKeys: ["value"] },
    ),
    // Each name once per match, in either case: admission refuses a name repeated.
    headers: fc.uniqueArray(header, { minLength: 1, maxLength: 3, selector: (h) => h.name.toLowerCase() }),
  },
  { requiredKeys: ["path"] },
);

const timestamp = fc.option(
  fc.constantFrom("2026-01-01T00:00:00Z", "2026-01-01T00:00:01Z", "2026-01-02T00:00:00Z", "not a time", ""),
  { nil: undefined },
);

const spec = fc.record(
  {
    hostnames: fc.uniqueArray(fc.constantFrom("a.example.com", "b.example.com", "*.example.com"), {
      maxLength: 2,
    }),
    rules: fc.array(
      fc.record({
        matches: fc.array(match, { minLength: 1, maxLength: 3 }),
        backends: fc.constant([{ name: "svc", port: 80 }]),
      }),
      { minLength: 1, maxLength: 2 },
    ),
  },
  { requiredKeys: ["rules"] },
);

const routes: fc.Arbitrary<EdgeRouteV2[]> = fc
  .uniqueArray(
    fc.record({
      namespace: fc.constantFrom("a", "b"),
      name: fc.constantFrom("r1", "r2", "r3", "r4"),
      spec,
      timestamp,
    }),
    { selector: (r) => `${r.namespace}/${r.name}`, minLength: 1, maxLength: 6 },
  )
  .map((rs) =>
    rs.map((r): EdgeRouteV2 => ({
      apiVersion: "net.10xdev.io/v2",
      kind: "EdgeRoute",
      metadata: {
        namespace: r.namespace,
        name: r.name,
        ...(r.timestamp !== undefined ? { creationTimestamp: r.timestamp } : {}),
      },
      spec: r.spec,
    })),
  );

const service: ServiceEndpoints = { ports: [{ port: 80, addresses: [] }] };
const endpoints = new Map([
  [objectKey("a", "svc"), service],
  [objectKey("b", "svc"), service],
]);

/** The owners named in admission's warnings: "conflicts with older EdgeRoute NS/NAME on ...". */
function warnedOwners(warnings: readonly string[]): string[] {
  return warnings.map((w) => /older EdgeRoute (\S+) on/.exec(w)?.[1] ?? `unreadable: ${w}`).sort();
}

describe("admission's conflict warnings and the snapshot", () => {
  it("name the same older owners for every route's clashing claims", () => {
    fc.assert(
      fc.property(routes, (generated) => {
        // Only routes admission takes: a match repeated within a route is refused before any claim.
        const rs = generated.filter((r) => validateRoute(r, "v2").length === 0);
        const snapshot = buildSnapshot(rs, endpoints);
        const summaries = rs.map((r) => summarize(r) as NonNullable<ReturnType<typeof summarize>>);
        for (const outcome of snapshot.outcomes) {
          const mine = summaries.find((s) => `${s.namespace}/${s.name}` === outcome.key);
          expect(mine).toBeDefined();
          const others = summaries.filter((s) => s !== mine);
          const warned = warnedOwners(conflictWarnings(mine as (typeof summaries)[number], others));
          // Every route here is valid: the snapshot either keeps it (perhaps
          // without some matches) or finds all of it owned.
          const dropped = outcome.accepted
            ? outcome.dropped.map((d) => d.owner)
            : outcome.reason === "Conflicted"
              ? [...outcome.message.matchAll(/owned by (\S+?)\)/g)].map((m) => m[1] as string)
              : [`rejected: ${outcome.reason}: ${outcome.message}`];
          const owners = [...new Set(dropped)].sort();
          // A long Conflicted message names its first few drops and counts the rest.
          if (!outcome.accepted && / and \d+ more$/.test(outcome.message)) {
            expect(warned).toEqual(expect.arrayContaining(owners));
          } else expect(warned).toEqual(owners);
        }
      }),
      { numRuns: 3000 },
    );
  });
});
