// What `edge-operator status` makes of routes and ACK records, and how it
// prints them: pure, from objects shaped as the apiserver returns them.

import { describe, expect, it } from "vitest";
import { parse as fromYaml } from "yaml";
import type { Condition } from "../api/types.js";
import type { StoredRecord } from "../dataplane/xds/ack-records.js";
import { KubeError, type KubeClient } from "../kube/client.js";
import { parseStatusArgs, statusReport } from "./status.js";
import { dataPlaneReport, routeRows, type ListedRoute } from "./status-report.js";
import { age, render } from "./status-table.js";

const NOW = Date.parse("2026-12-03T10:00:00Z");

const cond = (
  type: string,
  status: Condition["status"],
  reason: string,
  observedGeneration = 1,
): Condition => ({
  type,
  status,
  reason,
  message: `${type} ${reason}`,
  observedGeneration,
  lastTransitionTime: "2026-12-03T09:00:00Z",
});

function route(
  name: string,
  conditions: Condition[],
  extra: Partial<ListedRoute["metadata"]> = {},
): ListedRoute {
  return {
    metadata: { name, namespace: "shop", generation: 1, creationTimestamp: "2026-12-03T09:55:00Z", ...extra },
    spec: { hostnames: [`${name}.example.com`] },
    status: { conditions },
  };
}

const record = (
  replica: string,
  served: string,
  clients: StoredRecord["clients"],
  renewedAtMs = NOW - 3000,
) => ({
  lease: `edge-system/edge-xds-${replica}`,
  record: { replica, served, clients, renewedAtMs, durationSeconds: 15 },
});

describe("routeRows", () => {
  it("shows Accepted and Programmed, ResolvedRefs only where the route has it, in namespace/name order", () => {
    const rows = routeRows([
      route("web", [cond("Accepted", "True", "Valid"), cond("Programmed", "True", "Synced")]),
      route("cart", [
        cond("Accepted", "True", "Valid"),
        cond("Programmed", "True", "Synced"),
        cond("ResolvedRefs", "False", "SecretNotFound"),
      ]),
    ]);
    expect(rows.map((r) => r.name)).toEqual(["cart", "web"]);
    expect(rows[0]?.resolvedRefs).toMatchObject({ status: "False", reason: "SecretNotFound" });
    expect(rows[1]?.resolvedRefs).toBeUndefined();
  });

  it("marks a condition about an older generation, and reads v1's host", () => {
    const [row] = routeRows([
      {
        metadata: { name: "old", namespace: "shop", generation: 3 },
        spec: { host: "old.example.com" },
        status: { conditions: [cond("Accepted", "True", "Valid", 2)] },
      },
    ]);
    expect(row?.hosts).toEqual(["old.example.com"]);
    expect(row?.accepted?.outdated).toBe(true);
  });
});

describe("dataPlaneReport", () => {
  it("each client's state against what its replica serves", () => {
    const dp = dataPlaneReport(
      [
        record("a", "v2", [
          { id: "envoy-1", acked: "v2" },
          { id: "grpc-1", acked: "v1" },
          { id: "grpc-2", acked: "v1", nack: { version: "v2", message: "bad cluster" } },
          { id: "grpc-3" },
          { id: "grpc-4", acked: "v2", unreachableSince: NOW - 60_000 },
        ]),
      ],
      NOW,
    );
    expect(dp.replicas[0]?.clients.map((c) => [c.id, c.state])).toEqual([
      ["envoy-1", "current"],
      ["grpc-1", "stale"],
      ["grpc-2", "nacked"],
      ["grpc-3", "pending"],
      ["grpc-4", "unreachable"],
    ]);
    expect(dp.servedVersions).toEqual(["v2"]);
  });

  it("a replica that stopped renewing is not live, and does not count among the versions served", () => {
    const dp = dataPlaneReport([record("a", "v2", []), record("b", "v1", [], NOW - 60_000)], NOW);
    expect(dp.replicas.map((r) => [r.replica, r.live])).toEqual([
      ["a", true],
      ["b", false],
    ]);
    expect(dp.servedVersions).toEqual(["v2"]);
  });
});

