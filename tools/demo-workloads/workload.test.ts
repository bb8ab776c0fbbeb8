// The demo's workload on loopback, with the real proxyless client: two
// `backend` processes, one `client` process on the operator's ADS server (the
// xds sink, in this process, fed snapshots built from EdgeRoutes), read and
// driven through its status port as the demo does. The client must route to
// the backends, say what its xDS client holds (from CSDS) and, with its link
// cut, keep serving from that while the server's push goes unanswered; with
// the link back, take the push. A second server with a short keepalive gives
// up on the cut link, and the client must reconnect once the link is back.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EdgeRouteV2 } from "../../src/api/types.js";
import { readClientState, setLink, type ClientState } from "../demo/client-state.js";
import { startLocalWorkload, type LocalWorkload } from "../demo/local-workload.js";
import { backendArgs, clientArgs } from "../demo/workloads.js";
import type { Snapshot } from "../../src/translate/snapshot.js";
import { TYPE_URL } from "../../src/envoy/envoy-resources.js";
import type { ProgramResult } from "../../src/dataplane/dataplane.js";
import { XdsDataPlane } from "../../src/dataplane/xds/xds-dataplane.js";
import { sleep, waitFor } from "../testenv/process.js";
import { adsSnapshot, edgeRoute, endpoints, PORT } from "../../test/xds/fixtures.js";

const HOST = "shop.example.com";
const METHOD = "/api.Checkout/Get";
const ACK_TIMEOUT_MS = 2_000;

const route = (name: string, prefix: string, backend: string): EdgeRouteV2 =>
  edgeRoute(
    name,
    [HOST],
    [
      {
        matches: [{ path: { type: "PathPrefix", value: prefix } }],
        backends: [{ name: backend, port: PORT }],
      },
    ],
  );

let blue: LocalWorkload;
let green: LocalWorkload;
const started: LocalWorkload[] = [];
const planes: XdsDataPlane[] = [];

async function client(_plane: XdsDataPlane, adsPort: number, nodeId: string): Promise<string> {
  const c = await startLocalWorkload(
    clientArgs({
      ads: `127.0.0.1:${adsPort}`,
      nodeId,
      targets: [{ host: HOST, method: METHOD }],
      statusPort: 0,
      statusHost: "127.0.0.1",
      intervalMs: 100,
    }),
    { entry: "source", name: nodeId },
  );
  started.push(c);
  return c.statusUrl as string;
}

async function newPlane(keepalive?: { timeMs: number; timeoutMs: number }): Promise<[XdsDataPlane, number]> {
  const plane = new XdsDataPlane({ ackTimeoutMs: ACK_TIMEOUT_MS, ...(keepalive ? { keepalive } : {}) });
  planes.push(plane);
  return [plane, await plane.listen("127.0.0.1", 0)];
}

/** program(), again until it is taken (a client may still be connecting); bounded. */
async function programTaken(
  plane: XdsDataPlane,
  snapshot: Snapshot,
  timeoutMs = 15_000,
): Promise<ProgramResult> {
  return waitFor(
    `version ${snapshot.version} taken`,
    async () => {
      const r = await plane.program(snapshot);
      return r.ok ? r : undefined;
    },
    timeoutMs,
    200,
  );
}

function until(
  url: string,
  what: string,
  done: (s: ClientState) => boolean,
  timeoutMs = 15_000,
): Promise<ClientState> {
  let last: ClientState | undefined;
  return waitFor(
    what,
    async () => {
      last = await readClientState(url);
      return done(last) ? last : undefined;
    },
    timeoutMs,
    100,
  ).catch((e: Error) => {
    throw new Error(`${e.message}; last state: ${JSON.stringify(last)}`);
  });
}

const target = (s: ClientState) => s.targets[HOST];
const lastBackend = (s: ClientState) => {
  const last = target(s)?.last;
  return last?.ok ? last.backend : undefined;
};
const rdsAcked = (plane: XdsDataPlane) => plane.clients()[0]?.types[TYPE_URL.routeConfiguration]?.acked;

// Two snapshots: v1 routes /api.Checkout to blue; v2 sends it to green and adds a second route on the host.
let v1: Snapshot;
let v2: Snapshot;

beforeAll(async () => {
  [blue, green] = await Promise.all([
    startLocalWorkload(backendArgs({ port: 0, host: "127.0.0.1", name: "blue-1" }), {
      entry: "source",
      name: "blue",
    }),
    startLocalWorkload(backendArgs({ port: 0, host: "127.0.0.1", name: "green-1" }), {
      entry: "source",
      name: "green",
    }),
  ]);
  started.push(blue, green);
  const eps = endpoints({ blue: [blue.port], green: [green.port] });
  v1 = adsSnapshot([route("checkout", "/api.Checkout", "blue")], eps);
  v2 = adsSnapshot(
    [route("checkout", "/api.Checkout", "green"), route("orders", "/api.Orders", "blue")],
    eps,
  );
}, 60_000);

afterAll(async () => {
  await Promise.all(started.map((w) => w.stop()));
  for (const p of new Set(planes)) p.stop();
});

