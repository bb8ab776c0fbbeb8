// The xds sink against gRPC's real xDS client (@grpc/grpc-js-xds) and real
// gRPC backends on loopback: what a proxyless client routes is what the
// routes say, and program() answers only what the client ACKed or NACKed.

import { status as grpcStatus, type Client } from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  callEcho,
  OTHER_METHOD,
  startEchoBackend,
  type EchoBackend,
} from "../../../test/xds/echo-backend.js";
import { adsSnapshot, edgeRoute, endpoints, PORT } from "../../../test/xds/fixtures.js";
import { useXdsServer, xdsClient } from "../../../test/xds/grpc-xds-client.js";
import type { Snapshot } from "../../translate/snapshot.js";
import type { ProgramResult } from "../dataplane.js";
import { XdsDataPlane } from "./xds-dataplane.js";

const HOST = "shop.example.com";
const NODE = "test-client";

let plane: XdsDataPlane;
let adsPort: number;
let blue1: EchoBackend;
let blue2: EchoBackend;
let green: EchoBackend;
let client: Client;

const echoRoute = (
  backends: { name: string; weight?: number }[],
  extra: Parameters<typeof edgeRoute>[2] = [],
) =>
  edgeRoute(
    "echo",
    [HOST],
    [
      ...extra,
      {
        matches: [{ path: { type: "PathPrefix", value: "/echo.Echo" } }],
        backends: backends.map((b) => ({ ...b, port: PORT })),
      },
    ],
  );

/** program(), again until it says what the clients did (a client may still be connecting); bounded. */
async function programUntil(
  snapshot: Snapshot,
  done: (r: ProgramResult) => boolean,
  tries = 40,
): Promise<ProgramResult> {
  let r = await plane.program(snapshot);
  for (let i = 1; i < tries && !done(r); i++) {
    await new Promise((res) => setTimeout(res, 250));
    r = await plane.program(snapshot);
  }
  return r;
}

/** Calls until `n` in a row reach `backend` (or `limit` calls are spent): when the client moves over. */
async function settlesOn(backend: string, n = 10, limit = 200): Promise<boolean> {
  let run = 0;
  for (let i = 0; i < limit; i++) {
    const r = await callEcho(client);
    run = r.ok && r.backend === backend ? run + 1 : 0;
    if (run >= n) return true;
  }
  return false;
}

beforeAll(async () => {
  [blue1, blue2, green] = await Promise.all([
    startEchoBackend("blue-1"),
    startEchoBackend("blue-2"),
    startEchoBackend("green-1"),
  ]);
  plane = new XdsDataPlane({ ackTimeoutMs: 5_000 });
  adsPort = await plane.listen("127.0.0.1", 0);
  await useXdsServer(adsPort, NODE);
});

afterAll(() => {
  client?.close();
  plane?.stop();
  for (const b of [blue1, blue2, green]) b?.stop();
});

