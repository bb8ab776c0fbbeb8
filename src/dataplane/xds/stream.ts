// What the ADS server needs from a stream, whichever protocol variant it speaks.

import type { ClientStatus } from "./ack-tracker.js";
import type { XdsSnapshot } from "./resources.js";
import type { ResponseChunks } from "./response-chunks.js";

export interface Writable {
  write(response: ResponseChunks): void;
}

/** The server, as a stream sees it. */
export interface StreamHost {
  current(): XdsSnapshot | undefined;
  /** An ACK, a NACK or a new subscription arrived: waiters look again. */
  changed(): void;
}

export interface StreamReport {
  /** The client's node id, else its address. */
  readonly id: string;
  readonly peer: string;
  readonly protocol: "sotw" | "delta";
  readonly responses: number;
  readonly bytes: number;
  readonly types: Record<
    string,
    {
      readonly names: "*" | readonly string[];
      readonly acked?: string;
      readonly nacked?: { readonly version: string; readonly message: string };
    }
  >;
}

export interface AdsStream {
  readonly id: string;
  readonly protocol: "sotw" | "delta";
  /** Sends each subscribed type whose content for this client changed, in PUSH_ORDER. */
  push(snapshot: XdsSnapshot): void;
  status(snapshot: XdsSnapshot): ClientStatus;
  report(): StreamReport;
}
