// No ADS response outgrows a gRPC client: grpc-js (like grpc-go) refuses a
// received message over 4 MiB (grpc.max_receive_message_length), fails the
// stream, and from then on takes no update for any host. So one tenant who
// fills a host with large routes must not stop another tenant's route from
// reaching a client that dials both hosts: the snapshot's guard gives each
// host at most LIMITS.maxHostBytes, oldest routes first, and the rest are
// Accepted=False/HostFull. Shown with @grpc/grpc-js-xds at its default options.

import type { Client } from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callEcho, startEchoBackend, type EchoBackend } from "../../../test/xds/echo-backend.js";
import { adsSnapshot, edgeRoute, endpoints, PORT } from "../../../test/xds/fixtures.js";
import { useXdsServer, xdsClient } from "../../../test/xds/grpc-xds-client.js";
import { LIMITS } from "../../api/schema.js";
import type { EdgeRouteV2 } from "../../api/types.js";
import type { Snapshot } from "../../translate/snapshot.js";
import { XdsDataPlane } from "./xds-dataplane.js";

const FULL = "full.example.com";
const OTHER = "other.example.com";

let plane: XdsDataPlane;
let blue: EchoBackend;
let green: EchoBackend;
let full: Client;
let other: Client;

/** A route of about 61 KB as a proxy receives it: fifteen 4,000-character header values. */
function bigRoute(i: number, host = FULL): EdgeRouteV2 {
  const set = Array.from({ length: 15 }, (_, h) => ({ name: `x-h${h}`, value: `${i}`.padEnd(4000, "v") }));
  return edgeRoute(
    `big-${String(i).padStart(3, "0")}`,
    [host],
    [
      {
        matches: [{ path: { type: "Exact", value: `/big/${i}` } }],
        filters: [{ type: "RequestHeaderModifier", requestHeaderModifier: { set } }],
        backends: [{ name: "blue", port: PORT }],
      },
    ],
  );
}

const toGreen = edgeRoute(
  "other",
  [OTHER],
  [{ matches: [{ path: { value: "/" } }], backends: [{ name: "green", port: PORT }] }],
);
const toBlue = edgeRoute(
  "full",
  [FULL],
  [{ matches: [{ path: { value: "/" } }], backends: [{ name: "blue", port: PORT }] }],
);

/** Serves `snap` until the client ACKed it (bounded); the last answer. */
async function serve(snap: Snapshot): Promise<Awaited<ReturnType<XdsDataPlane["program"]>>> {
  let r = await plane.program(snap);
  for (let i = 0; i < 20 && !r.ok; i++) {
    await new Promise((res) => setTimeout(res, 250));
    r = await plane.program(snap);
  }
  return r;
}

beforeAll(async () => {
  [blue, green] = await Promise.all([startEchoBackend("blue-1"), startEchoBackend("green-1")]);
  plane = new XdsDataPlane({ ackTimeoutMs: 2_000 });
  const port = await plane.listen("127.0.0.1", 0);
  await useXdsServer(port, "size-client");
  await plane.program(adsSnapshot([toBlue], endpoints({ blue: [blue.port], green: [green.port] })));
  full = xdsClient(FULL);
  other = xdsClient(OTHER);
  expect(await callEcho(full, { deadlineMs: 10_000 })).toEqual({ ok: true, backend: "blue-1" });
}, 30_000);

afterAll(() => {
  full?.close();
  other?.close();
  plane?.stop();
  blue?.stop();
  green?.stop();
});

describe("a host filled with large routes", () => {
  it("keeps its oldest routes within the host's budget, and another host's new route still reaches a client of both", async () => {
    // 80 routes of 61 KB: 4.9 MB on one host, past the client's 4 MiB, were all of them sent.
    const routes = [toBlue, ...Array.from({ length: 80 }, (_, i) => bigRoute(i)), toGreen];
    const snap = adsSnapshot(routes, endpoints({ blue: [blue.port], green: [green.port] }));
    const outcomes = new Map(snap.outcomes.map((o) => [o.key, o]));
    const kept = snap.outcomes.filter((o) => o.key.startsWith("shop/big-") && o.accepted).length;
    // About 17 fit beside the catch-all route; the rest wait for room.
    expect(kept).toBeGreaterThan(10);
    expect(kept).toBeLessThan(LIMITS.maxHostBytes / 60_000);
    const refused = snap.outcomes.filter((o) => !o.accepted);
    expect(refused.length).toBe(80 - kept);
    for (const o of refused) {
      expect(o).toMatchObject({ accepted: false, reason: "HostFull" });
      // The words name the host and the sizes, never another tenant's route.
      expect(o.accepted ? "" : o.message).toMatch(/^host full\.example\.com is full: /);
      expect(o.accepted ? "" : o.message).not.toMatch(/shop\//);
    }
    expect(outcomes.get("shop/other")).toMatchObject({ accepted: true });

    expect(await serve(snap)).toMatchObject({ ok: true, version: snap.version });
    // The client took the whole update: the other host's route serves, and the
    // full host still serves its oldest route.
    expect(await callEcho(other, { deadlineMs: 10_000 })).toEqual({ ok: true, backend: "green-1" });
    expect(await callEcho(full, { deadlineMs: 10_000 })).toEqual({ ok: true, backend: "blue-1" });
  }, 60_000);
});

describe("a client of several full hosts", () => {
  it("gets their route configurations in responses under 4 MiB each, and takes them all", async () => {
    // Five hosts of 1 MiB each: 5 MiB of route configurations for one client, past its 4 MiB limit in one response.
    const hosts = Array.from({ length: 5 }, (_, h) => `full-${h}.example.com`);
    const routes = [
      toBlue,
      toGreen,
      ...hosts.flatMap((host, h) => [
        edgeRoute(
          `root-${h}`,
          [host],
          [{ matches: [{ path: { value: "/" } }], backends: [{ name: "green", port: PORT }] }],
        ),
        ...Array.from({ length: 16 }, (_, i) => bigRoute(h * 100 + i, host)),
      ]),
    ];
    const snap = adsSnapshot(routes, endpoints({ blue: [blue.port], green: [green.port] }));
    expect(snap.outcomes.filter((o) => !o.accepted)).toEqual([]);
    const clients = hosts.map((h) => xdsClient(h));
    try {
      for (const c of clients) void callEcho(c, { deadlineMs: 500 });
      expect(await serve(snap)).toMatchObject({ ok: true, version: snap.version });
      for (const c of clients)
        expect(await callEcho(c, { deadlineMs: 10_000 })).toEqual({ ok: true, backend: "green-1" });
      // And an update after it still comes: the other host's route moves to blue.
      const moved = adsSnapshot(
        routes.map((r) =>
          r === toGreen
            ? edgeRoute(
                "other",
                [OTHER],
                [{ matches: [{ path: { value: "/" } }], backends: [{ name: "blue", port: PORT }] }],
              )
            : r,
        ),
        endpoints({ blue: [blue.port], green: [green.port] }),
      );
      expect(await serve(moved)).toMatchObject({ ok: true, version: moved.version });
      expect(await callEcho(other, { deadlineMs: 10_000 })).toEqual({ ok: true, backend: "blue-1" });
    } finally {
      for (const c of clients) c.close();
    }
  }, 90_000);
});
