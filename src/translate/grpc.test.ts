// A gRPC client's own resources: its API listener against Envoy's protos, and
// the virtual host a host name lands on.

import { beforeAll, describe, expect, it } from "vitest";
import { EnvoyProtos } from "../../test/envoy/envoy-proto.js";
import { decodeResource, encodeResource } from "../dataplane/xds/proto-codec.js";
import { apiListener, domainFor } from "./grpc.js";

let protos: EnvoyProtos;
beforeAll(() => {
  protos = EnvoyProtos.load();
});

describe("a gRPC client's resources", () => {
  it("the API listener is valid against Envoy's protos and decodes back to its JSON", () => {
    const l = apiListener("shop.example.com");
    expect(protos.check(l["@type"], l)).toEqual([]);
    expect(decodeResource(encodeResource(l))).toEqual(protos.roundTrip(l["@type"], l));
  });

  it("picks a host's virtual host as Envoy and gRPC do: exact, then the longest wildcard suffix, then *", () => {
    const d = new Map([
      ["a.example.com", 1],
      ["*.example.com", 1],
      ["*.b.example.com", 1],
      ["*", 1],
    ]);
    expect(domainFor("a.example.com", d)).toBe("a.example.com");
    expect(domainFor("x.b.example.com", d)).toBe("*.b.example.com");
    expect(domainFor("c.example.com", d)).toBe("*.example.com");
    expect(domainFor("example.com", d)).toBe("*");
    expect(domainFor("example.com", new Map([["*.example.com", 1]]))).toBeUndefined();
  });
});
