// The ADS port's connection limits, attacked on loopback: one address past its
// share, all addresses past the total, connections that never open a stream,
// and more streams on one connection than a proxy needs. Small limits here;
// the defaults and what they cost are in docs/architecture.md.

import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adsSnapshot, edgeRoute, endpoints, PORT } from "../../../test/xds/fixtures.js";
import { adsClient, sotwStream } from "../../../test/xds/raw-ads-client.js";
import { TYPE_URL } from "../../envoy/envoy-resources.js";
import { AdsServer, MAX_STREAMS_PER_CONNECTION } from "./ads-server.js";
import { XdsEncoder } from "./resources.js";

const IDLE_MS = 400;
let server: AdsServer;
let port: number;
const sockets: Socket[] = [];

/** A TCP connection from `from` (any 127/8 address is this host's on Linux); resolves once connected. */
function open(from = "127.0.0.1"): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: "127.0.0.1", port, localAddress: from }, () => resolve(s));
    s.on("error", () => undefined);
    s.once("error", reject);
    s.resume(); // flowing, so the server's close reaches 'close' here
    sockets.push(s);
  });
}

/** Whether the server closed the socket within `ms`. */
function closedWithin(s: Socket, ms: number): Promise<boolean> {
  if (s.destroyed || s.readableEnded) return Promise.resolve(true);
  return new Promise((resolve) => {
    const t = setTimeout(() => resolve(false), ms);
    s.once("close", () => {
      clearTimeout(t);
      resolve(true);
    });
  });
}

beforeAll(async () => {
  server = new AdsServer({ connections: { perPeer: 3, total: 5, idleMs: IDLE_MS } });
  port = await server.listen("127.0.0.1", 0);
  const snapshot = adsSnapshot(
    [
      edgeRoute(
        "r",
        ["limits.example.com"],
        [
          {
            matches: [{ path: { type: "PathPrefix", value: "/" } }],
            backends: [{ name: "blue", port: PORT }],
          },
        ],
      ),
    ],
    endpoints({ blue: [1] }),
  );
  server.serve(new XdsEncoder().encode(snapshot));
});

afterAll(() => {
  for (const s of sockets) s.destroy();
  server.stop();
});

describe("the ADS port's connection limits", () => {
  it("one address holds at most perPeer connections; all addresses at most total", async () => {
    const mine = [await open(), await open(), await open()];
    const fourth = await open();
    expect(await closedWithin(fourth, 300)).toBe(true);
    // Another address still gets in, up to the total.
    const other = [await open("127.0.0.2"), await open("127.0.0.2")];
    const third = await open("127.0.0.3");
    expect(await closedWithin(third, 300)).toBe(true);
    for (const s of [...mine, ...other]) expect(s.destroyed).toBe(false);
    for (const s of [...mine, ...other]) s.destroy();
    await new Promise((r) => setTimeout(r, 50));
  });

  it("a connection that never opens a stream is closed after idleMs; one with a stream stays", async () => {
    const opened = Date.now();
    const silent = await open("127.0.0.4");
    const client = adsClient(port);
    const stream = sotwStream(client);
    stream.send({ node: { id: "stays", cluster: "edge" }, type_url: TYPE_URL.listener, resource_names: [] });
    await stream.next();
    expect(await closedWithin(silent, IDLE_MS + 1_000)).toBe(true);
    expect(Date.now() - opened).toBeGreaterThanOrEqual(IDLE_MS - 50);
    await new Promise((r) => setTimeout(r, IDLE_MS + 200));
    expect(server.clients().map((c) => c.id)).toEqual(["stays"]);
    stream.end();
    client.close();
  });

  it(`one connection runs at most ${MAX_STREAMS_PER_CONNECTION} streams at once`, async () => {
    const client = adsClient(port);
    const streams = Array.from({ length: MAX_STREAMS_PER_CONNECTION + 4 }, (_, i) => {
      const s = sotwStream(client);
      s.call.on("error", () => undefined);
      s.send({ node: { id: `s${i}`, cluster: "edge" }, type_url: TYPE_URL.listener, resource_names: [] });
      return s;
    });
    await new Promise((r) => setTimeout(r, 500));
    expect(server.clients().length).toBe(MAX_STREAMS_PER_CONNECTION);
    for (const s of streams) s.end();
    client.close();
  });
});
