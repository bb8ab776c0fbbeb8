// Reading a JSON request body without letting the body decide how much memory
// it takes. Every limit is checked on the bytes as they arrive, after any
// Content-Encoding is undone, so a 61 KB gzip of 60 MiB is stopped at the
// route's limit of inflated bytes, and a body nested too deep or shaped to
// outgrow the heap is refused before JSON.parse sees it. A body must also
// arrive in time: the apiserver writes a webhook's body at once, and waits for
// the answer 10 s by default (the chart: 5 s, at most 30 s), so a body still
// arriving after a few seconds is answered 408 and gives its budget back then,
// not when the connection's own timeout ends it.

import type { IncomingMessage } from "node:http";
import zlib from "node:zlib";
import { errorReply, MiB, type JsonReply } from "./json-handler.js";
import { JsonDepthError, JsonShapeScanner } from "./json-shape.js";
import type { MemoryBudget } from "./memory-budget.js";

export interface BodyLimits {
  /** Largest body, in bytes after decompression (and of the bytes on the wire too). */
  readonly limit: number;
  /** Deepest nesting of arrays and objects accepted. */
  readonly maxDepth: number;
  /** Where the body's estimated heap is taken from while it is handled. */
  readonly budget: MemoryBudget;
  /** For messages: the route's path. */
  readonly path: string;
  /** How long the body may take to arrive, from when its reading begins (default BODY_TIMEOUT_MS). */
  readonly timeoutMs?: number;
}

export type BodyResult =
  | {
      readonly ok: true;
      readonly body: unknown;
      /** Bytes of JSON text, after decompression. */
      readonly bytes: number;
      /** Gives the body's share of the budget back: once its answer is sent. */
      release(): void;
    }
  /** Refused: the rest of the body, if any, is still unread (see discardBody). */
  | { readonly ok: false; readonly reply: JsonReply };

const ENCODINGS = ["identity", "gzip", "x-gzip", "deflate"] as const;
type Encoding = (typeof ENCODINGS)[number];

/** Seconds a caller refused for a full budget should wait: long enough for a large conversion to finish. */
export const BUSY_RETRY_AFTER_SECONDS = 2;

/**
 * How long a body may take to arrive. The apiserver has it whole before it
 * calls and writes it at once: 64 MiB (the largest /convert body) in 5 s is
 * 13 MB/s, a fraction of what a cluster's network carries.
 */
export const BODY_TIMEOUT_MS = 5_000;

function mib(bytes: number): string {
  return `${(bytes / MiB).toFixed(bytes < 10 * MiB ? 1 : 0)} MiB`;
}

function tooLarge(limits: BodyLimits, what: string): JsonReply {
  return errorReply(
    413,
    "RequestEntityTooLarge",
    `request body ${what} is larger than the ${limits.limit}-byte limit of ${limits.path}`,
  );
}

function decoderFor(encoding: Encoding): zlib.Gunzip | zlib.Inflate | undefined {
  if (encoding === "gzip" || encoding === "x-gzip") return zlib.createGunzip();
  if (encoding === "deflate") return zlib.createInflate();
  return undefined;
}

/** What to refuse before reading a byte, from the headers alone. */
function refuseFromHeaders(req: IncomingMessage, limits: BodyLimits): JsonReply | Encoding {
  const header = (req.headers["content-encoding"] ?? "identity").trim().toLowerCase() || "identity";
  if (!(ENCODINGS as readonly string[]).includes(header)) {
    return errorReply(
      415,
      "UnsupportedMediaType",
      `Content-Encoding ${JSON.stringify(header)} is not supported; send identity, gzip or deflate`,
    );
  }
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > limits.limit) return tooLarge(limits, `(${declared} bytes)`);
  return header as Encoding;
}

function timedOut(limits: BodyLimits, timeoutMs: number, bytes: number): JsonReply {
  return {
    ...errorReply(
      408,
      "RequestTimeout",
      `the request body to ${limits.path} did not arrive within ${timeoutMs / 1000} s (${bytes} bytes arrived); send it at once`,
    ),
    // The rest of a body this slow is not worth reading: the connection ends with the answer.
    headers: { Connection: "close" },
  };
}

function budgetRefusal(limits: BodyLimits, why: "full" | "peer-share", peer: string): JsonReply {
  const { budget } = limits;
  const message =
    why === "full"
      ? `the server is busy with other large requests to ${limits.path}; retry in ${BUSY_RETRY_AFTER_SECONDS} s`
      : `requests from ${peer || "this caller"} already hold their share (${mib(budget.heldBy(peer))} of at most ${mib(budget.peerCapacity)}) of the memory this server sets aside for requests to ${limits.path}; retry in ${BUSY_RETRY_AFTER_SECONDS} s`;
  return {
    ...errorReply(503, "ServiceUnavailable", message),
    headers: { "Retry-After": String(BUSY_RETRY_AFTER_SECONDS) },
  };
}

