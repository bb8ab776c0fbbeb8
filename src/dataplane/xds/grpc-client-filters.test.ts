// What a rule's timeouts, retry policy and richer matches do in gRPC's real
// xDS client (@grpc/grpc-js-xds) against real gRPC backends on loopback: the
// translation is only right if the client acts on it. Each case was seen to
// fail with its translation taken out (the report of the change says how).

import { status as grpcStatus, type Client } from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  callEcho,
  ECHO_METHOD,
  LONGER_METHOD,
  OTHER_METHOD,
  startEchoBackend,
  type EchoBackend,
} from "../../../test/xds/echo-backend.js";
import { adsSnapshot, edgeRoute, endpoints, PORT } from "../../../test/xds/fixtures.js";
import { useXdsServer, xdsClient } from "../../../test/xds/grpc-xds-client.js";
import type { RouteRule } from "../../api/types.js";
import type { EndpointsByService } from "../../translate/snapshot.js";
import { XdsDataPlane } from "./xds-dataplane.js";

const HOST = "filters.example.com";
const NODE = "filters-client";

let plane: XdsDataPlane;
let blue: EchoBackend;
let green: EchoBackend;
let slow: EchoBackend;
let client: Client;

/** Serves one route of `rules` and waits until the client ACKed it (bounded). */
async function serve(rules: RouteRule[], eps: EndpointsByService): Promise<void> {
  const snap = adsSnapshot([edgeRoute("filters", [HOST], rules)], eps);
  expect(snap.outcomes[0]).toMatchObject({ accepted: true });
  let r = await plane.program(snap);
  for (let i = 0; i < 40 && !r.ok; i++) {
    await new Promise((res) => setTimeout(res, 250));
    r = await plane.program(snap);
  }
  expect(r).toMatchObject({ ok: true, version: snap.version });
}

const prefix = (value: string) => ({ path: { type: "PathPrefix" as const, value } });
const to = (name: string) => [{ name, port: PORT }];

/** Which backend each of `n` calls reached (or the error code). */
async function reached(n: number, opts: Parameters<typeof callEcho>[1] = {}): Promise<Set<string>> {
  const replies = await Promise.all(Array.from({ length: n }, () => callEcho(client, opts)));
  return new Set(replies.map((r) => (r.ok ? r.backend : `code ${r.code}`)));
}

beforeAll(async () => {
  [blue, green, slow] = await Promise.all([
    startEchoBackend("blue-1"),
    startEchoBackend("green-1"),
    startEchoBackend("slow-1", { delayMs: 3_000 }),
  ]);
  plane = new XdsDataPlane({ ackTimeoutMs: 5_000 });
  const port = await plane.listen("127.0.0.1", 0);
  await useXdsServer(port, NODE);
  // The first route is there before the client: its first call connects it.
  const first = adsSnapshot(
    [edgeRoute("filters", [HOST], [{ matches: [prefix("/")], backends: to("blue") }])],
    endpoints({ blue: [blue.port] }),
  );
  await plane.program(first);
  client = xdsClient(HOST);
  expect(await callEcho(client, { deadlineMs: 10_000 })).toEqual({ ok: true, backend: "blue-1" });
}, 30_000);

afterAll(() => {
  client?.close();
  plane?.stop();
  for (const b of [blue, green, slow]) b?.stop();
});

