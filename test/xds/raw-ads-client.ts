// A bare ADS client for protocol tests and the bench: one stream, State of the
// World or Delta, requests written by hand and responses queued as they come,
// with the bytes each one took on the wire.

import * as grpc from "@grpc/grpc-js";
import {
  ADS_SERVICE,
  clientCodec,
  type DeltaDiscoveryRequest,
  type DeltaDiscoveryResponse,
  type DiscoveryRequest,
  type DiscoveryResponse,
} from "../../src/dataplane/xds/proto-codec.js";

const identity = (b: Buffer): Buffer => b;

export interface Received<T> {
  readonly message: T;
  readonly bytes: number;
  readonly at: bigint;
}

class RawStream<Req, Res> {
  private readonly queue: Received<Res>[] = [];
  private waiters: (() => void)[] = [];
  readonly call: grpc.ClientDuplexStream<Buffer, Buffer>;

  constructor(
    client: grpc.Client,
    method: string,
    private readonly encode: (r: Req) => Buffer,
    decode: (b: Buffer) => Res,
  ) {
    this.call = client.makeBidiStreamRequest(`/${ADS_SERVICE}/${method}`, identity, identity);
    this.call.on("data", (b: Buffer) => {
      this.queue.push({ message: decode(b), bytes: b.byteLength, at: process.hrtime.bigint() });
      for (const w of this.waiters.splice(0)) w();
    });
    this.call.on("error", () => {
      for (const w of this.waiters.splice(0)) w();
    });
  }

  send(req: Req): void {
    this.call.write(this.encode(req));
  }

  /** The next response, or an error after `timeoutMs`. */
  async next(timeoutMs = 5_000): Promise<Received<Res>> {
    const deadline = Date.now() + timeoutMs;
    while (this.queue.length === 0) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no ADS response within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
    return this.queue.shift() as Received<Res>;
  }

  /** Whether a response arrives within `ms` (for "nothing is sent" checks). */
  async quiet(ms: number): Promise<boolean> {
    try {
      await this.next(ms);
      return false;
    } catch {
      return true;
    }
  }

  end(): void {
    this.call.end();
    this.call.cancel();
  }
}

export function adsClient(port: number): grpc.Client {
  return new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), {
    "grpc.max_receive_message_length": 256 * 1024 * 1024,
  });
}

export function sotwStream(client: grpc.Client): RawStream<Partial<DiscoveryRequest>, DiscoveryResponse> {
  return new RawStream(
    client,
    "StreamAggregatedResources",
    clientCodec.encodeDiscoveryRequest,
    clientCodec.decodeDiscoveryResponse,
  );
}

export function deltaStream(
  client: grpc.Client,
): RawStream<Partial<DeltaDiscoveryRequest>, DeltaDiscoveryResponse> {
  return new RawStream(
    client,
    "DeltaAggregatedResources",
    clientCodec.encodeDeltaDiscoveryRequest,
    clientCodec.decodeDeltaDiscoveryResponse,
  );
}
