// The xds sink end to end on a real apiserver: `serve --dataplane xds` with
// the watcher, routes applied and deleted with kubectl, and gRPC's own xDS
// client (@grpc/grpc-js-xds) in this process as the data plane whose ACKs
// decide `Programmed` and the finalizer.

import { createServer } from "node:net";
import type * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startControlPlane } from "../harness/control-plane.js";
import type { ControlPlane } from "../../tools/testenv/control-plane.js";
import { startOperatorStack, type OperatorStack } from "../harness/operator-stack.js";
import { httpsJson } from "../../tools/testenv/https-json.js";
import { waitFor } from "../../tools/testenv/process.js";
import { callEcho } from "../xds/echo-backend.js";
import { useXdsServer, xdsClient } from "../xds/grpc-xds-client.js";
import { apply, getRoute, waitForConditions } from "./routes.js";

const HOST = "shop.example.com";
const SERVICE_PORT = 50051;

let cp: ControlPlane;
let stack: OperatorStack;
let adsPort: number;
let client: grpc.Client;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

const blueService = {
  apiVersion: "v1",
  kind: "Service",
  metadata: { name: "blue", namespace: "default" },
  spec: { ports: [{ name: "grpc", port: SERVICE_PORT, protocol: "TCP" }] },
};

const echoRoute = {
  apiVersion: "net.10xdev.io/v2",
  kind: "EdgeRoute",
  metadata: { name: "echo", namespace: "default" },
  spec: {
    hostnames: [HOST],
    rules: [
      {
        matches: [{ path: { type: "PathPrefix", value: "/echo.Echo" } }],
        backends: [{ name: "blue", port: SERVICE_PORT }],
      },
    ],
  },
};

beforeAll(async () => {
  cp = await startControlPlane();
  adsPort = await freePort();
  stack = await startOperatorStack(cp, {
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
});

afterAll(async () => {
  client?.close();
  await stack?.stop();
  await cp?.stop();
});

describe("serve --dataplane xds with a real xDS client", () => {
  // Endpoints stay empty: the apiserver refuses loopback addresses in an
  // EndpointSlice, and traffic in these tests stays on loopback. RPC routing to
  // real backends is tested on the sink itself (src/dataplane/xds/grpc-client.test.ts).
  it("with no client connected the route is Accepted but not Programmed: NoDataPlane", async () => {
    await apply(cp, blueService, echoRoute);
    const r = await waitForConditions(cp, "echo", "True(Valid)", "False(NoDataPlane)");
    const programmed = r.status?.conditions?.find((c) => c.type === "Programmed");
    expect(programmed?.message).toBe("no xDS client is connected: nothing serves this route yet");
  });

  it("a client connects: the route turns Programmed=True once the client ACKed the version that holds it", async () => {
    await useXdsServer(adsPort, "it-client");
    client = xdsClient(HOST);
    // Routed to the route's cluster, which has no endpoints (grpc-js-xds 1.14's words).
    await waitFor("the client to route /echo.Echo to the empty cluster", async () => {
      const reply = await callEcho(client, { deadlineMs: 2_000 });
      return !reply.ok && /empty priority list/.test(reply.details) ? true : undefined;
    });
    await waitForConditions(cp, "echo", "True(Valid)", "True(Synced)", "default", 30_000);
    const debug = await httpsJson(
      `${stack.serve.url}/debug/xds`,
      stack.serve.caPem,
      "GET",
      undefined,
      stack.token,
    );
    expect(debug.status).toBe(200);
    expect(debug.body).toMatchObject({
      verdict: { kind: "synced", clients: 1 },
      clients: [{ id: "it-client" }],
    });
  });

  it("the route deleted: by the time the object is gone, the client already finds no route", async () => {
    const r = await cp.kubectl(["delete", "edgeroutes.v2.net.10xdev.io", "echo", "--wait=false"]);
    expect(r.code).toBe(0);
    await waitFor(
      "echo to be gone",
      async () => ((await getRoute(cp, "echo")) === undefined ? true : undefined),
      30_000,
      50,
    );
    // The finalizer went only after the client ACKed a version without the route.
    const reply = await callEcho(client, { deadlineMs: 2_000 });
    expect(reply).toMatchObject({ ok: false, details: "Failed to route call to method /echo.Echo/Call" });
  });
});

describe("a replica no /reconcile reaches", () => {
  it("serves its own cache's snapshot: a route applied with no watcher running reaches the client", async () => {
    for (const w of stack.watchers) await w.stop();
    const host = "cache-only.example.com";
    const before = await httpsJson(
      `${stack.serve.url}/debug/xds`,
      stack.serve.caPem,
      "GET",
      undefined,
      stack.token,
    );
    const cacheOnly = xdsClient(host);
    try {
      await apply(cp, {
        ...echoRoute,
        metadata: { name: "cache-only", namespace: "default" },
        spec: { ...echoRoute.spec, hostnames: [host] },
      });
      // Routed (to the route's cluster, without endpoints): the snapshot holds the route.
      await waitFor("the client to route the new host", async () => {
        const reply = await callEcho(cacheOnly, { deadlineMs: 2_000 });
        return !reply.ok && /empty priority list/.test(reply.details) ? true : undefined;
      });
      const after = await httpsJson(
        `${stack.serve.url}/debug/xds`,
        stack.serve.caPem,
        "GET",
        undefined,
        stack.token,
      );
      expect((after.body as { version: string }).version).not.toBe(
        (before.body as { version: string }).version,
      );
      // Nobody called /reconcile. Statuses stay the snapshot reconcile's: with no watcher
      // it runs only when a client's standing changes (standing-trigger.ts, checked in
      // xds-standing.test.ts), so whether this route has one yet depends on timing.
    } finally {
      cacheOnly.close();
      await cp.kubectl(["delete", "edgeroutes.v2.net.10xdev.io", "cache-only", "--wait=false"]);
    }
  });
});