describe("the table", () => {
  const report = {
    routes: routeRows([
      route("cart", [cond("Accepted", "False", "ServiceNotFound"), cond("Programmed", "False", "Pending")]),
      route("web", [cond("Accepted", "True", "Valid"), cond("Programmed", "True", "Synced")]),
    ]),
    dataPlane: dataPlaneReport(
      [
        record("a", "v2", [
          { id: "envoy-1", acked: "v2" },
          { id: "grpc-2", acked: "v1", nack: { version: "v2", message: "cluster\n  x: bad" } },
        ]),
        record("b", "v1", []),
      ],
      NOW,
    ),
  };

  it("prints routes and clients in kubectl's columns", () => {
    expect(render(report, "table", NOW, false)).toBe(
      [
        "NAME   HOSTS              ACCEPTED                PROGRAMMED      RESOLVEDREFS   AGE",
        "cart   cart.example.com   False/ServiceNotFound   False/Pending   -              5m",
        "web    web.example.com    True                    True            -              5m",
        "",
        "REPLICA   SERVES   RENEWED   CLIENT    ACKED   STATE     MESSAGE",
        "a         v2       3s        envoy-1   v2      current",
        "a         v2       3s        grpc-2    v1      nacked    refused v2: cluster x: bad",
        "b         v1       3s        <none>",
        "Replicas serve 2 versions (v1, v2): a push is on its way, or a replica is behind.",
        "",
      ].join("\n"),
    );
  });

  it("with -A, a NAMESPACE column first", () => {
    expect(render(report, "table", NOW, true).split("\n")[1]).toMatch(/^shop {8}cart {3}/);
  });

  it("-o json and -o yaml are the report itself", () => {
    expect(JSON.parse(render(report, "json", NOW, false))).toEqual(JSON.parse(JSON.stringify(report)));
    expect(fromYaml(render(report, "yaml", NOW, false))).toEqual(JSON.parse(JSON.stringify(report)));
  });

  it("says why there is no data plane to show", () => {
    const none = {
      routes: [],
      dataPlane: dataPlaneReport([], NOW, "not allowed to list Leases in edge-system"),
    };
    expect(render(none, "table", NOW, false)).toBe(
      "No EdgeRoutes found.\n\nNo xDS ACK records found: not allowed to list Leases in edge-system\n",
    );
  });

  it("ages as kubectl prints them", () => {
    expect([45e3, 330e3, 95 * 60e3, 310 * 60e3, 20 * 3600e3, 76 * 3600e3, 30 * 86400e3].map(age)).toEqual([
      "45s",
      "5m30s",
      "95m",
      "5h10m",
      "20h",
      "3d4h",
      "30d",
    ]);
  });
});

describe("parseStatusArgs", () => {
  it("takes kubectl's -n, -A and -o", () => {
    expect(parseStatusArgs(["-n", "shop", "-o", "yaml"])).toMatchObject({
      namespace: "shop",
      output: "yaml",
    });
    expect(parseStatusArgs(["-A"])).toMatchObject({ allNamespaces: true, output: "table" });
    expect(() => parseStatusArgs(["-n", "shop", "-A"])).toThrow(
      "give either --namespace or --all-namespaces",
    );
    expect(() => parseStatusArgs(["-o", "wide"])).toThrow(
      '--output: must be one of table, json, yaml, got "wide"',
    );
    expect(() => parseStatusArgs(["-n", "Shop"])).toThrow('--namespace: not a namespace name: "Shop"');
  });
});

describe("statusReport", () => {
  it("says the CRD is not installed, rather than a 404 on a path", async () => {
    const kube: KubeClient = {
      json: (_method, path) => Promise.reject(new KubeError(404, "NotFound", `GET ${path}: 404 not found`)),
      stream: () => Promise.reject(new Error("no watch here")),
    };
    await expect(statusReport(kube, { allNamespaces: true, output: "table" }, "default")).rejects.toThrow(
      "the CRD edgeroutes.net.10xdev.io is not installed in this cluster",
    );
  });
});
