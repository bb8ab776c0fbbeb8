// Responses assembled from the resources' own bytes. A resource is encoded
// once per snapshot (resources.ts); a response to a client is its fields in
// protobuf's wire format around those bytes, kept as a list of chunks that
// point at them, not a copy. So every client's response shares the snapshot's
// bytes (at 10,000 routes, ten Envoys share the one 2.76 MB route
// configuration), and the copies are made when gRPC writes the message (into
// the one scratch buffer, scratchJoiner, then its frame), paced by write-budget.ts.

import { fieldKey, fieldNumber, varint, type EncodedAny } from "./proto-codec.js";

/** A response on its way: its bytes are the chunks one after another. */
export interface ResponseChunks {
  readonly chunks: readonly Uint8Array[];
  readonly size: number;
}

/**
 * A serializer for gRPC that joins every response into one reused buffer.
 * gRPC copies what the serializer returns into the frame it writes before it
 * returns (grpc-js `serializeMessage`), so a fresh buffer per response would
 * be garbage at once, outside V8's heap, where it lingers until a collection.
 * The buffer grows to the largest response and stays.
 */
export function scratchJoiner(): (r: ResponseChunks) => Buffer {
  let scratch = Buffer.alloc(0);
  return (r) => {
    if (scratch.byteLength < r.size) scratch = Buffer.allocUnsafe(r.size);
    let at = 0;
    for (const c of r.chunks) {
      scratch.set(c, at);
      at += c.byteLength;
    }
    return scratch.subarray(0, r.size);
  };
}

/** Builds one message's bytes as chunks: length-delimited fields only, which is all these messages need. */
class ChunkWriter {
  readonly chunks: Uint8Array[] = [];
  size = 0;

  private push(bytes: Uint8Array): void {
    this.chunks.push(bytes);
    this.size += bytes.byteLength;
  }

  bytes(field: number, value: Uint8Array): this {
    this.push(fieldKey(field));
    this.push(varint(value.byteLength));
    this.push(value);
    return this;
  }

  string(field: number, value: string): this {
    // proto3: an empty string is the default and is not written.
    return value === "" ? this : this.bytes(field, Buffer.from(value, "utf8"));
  }

  /** A nested message, given as a writer of its own. */
  message(field: number, inner: ChunkWriter): this {
    this.push(fieldKey(field));
    this.push(varint(inner.size));
    for (const c of inner.chunks) this.push(c);
    return this;
  }

  done(): ResponseChunks {
    return { chunks: this.chunks, size: this.size };
  }
}

const D = "envoy.service.discovery.v3";
const ANY = {
  typeUrl: fieldNumber("google.protobuf.Any", "type_url"),
  value: fieldNumber("google.protobuf.Any", "value"),
};
const SOTW = {
  version: fieldNumber(`${D}.DiscoveryResponse`, "version_info"),
  resources: fieldNumber(`${D}.DiscoveryResponse`, "resources"),
  typeUrl: fieldNumber(`${D}.DiscoveryResponse`, "type_url"),
  nonce: fieldNumber(`${D}.DiscoveryResponse`, "nonce"),
};
const DELTA = {
  version: fieldNumber(`${D}.DeltaDiscoveryResponse`, "system_version_info"),
  resources: fieldNumber(`${D}.DeltaDiscoveryResponse`, "resources"),
  typeUrl: fieldNumber(`${D}.DeltaDiscoveryResponse`, "type_url"),
  removed: fieldNumber(`${D}.DeltaDiscoveryResponse`, "removed_resources"),
  nonce: fieldNumber(`${D}.DeltaDiscoveryResponse`, "nonce"),
};
const RESOURCE = {
  name: fieldNumber(`${D}.Resource`, "name"),
  version: fieldNumber(`${D}.Resource`, "version"),
  resource: fieldNumber(`${D}.Resource`, "resource"),
};

function any(a: EncodedAny): ChunkWriter {
  return new ChunkWriter().string(ANY.typeUrl, a.type_url).bytes(ANY.value, a.value);
}

export function discoveryResponse(r: {
  readonly version_info: string;
  readonly resources: readonly EncodedAny[];
  readonly type_url: string;
  readonly nonce: string;
}): ResponseChunks {
  const w = new ChunkWriter().string(SOTW.version, r.version_info);
  for (const a of r.resources) w.message(SOTW.resources, any(a));
  return w.string(SOTW.typeUrl, r.type_url).string(SOTW.nonce, r.nonce).done();
}

export function deltaDiscoveryResponse(r: {
  readonly system_version_info: string;
  readonly resources: readonly {
    readonly name: string;
    readonly version: string;
    readonly resource: EncodedAny;
  }[];
  readonly type_url: string;
  readonly removed_resources: readonly string[];
  readonly nonce: string;
}): ResponseChunks {
  const w = new ChunkWriter().string(DELTA.version, r.system_version_info);
  for (const res of r.resources)
    w.message(
      DELTA.resources,
      new ChunkWriter()
        .string(RESOURCE.name, res.name)
        .string(RESOURCE.version, res.version)
        .message(RESOURCE.resource, any(res.resource)),
    );
  w.string(DELTA.typeUrl, r.type_url);
  // Elements of a repeated field are written even when empty.
  for (const n of r.removed_resources) w.bytes(DELTA.removed, Buffer.from(n, "utf8"));
  return w.string(DELTA.nonce, r.nonce).done();
}
