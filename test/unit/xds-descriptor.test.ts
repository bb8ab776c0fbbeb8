// The xDS sink's protobuf descriptor is generated (npm run gen) from the Envoy
// protos that @grpc/grpc-js-xds ships: a stale committed copy fails here.

import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { XDS_DESCRIPTOR_FILE, xdsDescriptor } from "../../scripts/xds-descriptor.js";

describe("the xDS descriptor", () => {
  it("is committed exactly as the generator makes it (run `npm run gen`)", () => {
    expect(
      readFileSync(XDS_DESCRIPTOR_FILE, "utf8") === xdsDescriptor(),
      `${XDS_DESCRIPTOR_FILE} is stale`,
    ).toBe(true);
  });
});
