// The routes xds-go-client.test.ts serves to grpc-go's xDS client, one host
// each, built as the reconcile builds them (test/xds/fixtures.ts);
// xds-validate.test.ts checks the same snapshots against Envoy's rules.

import type { Snapshot } from "../../src/translate/snapshot.js";
import { adsSnapshot, edgeRoute, endpoints, PORT } from "../xds/fixtures.js";

export const HOSTS = {
  prefix: "prefix.example.com",
  header: "header.example.com",
  split: "split.example.com",
  switched: "switched.example.com",
  slow: "slow.example.com",
  regex: "regex.example.com",
} as const;

const ECHO = { path: { type: "PathPrefix", value: "/echo.Echo" } } as const;

/** Loopback ports of the backends, by Service. */
export interface GoClientPorts {
  readonly blue: number;
  readonly green: number;
  readonly slow: number;
}

/** Every host's route; `switchedTo` is the Service the switched host's route sends to. */
export function goClientSnapshot(ports: GoClientPorts, switchedTo: "blue" | "green" = "blue"): Snapshot {
  const routes = [
    edgeRoute("prefix", [HOSTS.prefix], [{ matches: [ECHO], backends: [{ name: "blue", port: PORT }] }]),
    edgeRoute(
      "header",
      [HOSTS.header],
      [
        {
          matches: [{ ...ECHO, headers: [{ name: "x-canary", value: "1" }] }],
          backends: [{ name: "green", port: PORT }],
        },
        { matches: [ECHO], backends: [{ name: "blue", port: PORT }] },
      ],
    ),
    edgeRoute(
      "split",
      [HOSTS.split],
      [
        {
          matches: [ECHO],
          backends: [
            { name: "blue", port: PORT, weight: 90 },
            { name: "green", port: PORT, weight: 10 },
          ],
        },
      ],
    ),
    edgeRoute(
      "switched",
      [HOSTS.switched],
      [{ matches: [ECHO], backends: [{ name: switchedTo, port: PORT }] }],
    ),
    edgeRoute(
      "slow",
      [HOSTS.slow],
      [{ matches: [ECHO], backends: [{ name: "slow", port: PORT }], timeout: "1s" }],
    ),
    // Alternations: a path or header value matches one branch wholly (Envoy's RE2 FullMatch).
    edgeRoute(
      "regex",
      [HOSTS.regex],
      [
        {
          matches: [{ path: { type: "RegularExpression", value: "/echo\\.Echo/Call|/other\\.Other/Call" } }],
          backends: [{ name: "green", port: PORT }],
        },
        {
          matches: [
            {
              path: { type: "PathPrefix", value: "/other.Other" },
              headers: [{ name: "x-tenant", type: "RegularExpression", value: "team-a|team-b" }],
            },
          ],
          backends: [{ name: "blue", port: PORT }],
        },
      ],
    ),
  ];
  return adsSnapshot(routes, endpoints({ blue: [ports.blue], green: [ports.green], slow: [ports.slow] }));
}
