// What a TLS route's Programmed may claim, and what a client without a
// client certificate is served: the snapshot's plain view holds no HTTPS
// listener, no `https/HOST` and no Secret, and such a client (an Envoy with
// scope `*`) does not make a route that serves a host over HTTPS Programmed.

import { describe, expect, it } from "vitest";
import { GOLDEN_NOW, goldenInput } from "../../../test/golden/xds-cases.js";
import { HTTPS_LISTENER_NAME, TYPE_URL } from "../../envoy/envoy-resources.js";
import { buildSnapshot } from "../../translate/snapshot.js";
import { ACKED } from "./ack-tracker.js";
import { requiredNames, XdsEncoder } from "./resources.js";
import { RouteVerdicts } from "./route-standing.js";

function served(name: string) {
  const { routes, endpoints, secrets } = goldenInput(name);
  return new XdsEncoder().encode(
    buildSnapshot(routes, endpoints, { configSource: { kind: "ads" }, now: GOLDEN_NOW }, secrets),
  );
}
const EVERY = { wildcard: true, names: new Set<string>() };
const names = (x: ReturnType<typeof served>, url: string) => x.types.get(url)?.list.map((r) => r.name);

describe("TLS and who is served it", () => {
  it("the plain view has no HTTPS side, the whole one requires its Secret and routes", () => {
    const xds = served("tls-redirect-vs-allow");
    expect(names(xds, TYPE_URL.listener)).toEqual(["http", HTTPS_LISTENER_NAME]);
    expect(names(xds, TYPE_URL.secret)).toEqual(["shop/multi-tls"]);
    expect([...(requiredNames(xds, EVERY).get(TYPE_URL.secret) ?? [])]).toEqual(["shop/multi-tls"]);
    expect([...(requiredNames(xds, EVERY).get(TYPE_URL.routeConfiguration) ?? [])].sort()).toEqual([
      "edge",
      "https/a.example.com",
      "https/b.example.com",
    ]);
    const plain = xds.plain;
    expect(plain.plain).toBe(plain);
    expect(names(plain, TYPE_URL.listener)).toEqual(["http"]);
    expect(names(plain, TYPE_URL.routeConfiguration)).toEqual(["edge"]);
    expect(names(plain, TYPE_URL.secret)).toEqual([]);
    expect([...(requiredNames(plain, EVERY).get(TYPE_URL.secret) ?? [])]).toEqual([]);
    // Without TLS the plain view is the snapshot itself.
    const noTls = served("single-route");
    expect(noTls.plain).toBe(noTls);
  });

  it("an Envoy without a client certificate does not make a TLS route Programmed; one with it does, and a gRPC client does", () => {
    const xds = served("tls-redirect-vs-allow");
    expect([...xds.tlsRoutes].sort()).toEqual(["shop/allowed", "shop/redirected"]);
    const verdict = (servesTls: boolean, scope: "*" | string[] = "*") =>
      new RouteVerdicts(xds, [{ id: "envoy", status: ACKED, scope, servesTls }], "pending").live(
        "shop/redirected",
      );
    expect(verdict(false).ok).toBe(false);
    expect(verdict(true).ok).toBe(true);
    expect(verdict(false, ["a.example.com"]).ok).toBe(true);
    // A route without TLS is as before.
    const plainRoute = served("single-route");
    expect(
      new RouteVerdicts(plainRoute, [{ id: "envoy", status: ACKED, scope: "*", servesTls: false }], "p").live(
        "shop/storefront",
      ).ok,
    ).toBe(true);
  });
});
