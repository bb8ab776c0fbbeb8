// Statuses follow xDS clients coming and going, end to end on a real
// apiserver: `serve --dataplane xds` and the watcher, one route, and no change
// to any object while clients connect, leave and answer late. What a user
// reads with `kubectl get edgeroute` must turn within 5 s of the client's
// move: grpc-go's xDS client joining (Synced) and exiting (NoDataPlane), and a
// client that holds its answer past the ACK timeout (Pending) and then ACKs.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EdgeRouteV2 } from "../../src/api/types.js";
import { TYPE_URL } from "../../src/envoy/envoy-resources.js";
import type { KubeClient } from "../../src/kube/client.js";
import { edgeRoutePath } from "../../src/kube/paths.js";
import { startControlPlane } from "../harness/control-plane.js";
import type { ControlPlane } from "../../tools/testenv/control-plane.js";
import { startOperatorStack, type OperatorStack } from "../harness/operator-stack.js";
import { freePort, waitFor } from "../../tools/testenv/process.js";
import { startGoXdsClient } from "../harness/xds-go.js";
import { startSotwClient } from "../xds/scripted-ads-client.js";
import { apply, cond } from "./routes.js";

const NS = "default";
const HOST = "standing.example.com";
const SERVICE_PORT = 50051;
const CLUSTER = `${NS}/blue:${SERVICE_PORT}`;
/** The bound: a client leaving or joining is in status within 5 s. */
const WITHIN_MS = 5_000;
const ACK_TIMEOUT_S = 2;

let cp: ControlPlane;
let stack: OperatorStack;
let kube: KubeClient;
let adsPort: number;
const figures: string[] = [];

function figure(line: string): void {
  figures.push(line);
  process.stdout.write(`[xds-standing] ${line}\n`);
}

async function programmedNow(): Promise<string> {
  const r = await kube.json<EdgeRouteV2>("GET", edgeRoutePath(NS, "r"), { timeoutMs: 5_000 });
  return cond(r, "Programmed");
}

/** Milliseconds from `t0` until the route's Programmed condition reads `want`, polled every 50 ms. */
async function until(want: string, t0: number, timeoutMs = 30_000): Promise<number> {
  let last = "";
  try {
    await waitFor(
      `Programmed=${want}`,
      async () => {
        last = await programmedNow();
        return last === want ? true : undefined;
      },
      timeoutMs,
      50,
    );
  } catch (e) {
    throw new Error(`${(e as Error).message}; last seen: Programmed=${last}`);
  }
  return performance.now() - t0;
}

beforeAll(async () => {
  cp = await startControlPlane();
  kube = cp.kube();
  adsPort = await freePort();
  stack = await startOperatorStack(cp, {
    serveArgs: [
      "--dataplane",
      "xds",
      "--xds-listen",
      `127.0.0.1:${adsPort}`,
      "--xds-plaintext",
      "--xds-ack-timeout",
      `${ACK_TIMEOUT_S}s`,
    ],
    storageVersion: "v2",
  });
  await apply(
    cp,
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "blue", namespace: NS },
      spec: { ports: [{ name: "grpc", port: SERVICE_PORT, protocol: "TCP" }] },
    },
    {
      apiVersion: "net.10xdev.io/v2",
      kind: "EdgeRoute",
      metadata: { name: "r", namespace: NS },
      spec: {
        hostnames: [HOST],
        rules: [
          {
            matches: [{ path: { type: "PathPrefix", value: "/echo.Echo" } }],
            backends: [{ name: "blue", port: SERVICE_PORT }],
          },
        ],
      },
    },
  );
  await until("False(NoDataPlane)", performance.now());
}, 300_000);

afterAll(async () => {
  if (figures.length > 0) process.stdout.write(`[xds-standing] figures:\n  ${figures.join("\n  ")}\n`);
  await stack?.stop();
  await cp?.stop();
});

describe("Programmed follows xDS clients joining, leaving and answering late", () => {
  it("grpc-go's client joins: Synced within 5 s; it exits: NoDataPlane within 5 s, with no object changed", async () => {
    const t0 = performance.now();
    const client = await startGoXdsClient({ adsPort, nodeId: "standing-go" });
    // The call makes the channel, which subscribes; no endpoints, so it fails, and that is fine.
    void client.call({ host: HOST, timeoutMs: 2_000 });
    const joined = await until("True(Synced)", t0);
    figure(`grpc-go joined → Synced in ${(joined / 1000).toFixed(2)} s`);
    expect(joined).toBeLessThan(WITHIN_MS);

    const t1 = performance.now();
    await client.stop();
    const left = await until("False(NoDataPlane)", t1);
    figure(`grpc-go exited → NoDataPlane in ${(left / 1000).toFixed(2)} s`);
    expect(left).toBeLessThan(WITHIN_MS);
  }, 60_000);

  it("a client that answers after the ACK timeout: Pending, then Synced within 5 s of its ACK", async () => {
    const c = startSotwClient({
      port: adsPort,
      node: "standing-late",
      subscriptions: [
        [TYPE_URL.listener, [HOST]],
        [TYPE_URL.routeConfiguration, [`edge/${HOST}`]],
        [TYPE_URL.cluster, [CLUSTER]],
        [TYPE_URL.clusterLoadAssignment, [CLUSTER]],
      ],
    });
    try {
      c.answer(TYPE_URL.routeConfiguration, { kind: "hold" });
      await c.waitFor(TYPE_URL.routeConfiguration, () => true);
      await until("False(Pending)", performance.now(), 30_000);
      const t0 = performance.now();
      c.answer(TYPE_URL.routeConfiguration, { kind: "ack" });
      const late = await until("True(Synced)", t0);
      figure(`late ACK → Synced in ${(late / 1000).toFixed(2)} s`);
      expect(late).toBeLessThan(WITHIN_MS);
    } finally {
      await c.close();
    }
    await until("False(NoDataPlane)", performance.now(), WITHIN_MS);
  }, 60_000);
});