export function readJsonBody(req: IncomingMessage, limits: BodyLimits): Promise<BodyResult> {
  const encoding = refuseFromHeaders(req, limits);
  if (typeof encoding !== "string") return Promise.resolve({ ok: false, reply: encoding });
  const decoder = decoderFor(encoding);
  const scanner = new JsonShapeScanner(limits.maxDepth);
  const chunks: Buffer[] = [];
  // Budgets are shared out by remote address (memory-budget.ts).
  const peer = req.socket.remoteAddress ?? "";
  const timeoutMs = limits.timeoutMs ?? BODY_TIMEOUT_MS;
  let wireBytes = 0;
  let bodyBytes = 0;
  let taken = 0;

  return new Promise<BodyResult>((resolve) => {
    let settled = false;
    // At the deadline, what has already arrived is read first (setImmediate
    // runs after the poll for I/O): an event loop that was busy for a while
    // must not turn a body that did arrive into a 408.
    const deadline = setTimeout(
      () =>
        setImmediate(() => {
          if (!settled) refuse(timedOut(limits, timeoutMs, wireBytes));
        }),
      timeoutMs,
    );
    const finish = (result: BodyResult): void => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      req.off("data", onWire);
      req.off("end", onWireEnd);
      req.off("error", onError);
      req.off("close", onClose);
      if (decoder) {
        decoder.off("data", onBody);
        decoder.off("end", onBodyEnd);
        decoder.off("error", onDecodeError);
      }
      if (!result.ok) {
        chunks.length = 0;
        limits.budget.give(taken, peer);
        taken = 0;
        decoder?.destroy();
      }
      resolve(result);
    };
    const refuse = (reply: JsonReply): void => finish({ ok: false, reply });

    const onBody = (chunk: Buffer): void => {
      if (settled) return;
      bodyBytes += chunk.length;
      if (bodyBytes > limits.limit) return refuse(tooLarge(limits, decoder ? "once decompressed" : ""));
      try {
        scanner.push(chunk);
      } catch (err) {
        if (err instanceof JsonDepthError) return refuse(errorReply(400, "BadRequest", err.message));
        throw err;
      }
      chunks.push(chunk);
      // A heap budget: the raw bytes are held off the heap, and the pod's memory limit has room for them.
      const need = scanner.heapEstimate();
      if (need > limits.budget.peerCapacity) {
        const { capacity, peerCapacity } = limits.budget;
        const share =
          peerCapacity < capacity
            ? ` (one caller may hold ${Math.round((100 * peerCapacity) / capacity)}% of ${mib(capacity)})`
            : "";
        return refuse(
          errorReply(
            413,
            "RequestEntityTooLarge",
            `request body to ${limits.path} would take about ${mib(need)} of memory to parse, more than the ${mib(peerCapacity)} this server sets aside for such requests${share}`,
          ),
        );
      }
      const took = limits.budget.tryTake(need - taken, peer);
      if (took !== "taken") return refuse(budgetRefusal(limits, took, peer));
      taken = need;
    };

    const onBodyEnd = (): void => {
      if (settled) return;
      let text: string;
      if (chunks.length === 1) text = (chunks[0] as Buffer).toString("utf8");
      else text = Buffer.concat(chunks, bodyBytes).toString("utf8");
      chunks.length = 0;
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch (err) {
        return refuse(
          errorReply(400, "BadRequest", `request body is not valid JSON: ${(err as Error).message}`),
        );
      }
      let held = taken;
      finish({
        ok: true,
        body,
        bytes: bodyBytes,
        release: () => {
          limits.budget.give(held, peer);
          held = 0;
        },
      });
    };

    const onWire = (chunk: Buffer): void => {
      if (settled) return;
      wireBytes += chunk.length;
      if (!decoder) return onBody(chunk);
      if (wireBytes > limits.limit) return refuse(tooLarge(limits, ""));
      // Backpressure: the decoder's output is checked as it comes, and the
      // socket waits while the decoder is busy.
      if (!decoder.write(chunk)) {
        req.pause();
        decoder.once("drain", () => {
          if (!settled) req.resume();
        });
      }
    };
    const onWireEnd = (): void => {
      if (decoder) decoder.end();
      else onBodyEnd();
    };
    const onDecodeError = (err: Error): void =>
      refuse(errorReply(400, "BadRequest", `request body is not valid ${encoding}: ${err.message}`));
    const onError = (err: Error): void =>
      refuse(errorReply(400, "BadRequest", `request body could not be read: ${err.message}`));
    const onClose = (): void => {
      if (!req.complete)
        refuse(errorReply(400, "BadRequest", "the request body ended before its declared length"));
    };

    if (decoder) {
      decoder.on("data", onBody);
      decoder.on("end", onBodyEnd);
      decoder.on("error", onDecodeError);
    }
    req.on("data", onWire);
    req.on("end", onWireEnd);
    req.on("error", onError);
    req.on("close", onClose);
  });
}

/**
 * Reads and drops what is left of a refused body, up to `capBytes`, so the
 * caller, still sending, reads its answer instead of a connection reset (a
 * reset can discard an answer already received). Past the cap the connection
 * is cut: a caller that keeps sending after a refusal gets no more of our time.
 * Says whether the connection can carry another request: false when the body
 * may not fit under the cap (a larger or unknown length), and the answer must
 * then say Connection: close, or the caller would send its next request on a
 * connection about to be cut.
 */
export function discardBody(req: IncomingMessage, capBytes: number): boolean {
  if (req.complete || req.destroyed) return true;
  const declared = Number(req.headers["content-length"]);
  const fits =
    req.headers["content-length"] !== undefined && Number.isFinite(declared) && declared <= capBytes;
  let dropped = 0;
  req.on("data", (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > capBytes) req.socket.destroy();
  });
  req.on("error", () => undefined);
  req.resume();
  return fits;
}
