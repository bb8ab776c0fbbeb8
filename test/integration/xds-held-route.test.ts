// A refusal stays with its route, on a real apiserver: `serve --dataplane xds`
// (with the poisoning build, test/harness/poisoning-serve.ts) and the watcher,
// and gRPC's own xDS client (@grpc/grpc-js-xds) in this process with channels
// to two tenants' hosts. One tenant's route reaches the client in a form it
// refuses; the server finds it, holds it back, and says so in its status
// (Accepted=False/Rejected, the client's words), while the other tenant's
// route is created, Programmed, and deleted. Edited, the held route is tried
// again and Programmed. Last, with the validating webhook gone (as when it is
// down with failurePolicy Ignore), a route admission would refuse is stored,
// and the snapshot's guard refuses it with admission's words.

import type * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startControlPlane } from "../harness/control-plane.js";
import type { ControlPlane } from "../../tools/testenv/control-plane.js";
import { startOperatorStack, type OperatorStack } from "../harness/operator-stack.js";
import { POISONING_SERVE } from "../harness/poisoning-serve.js";
import { freePort, waitFor } from "../../tools/testenv/process.js";
import { callEcho } from "../xds/echo-backend.js";
import { useXdsServer, xdsClient } from "../xds/grpc-xds-client.js";
import { POISON_BACKOFF } from "../xds/poisoning-build.js";
import { apply, getRoute, service, waitForConditions } from "./routes.js";
import { registrationName } from "../../src/api/webhook-registration.js";
import { DEFAULT_REGISTRATION_NAME } from "../harness/registration.js";

const PORT = 50051;

let cp: ControlPlane;
let stack: OperatorStack;
let adsPort: number;
const clients: grpc.Client[] = [];

const namespace = (name: string) => ({ apiVersion: "v1", kind: "Namespace", metadata: { name } });
const route = (name: string, spec: Record<string, unknown>, ns: string) => ({
  apiVersion: "net.10xdev.io/v2",
  kind: "EdgeRoute",
  metadata: { name, namespace: ns },
  spec,
});

function retrying(backoff: string) {
  return route(
    "retrying",
    {
      hostnames: ["shop.example.com"],
      rules: [
        {
          matches: [{ path: { type: "PathPrefix", value: "/echo.Echo" } }],
          backends: [{ name: "app", port: PORT }],
          retry: { attempts: 2, backoff },
        },
      ],
    },
    "tenant-a",
  );
}

const other = route(
  "other",
  {
    hostnames: ["other.example.com"],
    rules: [
      { matches: [{ path: { type: "PathPrefix", value: "/" } }], backends: [{ name: "app", port: PORT }] },
    ],
  },
  "tenant-b",
);

beforeAll(async () => {
  cp = await startControlPlane();
  adsPort = await freePort();
  stack = await startOperatorStack(cp, {
    serveCli: POISONING_SERVE,
    serveArgs: [
      "--dataplane",
      "xds",
      "--xds-listen",
      `127.0.0.1:${adsPort}`,
      "--xds-plaintext",
      "--xds-ack-timeout",
      "3s",
    ],
  });
  await apply(
    cp,
    namespace("tenant-a"),
    namespace("tenant-b"),
    service("app", "tenant-a", PORT),
    service("app", "tenant-b", PORT),
  );
  await useXdsServer(adsPort, "held-client");
  // One process, one ADS stream: both hosts' route configurations come in one response.
  for (const host of ["shop.example.com", "other.example.com"]) {
    const c = xdsClient(host);
    clients.push(c);
    void callEcho(c, { deadlineMs: 1_000 });
  }
});

afterAll(async () => {
  for (const c of clients) c.close();
  await stack?.stop();
  await cp?.stop();
});

describe("a route the client refuses, on a real apiserver", () => {
  it("is held back with the client's words in its status, and the other tenant's route is Programmed and deleted", async () => {
    await apply(cp, retrying(POISON_BACKOFF));
    const held = await waitForConditions(
      cp,
      "retrying",
      "False(Rejected)",
      "False(Pending)",
      "tenant-a",
      60_000,
    );
    const accepted = held.status?.conditions?.find((c) => c.type === "Accepted");
    expect(accepted?.message).toMatch(
      /^held back from every xDS client: xDS client held-client rejected it: .*max_interval.*; it is tried again when its spec changes$/,
    );
    expect(accepted?.observedGeneration).toBe(held.metadata.generation);

    // The other tenant's route: the client takes it, so it is Programmed.
    const started = Date.now();
    await apply(cp, other);
    await waitForConditions(cp, "other", "True(Valid)", "True(Synced)", "tenant-b", 30_000);
    expect(Date.now() - started).toBeLessThan(10_000);
    const r = await cp.kubectl([
      "delete",
      "edgeroutes.v2.net.10xdev.io",
      "other",
      "-n",
      "tenant-b",
      "--wait=false",
    ]);
    expect(r.code).toBe(0);
    await waitFor(
      "tenant-b/other to be gone",
      async () => ((await getRoute(cp, "other", "tenant-b")) === undefined ? true : undefined),
      30_000,
    );
    // Still held: nothing about it changed.
    expect((await getRoute(cp, "retrying", "tenant-a"))?.status?.conditions).toContainEqual(
      expect.objectContaining({ type: "Accepted", status: "False", reason: "Rejected" }),
    );
  }, 120_000);

  it("edited, the route is tried again: the client takes it, and it is Programmed", async () => {
    await apply(cp, retrying("2s"));
    await waitForConditions(cp, "retrying", "True(Valid)", "True(Synced)", "tenant-a", 30_000);
  }, 60_000);

  it("a route stored past admission (the validating webhook gone) is refused by the guard with admission's words, and never served", async () => {
    const name = registrationName(DEFAULT_REGISTRATION_NAME, "validate");
    expect((await cp.kubectl(["delete", "validatingwebhookconfiguration", name])).code).toBe(0);
    const crlf = route(
      "crlf",
      {
        hostnames: ["other.example.com"],
        rules: [
          {
            matches: [{ path: { type: "PathPrefix", value: "/" } }],
            filters: [
              {
                type: "ResponseHeaderModifier",
                responseHeaderModifier: { set: [{ name: "x-a", value: "a\r\nb" }] },
              },
            ],
            backends: [{ name: "app", port: PORT }],
          },
        ],
      },
      "tenant-b",
    );
    await apply(cp, crlf);
    const refused = await waitForConditions(
      cp,
      "crlf",
      "False(Invalid)",
      "False(Pending)",
      "tenant-b",
      30_000,
    );
    expect(refused.status?.conditions?.find((c) => c.type === "Accepted")?.message).toBe(
      'spec.rules[0].filters[0].responseHeaderModifier.set[0].value: Invalid value: "a\\r\\nb": must not contain CR, LF or NUL (Envoy refuses them)',
    );
    // The rest is still served: the held route's fix stays Programmed.
    await waitForConditions(cp, "retrying", "True(Valid)", "True(Synced)", "tenant-a", 30_000);
  }, 60_000);
});