describe("a gRPC client applies a rule's policies and matches", () => {
  it("timeouts.request: a call to a slow backend ends DEADLINE_EXCEEDED at the route's timeout, not the caller's", async () => {
    await serve(
      [{ matches: [prefix("/")], backends: to("slow"), timeouts: { request: "300ms" } }],
      endpoints({ slow: [slow.port] }),
    );
    const start = Date.now();
    const r = await callEcho(client, { deadlineMs: 10_000 });
    const took = Date.now() - start;
    expect(r).toMatchObject({ ok: false, code: grpcStatus.DEADLINE_EXCEEDED });
    expect(took).toBeLessThan(2_000);
  });

  it("retry: a backend failing its first two attempts with UNAVAILABLE is retried until it answers", async () => {
    const flaky = await startEchoBackend("flaky-1", {
      failFirst: { calls: 2, code: grpcStatus.UNAVAILABLE },
    });
    try {
      await serve(
        [
          {
            matches: [prefix("/")],
            backends: to("flaky"),
            retry: { attempts: 3, conditions: ["Unavailable"], backoff: "10ms" },
          },
        ],
        endpoints({ flaky: [flaky.port] }),
      );
      expect(await callEcho(client)).toEqual({ ok: true, backend: "flaky-1" });
      expect(flaky.calls()).toBe(3);
    } finally {
      flaky.stop();
    }
  });

  it("retry: a code the policy does not name (INTERNAL) is not retried", async () => {
    const broken = await startEchoBackend("broken-1", {
      failFirst: { calls: 2, code: grpcStatus.INTERNAL },
    });
    try {
      await serve(
        [
          {
            matches: [prefix("/")],
            backends: to("broken"),
            retry: { attempts: 3, conditions: ["Unavailable"], backoff: "10ms" },
          },
        ],
        endpoints({ broken: [broken.port] }),
      );
      expect(await callEcho(client)).toMatchObject({ ok: false, code: grpcStatus.INTERNAL });
      expect(broken.calls()).toBe(1);
    } finally {
      broken.stop();
    }
  });

  it("a RegularExpression path routes the paths it matches, and only those", async () => {
    await serve(
      [
        {
          matches: [{ path: { type: "RegularExpression", value: "/echo\\.Echo/C[a-z]+" } }],
          backends: to("green"),
        },
        { matches: [prefix("/other.Other")], backends: to("blue") },
      ],
      endpoints({ blue: [blue.port], green: [green.port] }),
    );
    expect(await reached(10)).toEqual(new Set(["green-1"]));
    expect(await reached(10, { method: OTHER_METHOD })).toEqual(new Set(["blue-1"]));
    // The regex is the whole path: /echo.Echo/Call2 is not matched (no route).
    expect(await reached(5, { method: `${ECHO_METHOD}2` })).toEqual(
      new Set([`code ${grpcStatus.UNAVAILABLE}`]),
    );
  });

  it("a RegularExpression alternation matches the whole path or header value: a branch wholly, not a value that starts with the first", async () => {
    // grpc-js-xds compiles `^` + regex + `$`: sent as written, `^/echo\.Echo/Call` alone would take
    // CallMore, and `^team-a` would take team-abc.
    await serve(
      [
        {
          matches: [{ path: { type: "RegularExpression", value: "/echo\\.Echo/Call|/other\\.Other/Call" } }],
          backends: to("green"),
        },
        {
          matches: [
            {
              ...prefix("/other.Other"),
              headers: [{ name: "x-tenant", type: "RegularExpression", value: "team-a|team-b" }],
            },
          ],
          backends: to("blue"),
        },
      ],
      endpoints({ blue: [blue.port], green: [green.port] }),
    );
    expect(await reached(10)).toEqual(new Set(["green-1"]));
    expect(await reached(10, { method: OTHER_METHOD })).toEqual(new Set(["green-1"]));
    expect(await reached(5, { method: LONGER_METHOD })).toEqual(new Set([`code ${grpcStatus.UNAVAILABLE}`]));
    expect(await reached(10, { method: OTHER_METHOD, headers: { "x-tenant": "team-b" } })).toEqual(
      new Set(["blue-1"]),
    );
    expect(await reached(10, { method: OTHER_METHOD, headers: { "x-tenant": "team-abc" } })).toEqual(
      new Set(["green-1"]),
    );
  });

  it("a RegularExpression header routes by a header that is present and matches; absent or other, the path's", async () => {
    await serve(
      [
        {
          matches: [
            { ...prefix("/"), headers: [{ name: "x-tenant", type: "RegularExpression", value: "team-.+" }] },
          ],
          backends: to("green"),
        },
        { matches: [prefix("/")], backends: to("blue") },
      ],
      endpoints({ blue: [blue.port], green: [green.port] }),
    );
    expect(await reached(10, { headers: { "x-tenant": "team-a" } })).toEqual(new Set(["green-1"]));
    expect(await reached(10, { headers: { "x-tenant": "solo" } })).toEqual(new Set(["blue-1"]));
    expect(await reached(10)).toEqual(new Set(["blue-1"]));
  });

  it("a method match: gRPC calls are POST, so a POST rule takes them and a GET rule never does", async () => {
    await serve(
      [
        { matches: [{ ...prefix("/echo.Echo"), method: "GET" }], backends: to("get-only") },
        { matches: [{ ...prefix("/echo.Echo"), method: "POST" }], backends: to("blue") },
      ],
      endpoints({ blue: [blue.port], "get-only": [green.port] }),
    );
    // Taken (serve() waits for it) although the client never asks for get-only's cluster:
    // what it is sent is its own form, and only that form's clusters are waited for.
    expect(await reached(10)).toEqual(new Set(["blue-1"]));
  });
});