describe("the demo's workload: a proxyless gRPC client and backends", () => {
  it("with no snapshot served, the client runs and counts its failed calls", async () => {
    const url = await client(...(await newPlane()), "demo-any-method");
    // No server holds a snapshot: the client's calls fail, but it runs and says so.
    const s = await until(url, "a failed call", (x) => (target(x)?.failed ?? 0) > 0);
    expect(s).toMatchObject({ node: "demo-any-method", link: "up", held: { routes: [] } });
    expect(target(s)?.last).toMatchObject({ ok: false });
  });

  it("routes to the backend, holds the route, keeps serving through a cut, takes the push once back", async () => {
    const [plane, adsPort] = await newPlane();
    await plane.program(v1);
    const url = await client(plane, adsPort, "demo-client");

    // Calls reach blue; CSDS shows the route (by its EdgeRoute key) and the version served.
    let s = await until(url, "a call to blue-1", (x) => target(x)?.last?.ok === true);
    expect(target(s)?.last).toMatchObject({ ok: true, backend: "blue-1" });
    expect(await programTaken(plane, v1)).toMatchObject({ ok: true, version: v1.version });
    // All four types came in v1 (the first snapshot the client saw).
    s = await until(url, "v1 held", (x) => Object.values(x.held.versions).every((v) => v === v1.version));
    expect(s.held.routes).toEqual(["shop/checkout"]);
    expect(s.history.at(-1)).toMatchObject({ rdsVersion: v1.version, routes: ["shop/checkout"] });

    // Cut: the push of v2 goes unanswered, and calls keep going to blue from what the client holds.
    expect(await setLink(url, "cut")).toBe("cut");
    const before = target(await readClientState(url));
    const pushed = await plane.program(v2);
    expect(pushed).toMatchObject({ ok: false, reason: "Pending" });
    expect(rdsAcked(plane)).toBe(v1.version);
    await sleep(1_000);
    s = await readClientState(url);
    expect(s.link).toBe("cut");
    expect(s.held.versions.rds).toBe(v1.version);
    expect(target(s)?.failed).toBe(before?.failed);
    expect((target(s)?.ok ?? 0) - (before?.ok ?? 0)).toBeGreaterThanOrEqual(10);
    expect(target(s)?.last).toMatchObject({ ok: true, backend: "blue-1" });

    // Up: the same connection flows again, the client takes v2 and calls go to green.
    expect(await setLink(url, "up")).toBe("up");
    expect(await programTaken(plane, v2)).toMatchObject({ ok: true, version: v2.version });
    s = await until(url, "v2 held", (x) => x.held.versions.rds === v2.version);
    expect(s.held.routes).toEqual(["shop/checkout", "shop/orders"]);
    s = await until(url, "a call to green-1", (x) => lastBackend(x) === "green-1");
    expect(s.history.slice(-2).map((h) => [h.rdsVersion, h.routes])).toEqual([
      [v1.version, ["shop/checkout"]],
      [v2.version, ["shop/checkout", "shop/orders"]],
    ]);
  }, 60_000);

  it("a cut the server gives up on: calls go on, and once back the client reconnects and takes the push", async () => {
    // A keepalive of 1 s + 1 s, so that the server closes the silent connection within the cut.
    const [plane, adsPort] = await newPlane({ timeMs: 1_000, timeoutMs: 1_000 });
    await plane.program(v1);
    const url = await client(plane, adsPort, "demo-client-2");
    await until(url, "a call to blue-1", (x) => target(x)?.last?.ok === true);
    await programTaken(plane, v1);

    await setLink(url, "cut");
    const before = target(await readClientState(url));
    await waitFor(
      "the server to close the silent connection",
      async () => (plane.clients().length === 0 ? true : undefined),
      8_000,
      100,
    );
    await plane.program(v2);
    const s = await readClientState(url);
    expect(target(s)?.failed).toBe(before?.failed);
    expect(target(s)?.last).toMatchObject({ ok: true, backend: "blue-1" });
    expect(s.held.versions.rds).toBe(v1.version);

    await setLink(url, "up");
    expect(await programTaken(plane, v2)).toMatchObject({ ok: true, version: v2.version });
    await until(url, "v2 held", (x) => x.held.versions.rds === v2.version);
    await until(url, "a call to green-1", (x) => lastBackend(x) === "green-1");
  }, 60_000);

  it("the status port refuses what it does not serve, in JSON", async () => {
    const url = (started.find((w) => w.mode === "client") as LocalWorkload).statusUrl as string;
    const res = async (path: string, init?: RequestInit) => {
      const r = await fetch(new URL(path, url), init);
      return [r.status, (await r.json()) as { error?: string }] as const;
    };
    expect((await res("/nope"))[0]).toBe(404);
    expect((await res("/link"))[0]).toBe(405);
    expect((await res("/link", { method: "POST", body: "{" }))[0]).toBe(400);
    expect((await res("/link", { method: "POST", body: '{"state":"down"}' }))[0]).toBe(400);
    const [big, body] = await res("/link", { method: "POST", body: "x".repeat(2048) });
    expect(big).toBe(413);
    expect(body.error).toMatch(/1024/);
    await expect(setLink(url, "up")).resolves.toBe("up");
    await expect(readClientState("http://127.0.0.1:1")).rejects.toThrow(/ECONNREFUSED/);
  });
});
