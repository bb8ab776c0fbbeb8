// A hold is read from the route's own status, so a replica that did not see
// the refusal, or a server just restarted, leaves the route out too, and only
// for the generation refused.

import { describe, expect, it } from "vitest";
import type { Condition, EdgeRouteV2 } from "../api/types.js";
import { heldMessage } from "./held-routes.js";
import { buildSnapshot } from "./snapshot.js";

const endpoints = new Map([
  ["shop/app", { ports: [{ port: 80, addresses: [{ ip: "10.0.0.1", port: 8080 }] }] }],
]);

function route(name: string, generation: number, accepted?: Partial<Condition>): EdgeRouteV2 {
  return {
    apiVersion: "net.10xdev.io/v2",
    kind: "EdgeRoute",
    metadata: {
      namespace: "shop",
      name,
      uid: `uid-${name}`,
      generation,
      creationTimestamp: "2026-01-01T00:00:00Z",
    },
    spec: {
      hostnames: ["shop.example.com"],
      rules: [
        {
          matches: [{ path: { type: "PathPrefix", value: `/${name}` } }],
          backends: [{ name: "app", port: 80 }],
        },
      ],
    },
    ...(accepted
      ? {
          status: {
            conditions: [
              {
                type: "Accepted",
                status: "False",
                reason: "Rejected",
                message: heldMessage("xDS client envoy/edge-1 rejected it: words"),
                lastTransitionTime: "2026-01-01T00:00:01Z",
                ...accepted,
              },
            ],
          },
        }
      : {}),
  };
}

function servedPaths(routes: EdgeRouteV2[]): string[] {
  const s = buildSnapshot(routes, endpoints);
  return (s.resources.routeConfigurations[0]?.virtual_hosts ?? []).flatMap((vh) =>
    (vh.routes ?? []).map((r) => r.name),
  );
}

describe("a hold read from the route's status", () => {
  it("leaves the route out, with its reason and words, for the generation the status names", () => {
    const held = route("held", 3, { observedGeneration: 3 });
    const s = buildSnapshot([route("fine", 1), held], endpoints);
    expect(s.outcomes.find((o) => o.key === "shop/held")).toEqual({
      key: "shop/held",
      accepted: false,
      reason: "Rejected",
      message: heldMessage("xDS client envoy/edge-1 rejected it: words"),
    });
    expect(servedPaths([route("fine", 1), held])).toEqual(["shop/fine/r0/m0"]);
  });

  it("is gone once the spec changed (a newer generation), and says nothing of another reason", () => {
    expect(servedPaths([route("edited", 4, { observedGeneration: 3 })])).toEqual(["shop/edited/r0/m0"]);
    expect(servedPaths([route("conflicted", 3, { observedGeneration: 3, reason: "Conflicted" })])).toEqual([
      "shop/conflicted/r0/m0",
    ]);
  });
});
