import { describe, expect, it } from "vitest";
import { serviceOfEndpointSlice } from "./service-endpoints.js";

describe("serviceOfEndpointSlice", () => {
  it("reads the kubernetes.io/service-name label", () => {
    const slice = {
      metadata: { namespace: "a", name: "web-x1", labels: { "kubernetes.io/service-name": "web" } },
    };
    expect(serviceOfEndpointSlice(slice)).toBe("a/web");
    expect(serviceOfEndpointSlice({ metadata: { namespace: "a", name: "orphan" } })).toBeUndefined();
  });
});
