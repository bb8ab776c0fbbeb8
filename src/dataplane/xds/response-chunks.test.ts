// Responses written by hand around the resources' bytes must be the messages
// Envoy's descriptor says: protobufjs (what gRPC clients use) reads them back
// field for field, whatever the strings and resources.

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { clientCodec } from "./proto-codec.js";
import { deltaDiscoveryResponse, discoveryResponse, scratchJoiner } from "./response-chunks.js";

// The serializer gRPC is given, reused across runs of every size as it is across responses.
const joinChunks = scratchJoiner();

const text = fc.string({ unit: "grapheme", maxLength: 40 });
const any = fc.record({ type_url: text, value: fc.uint8Array({ maxLength: 300 }) });

describe("responses from chunks", () => {
  it("State of the World: decodes to the fields given", () => {
    fc.assert(
      fc.property(text, fc.array(any, { maxLength: 5 }), text, text, (version, resources, type, nonce) => {
        const r = discoveryResponse({ version_info: version, resources, type_url: type, nonce });
        const bytes = joinChunks(r);
        expect(bytes.byteLength).toBe(r.size);
        const back = clientCodec.decodeDiscoveryResponse(bytes);
        expect(back.version_info ?? "").toBe(version);
        expect(back.type_url ?? "").toBe(type);
        expect(back.nonce ?? "").toBe(nonce);
        expect(
          back.resources.map((a) => ({ type_url: a.type_url ?? "", value: Buffer.from(a.value ?? []) })),
        ).toEqual(resources.map((a) => ({ type_url: a.type_url, value: Buffer.from(a.value) })));
      }),
      { numRuns: 300 },
    );
  });

  it("Delta: decodes to the fields given, removals included", () => {
    const resource = fc.record({ name: text, version: text, resource: any });
    fc.assert(
      fc.property(
        text,
        fc.array(resource, { maxLength: 5 }),
        text,
        fc.array(text, { maxLength: 4 }),
        text,
        (version, resources, type, removed, nonce) => {
          const r = deltaDiscoveryResponse({
            system_version_info: version,
            resources,
            type_url: type,
            removed_resources: removed,
            nonce,
          });
          const back = clientCodec.decodeDeltaDiscoveryResponse(joinChunks(r));
          expect(back.system_version_info ?? "").toBe(version);
          expect(back.type_url ?? "").toBe(type);
          expect(back.nonce ?? "").toBe(nonce);
          expect(back.removed_resources).toEqual(removed);
          expect(
            back.resources.map((x) => ({
              name: x.name ?? "",
              version: x.version ?? "",
              type_url: x.resource?.type_url ?? "",
              value: Buffer.from(x.resource?.value ?? []),
            })),
          ).toEqual(
            resources.map((x) => ({
              name: x.name,
              version: x.version,
              type_url: x.resource.type_url,
              value: Buffer.from(x.resource.value),
            })),
          );
        },
      ),
      { numRuns: 300 },
    );
  });
});