describe("a proxyless gRPC client on the xds sink", () => {
  it("with no client connected, program() says nothing serves the route", async () => {
    const snap = adsSnapshot([echoRoute([{ name: "blue" }])], endpoints({ blue: [blue1.port] }));
    const r = await plane.program(snap);
    expect(r).toMatchObject({ ok: false, reason: "NoDataPlane", unserved: true });
    expect(await plane.current()).toBeUndefined();
  });

  it("a route applied: RPCs reach its backend, and program() is taken once the client ACKed", async () => {
    const snap = adsSnapshot([echoRoute([{ name: "blue" }])], endpoints({ blue: [blue1.port] }));
    client = xdsClient(HOST);
    const first = await callEcho(client, { deadlineMs: 10_000 });
    expect(first).toEqual({ ok: true, backend: "blue-1" });
    const r = await programUntil(snap, (x) => x.ok);
    expect(r).toEqual({ ok: true, version: snap.version, pushed: false });
    expect(await plane.current()).toBe(snap.version);
    const [report] = plane.clients();
    expect(report?.id).toBe(NODE);
    expect(Object.values(report?.types ?? {}).map((t) => t.acked)).toEqual(Array(4).fill(snap.version));
    // A method outside the route's prefix has no route.
    expect(await callEcho(client, { method: OTHER_METHOD })).toMatchObject({ ok: false });
  });

  it("a header match routes by the header, the rest by the path", async () => {
    const route = echoRoute(
      [{ name: "blue" }],
      [
        {
          matches: [
            {
              path: { type: "PathPrefix", value: "/echo.Echo" },
              headers: [{ name: "x-canary", value: "1" }],
            },
          ],
          backends: [{ name: "green", port: PORT }],
        },
      ],
    );
    const snap = adsSnapshot([route], endpoints({ blue: [blue1.port], green: [green.port] }));
    expect(await plane.program(snap)).toEqual({ ok: true, version: snap.version, pushed: true });
    const canary = await Promise.all(
      Array.from({ length: 20 }, () => callEcho(client, { headers: { "x-canary": "1" } })),
    );
    const plain = await Promise.all(
      Array.from({ length: 20 }, () => callEcho(client, { headers: { "x-canary": "2" } })),
    );
    expect(new Set(canary.map((r) => (r.ok ? r.backend : r.details)))).toEqual(new Set(["green-1"]));
    expect(new Set(plain.map((r) => (r.ok ? r.backend : r.details)))).toEqual(new Set(["blue-1"]));
  });

  it("a weighted 90/10 split holds over 1,000 RPCs (10% ± 4%, over four standard deviations)", async () => {
    const snap = adsSnapshot(
      [
        echoRoute([
          { name: "blue", weight: 90 },
          { name: "green", weight: 10 },
        ]),
      ],
      endpoints({ blue: [blue1.port], green: [green.port] }),
    );
    expect(await plane.program(snap)).toMatchObject({ ok: true, pushed: true });
    const counts = new Map<string, number>();
    for (let batch = 0; batch < 10; batch++) {
      const replies = await Promise.all(Array.from({ length: 100 }, () => callEcho(client)));
      for (const r of replies) {
        const k = r.ok ? r.backend : `error ${r.code}`;
        counts.set(k, (counts.get(k) ?? 0) + 1);
      }
    }
    expect([...counts.keys()].sort()).toEqual(["blue-1", "green-1"]);
    const g = counts.get("green-1") ?? 0;
    expect(g).toBeGreaterThanOrEqual(60);
    expect(g).toBeLessThanOrEqual(140);
  });

  it("endpoints changed: RPCs follow to the new backend, with no edit of the route", async () => {
    const route = echoRoute([{ name: "blue" }]);
    expect(await plane.program(adsSnapshot([route], endpoints({ blue: [blue1.port] })))).toMatchObject({
      ok: true,
    });
    expect(await settlesOn("blue-1")).toBe(true);
    const moved = adsSnapshot([route], endpoints({ blue: [blue2.port] }));
    expect(await plane.program(moved)).toEqual({ ok: true, version: moved.version, pushed: true });
    expect(await settlesOn("blue-2")).toBe(true);
    const before = blue1.calls();
    for (let i = 0; i < 20; i++) expect(await callEcho(client)).toEqual({ ok: true, backend: "blue-2" });
    expect(blue1.calls()).toBe(before);
  });

  it("route deleted: once program() is taken, the client no longer reaches it", async () => {
    const gone = adsSnapshot([], endpoints({ blue: [blue2.port] }));
    expect(await plane.program(gone)).toEqual({ ok: true, version: gone.version, pushed: true });
    // Taken means ACKed: the very next call finds no route (what a finalizer waits for).
    const r = await callEcho(client);
    expect(r.ok).toBe(false);
    const before = blue2.calls();
    for (let i = 0; i < 10; i++) expect((await callEcho(client)).ok).toBe(false);
    expect(blue2.calls()).toBe(before);
  });

  it("a version the client NACKs: Rejected with its words, the previous version keeps serving, the next good one clears it", async () => {
    const route = echoRoute([{ name: "blue" }]);
    const good = adsSnapshot([route], endpoints({ blue: [blue1.port] }));
    expect(await plane.program(good)).toMatchObject({ ok: true });
    expect(await settlesOn("blue-1")).toBe(true);
    // gRPC's client supports ROUND_ROBIN and RING_HASH only: MAGLEV on the route's cluster is refused.
    const bad: Snapshot = {
      ...good,
      version: `${good.version.slice(0, 12)}bad0`,
      resources: {
        ...good.resources,
        clusters: good.resources.clusters.map((c) => ({ ...c, lb_policy: "MAGLEV" })),
      },
    };
    const refused = await plane.program(bad);
    expect(refused).toMatchObject({ ok: false, reason: "Rejected" });
    expect(refused.ok ? "" : refused.message).toMatch(
      new RegExp(`^xDS client ${NODE} rejected it: .*unsupported lb_policy: MAGLEV`),
    );
    expect(await plane.current()).toBeUndefined();
    // Asked again (a reconcile's retry): the same answer, word for word, at once.
    const t0 = Date.now();
    expect(await plane.program(bad)).toEqual(refused);
    expect(Date.now() - t0).toBeLessThan(1_000);
    for (let i = 0; i < 10; i++) expect(await callEcho(client)).toEqual({ ok: true, backend: "blue-1" });
    const fixed = adsSnapshot([route], endpoints({ blue: [blue2.port] }));
    expect(await plane.program(fixed)).toEqual({ ok: true, version: fixed.version, pushed: true });
    expect(await plane.current()).toBe(fixed.version);
    expect(await settlesOn("blue-2")).toBe(true);
  });

  it("a route timeout of 1 s against a backend that answers after 3 s: DEADLINE_EXCEEDED at about 1 s", async () => {
    const slow = await startEchoBackend("slow-1", { delayMs: 3_000 });
    try {
      const route = edgeRoute(
        "echo",
        [HOST],
        [
          {
            matches: [{ path: { type: "PathPrefix", value: "/echo.Echo" } }],
            backends: [{ name: "slow", port: PORT }],
            timeout: "1s",
          },
        ],
      );
      expect(await plane.program(adsSnapshot([route], endpoints({ slow: [slow.port] })))).toMatchObject({
        ok: true,
      });
      const t0 = Date.now();
      const r = await callEcho(client, { deadlineMs: 10_000 });
      const took = Date.now() - t0;
      expect(r).toMatchObject({ ok: false, code: grpcStatus.DEADLINE_EXCEEDED });
      expect(took).toBeGreaterThanOrEqual(900);
      expect(took).toBeLessThan(2_000);
    } finally {
      slow.stop();
    }
  });

  it("server restarted: the client reconnects and gets the current version; nothing claims it before its ACK", async () => {
    const route = echoRoute([{ name: "blue" }]);
    const before = adsSnapshot([route], endpoints({ blue: [blue2.port] }));
    expect(await plane.program(before)).toMatchObject({ ok: true });
    plane.stop();
    plane = new XdsDataPlane({ ackTimeoutMs: 5_000 });
    expect(await plane.listen("127.0.0.1", adsPort)).toBe(adsPort);
    const now = adsSnapshot([route], endpoints({ blue: [blue1.port] }));
    // The client has not come back yet: the new server claims nothing.
    const first = await plane.program(now);
    expect(first.ok).toBe(false);
    const r = await programUntil(now, (x) => x.ok);
    expect(r).toEqual({ ok: true, version: now.version, pushed: false });
    expect(plane.clients().map((c) => c.id)).toEqual([NODE]);
    expect(await settlesOn("blue-1")).toBe(true);
  });
});
