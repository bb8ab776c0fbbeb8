// The contract between the HTTPS server and what it hosts: a handler is a plain
// function from a parsed JSON body to a status and a JSON answer. Body limits,
// parsing errors and metrics live in the server, not in each handler.

import type { IncomingHttpHeaders } from "node:http";
import type { Logger } from "../observability/logger.js";

export interface JsonReply {
  readonly status: number;
  readonly body: unknown;
  /** Extra response headers, for example Retry-After or Allow. */
  readonly headers?: Readonly<Record<string, string>>;
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
  /** Largest body accepted, in bytes after decompression; a larger one is answered 413. */
  readonly limit: number;
  /** Deepest nesting of arrays and objects in the body (default DEFAULT_MAX_DEPTH); deeper is 400. */
  readonly maxDepth?: number;
  /** Which memory budget the body is charged to (default "small"; see memory-budget.ts). */
  readonly budget?: "conversion" | "small";
  /**
   * Runs on the headers before a byte of the body is read: a reply here refuses
   * the request (for example an unauthenticated caller) without reading it.
   */
  authorize?(headers: IncomingHttpHeaders): Promise<JsonReply | undefined>;
  handle(body: unknown, ctx: RequestContext): JsonReply | Promise<JsonReply>;
}

export const MiB = 1024 * 1024;

/**
 * JSON nesting accepted by default. An EdgeRoute review nests about 20 deep at
 * most (review, request, objects, metadata.managedFields[].fieldsV1 mirroring
 * the schema); the structural schema prunes anything deeper before admission.
 */
export const DEFAULT_MAX_DEPTH = 64;

/** A JSON error body: what went wrong, in one sentence a user can act on. */
export function errorReply(status: number, reason: string, message: string): JsonReply {
  return {
    status,
    body: { kind: "Status", apiVersion: "v1", status: "Failure", code: status, reason, message },
  };
}
