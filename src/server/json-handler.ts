// The contract between the HTTPS server and what it hosts: a handler is a plain
// function from a parsed JSON body to a status and a JSON answer. Body limits,
// parsing errors and metrics live in the server, not in each handler.

import type { IncomingHttpHeaders } from "node:http";
import type { Logger } from "pino";

export interface JsonReply {
  readonly status: number;
  readonly body: unknown;
}

export interface RequestContext {
  readonly headers: IncomingHttpHeaders;
  readonly log: Logger;
  /** Aborted when the caller goes away before its answer was sent: work done for nobody should stop. */
  readonly signal?: AbortSignal;
}

export interface JsonHandler {
  /** For example `/convert`. */
  readonly path: string;
  /** POST by default; a GET handler gets `undefined` as its body. */
  readonly method?: "GET" | "POST";
  /** Largest body accepted, in bytes; a larger one is answered 413. */
  readonly limit: number;
  handle(body: unknown, ctx: RequestContext): JsonReply | Promise<JsonReply>;
}

export const MiB = 1024 * 1024;

/** A JSON error body: what went wrong, in one sentence a user can act on. */
export function errorReply(status: number, reason: string, message: string): JsonReply {
  return {
    status,
    body: { kind: "Status", apiVersion: "v1", status: "Failure", code: status, reason, message },
  };
}
