// The express app: health, readiness, metrics, and the JSON handlers it is given.

import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import type { TLSSocket } from "node:tls";
import { setMaxListeners } from "node:events";
import express, { type NextFunction, type Request, type Response } from "express";
import type { Logger } from "../observability/logger.js";
import type { ServerMetrics } from "../observability/metrics.js";
import {
  DEFAULT_MAX_DEPTH,
  errorReply,
  type JsonReply,
  type JsonHandler,
  type RequestContext,
} from "./json-handler.js";
import { jsonChunks } from "./json-chunks.js";
import { budgetsFromHeapLimit, type MemoryBudgets } from "./memory-budget.js";
import { discardBody, readJsonBody } from "./request-body.js";

/**
 * What a refused caller may still send, read and dropped, before the
 * connection is cut: enough that a caller refused for a bad body (deep,
 * undecodable, unauthenticated) reads its answer rather than a reset; a body
 * over its limit is drained up to twice the limit.
 */
const DISCARD_FLOOR = 1024 * 1024;

export interface AppOptions {
  handlers: readonly JsonHandler[];
  /** Readiness beyond "the process is up": TLS material loaded, and whatever else the caller needs. */
  ready: () => boolean;
  log: Logger;
  /** /metrics serves its registry. */
  metrics: ServerMetrics;
  /** Who may read /metrics (serve --metrics-auth: caller-auth.ts); anyone when absent. */
  metricsAuth?: (headers: IncomingMessage["headers"]) => Promise<JsonReply | undefined>;
  /** Heap set aside for request bodies (default: shares of V8's heap limit). */
  budgets?: MemoryBudgets;
  /**
   * Paths that only a caller with a client certificate the listener verified
   * (serve --client-ca) may call: the apiserver's admission webhooks.
   */
  clientCertPaths?: ReadonlySet<string>;
  /** How long a POST body may take to arrive (default BODY_TIMEOUT_MS, request-body.ts). */
  bodyTimeoutMs?: number;
}

/** The reason word of a Status for each 4xx the server gives itself. */
const REASONS: Record<number, string> = {
  400: "BadRequest",
  401: "Unauthorized",
  404: "NotFound",
  405: "MethodNotAllowed",
  413: "RequestEntityTooLarge",
  415: "UnsupportedMediaType",
};

/** Characters per write of a large reply. */
const CHUNK_CHARS = 64 * 1024;

/** Aborted when the connection closes before the answer was sent: the caller gave up or went away. */
function callerGone(res: ServerResponse): AbortSignal {
  const gone = new AbortController();
  // Every apiserver call of a reconcile listens on it, 32 at once while statuses are written.
  setMaxListeners(0, gone.signal);
  if (res.socket === null || res.socket.destroyed) {
    if (!res.writableFinished) gone.abort();
  } else {
    res.on("close", () => {
      if (!res.writableFinished) gone.abort();
    });
  }
  return gone.signal;
}

/**
 * The request context, its signal made only when a handler reads it: the
 * admission handlers never do, and an AbortController and a listener per
 * webhook call are a measurable share of its cost.
 */
function contextFor(req: IncomingMessage, res: ServerResponse, log: Logger): RequestContext {
  let signal: AbortSignal | undefined;
  const ctx: RequestContext = {
    headers: req.headers,
    log,
    get signal(): AbortSignal {
      signal ??= callerGone(res);
      return signal;
    },
  };
  if ((req.socket as TLSSocket).authorized === true) certVerified.add(ctx);
  return ctx;
}

/** The contexts of requests whose caller presented a client certificate the listener verified. */
const certVerified = new WeakSet<RequestContext>();

/**
 * Whether the caller of the request `ctx` belongs to presented a client
 * certificate that the listener verified against serve --client-ca.
 */
export function clientCertVerified(ctx: RequestContext): boolean {
  return certVerified.has(ctx);
}

function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off("drain", done);
      res.off("close", done);
      resolve();
    };
    res.on("drain", done);
    res.on("close", done);
  });
}

const JSON_TYPE = "application/json; charset=utf-8";

/** A text (JSON unless told) as one write: the status line, headers and body leave in one TLS record. */
function sendText(
  res: ServerResponse,
  status: number,
  headers: JsonReply["headers"],
  text: string,
  contentType = JSON_TYPE,
): void {
  res.writeHead(status, {
    ...headers,
    "content-type": contentType,
    "content-length": Buffer.byteLength(text),
  });
  res.end(text);
}

/** A reply known to be small (an AdmissionReview's answer): one JSON.stringify, with a Content-Length. */
function sendWhole(res: ServerResponse, reply: JsonReply): void {
  sendText(res, reply.status, reply.headers, JSON.stringify(reply.body));
}

/**
 * A reply that may be large (a ConversionReview of a whole LIST) is serialized a
 * chunk at a time as the socket drains: the whole text never exists as one
 * string plus one Buffer. One that turns out to fit in a chunk still goes out
 * whole, with a Content-Length.
 */
async function sendInPieces(res: ServerResponse, reply: JsonReply): Promise<void> {
  const chunks = jsonChunks(reply.body, CHUNK_CHARS);
  const first = chunks.next();
  const second = first.done ? first : chunks.next();
  if (second.done) {
    sendText(res, reply.status, reply.headers, first.done ? "null" : first.value);
    return;
  }
  res.writeHead(reply.status, { ...reply.headers, "content-type": JSON_TYPE });
  res.write(first.value as string);
  for (let next: IteratorResult<string> = second; !next.done; next = chunks.next()) {
    if (!res.write(next.value)) await drained(res);
    // The caller went away: stop serializing for nobody.
    if (res.destroyed) return;
  }
  res.end();
}

/** Why the caller's TLS client certificate is not good enough, or nothing when it is. */
function clientCertRefusal(req: IncomingMessage, path: string): JsonReply | undefined {
  const socket = req.socket as TLSSocket;
  if (socket.authorized) return undefined;
  const why = socket.authorizationError ? `: ${String(socket.authorizationError)}` : "";
  return errorReply(
    401,
    "Unauthorized",
    `${path} needs a client certificate signed by the CA given to serve --client-ca${why}`,
  );
}

/**
 * The app in named phases: probes and metrics, the GET and POST handlers it
 * hosts, 405 for a known path asked with the wrong method, then the fallbacks.
 *
 * A POST to a handler's exact path (every webhook call: the apiserver sends
 * the path it was given) skips express: its router, request and response
 * wrappers cost the server more CPU per admission request than the whole
 * answer of a bare node:https handler (bench/webhook-cpu.bench.ts). So do the
 * probes and /metrics, asked every few seconds, so that no request the server
 * answers all day carries express's prototypes into node's http code (whether
 * that costs the webhooks anything was not measurable: BENCHMARKS.md, Write
 * path). Anything else, and the same paths spelt otherwise, still goes
 * through express.
 */
export function createApp(opts: AppOptions): RequestListener {
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  const budgets = opts.budgets ?? budgetsFromHeapLimit();
  /** Path → the methods it answers, for 405's Allow header. */
  const allowed = new Map<string, string>();
  const probes = probeHandlers(opts);
  for (const [path, probe] of probes) {
    allowed.set(path, "GET, HEAD");
    app.get(path, probe);
  }
  for (const handler of opts.handlers.filter((r) => r.method === "GET")) {
    allowed.set(handler.path, "GET, HEAD");
    app.get(handler.path, getHandler(handler, opts));
  }
  const direct = new Map<string, DirectHandler>();
  for (const handler of opts.handlers.filter((r) => r.method !== "GET")) {
    allowed.set(handler.path, "POST");
    // The body is read by readJsonBody as raw bytes whatever the content type
    // says: a webhook caller that gets the header wrong still deserves a JSON answer.
    const post = postHandler(handler, opts, budgets);
    direct.set(handler.path, post);
    app.post(handler.path, post);
  }
  mountMethodNotAllowed(app, allowed);
  mountFallbacks(app, opts.log);
  const seen = new WeakSet<object>();
  return (req, res) => {
    if (!seen.has(req.socket)) {
      seen.add(req.socket);
      opts.metrics.connections.inc();
    }
    const { method } = req;
    const handle =
      method === "POST"
        ? direct.get(pathOf(req.url))
        : method === "GET" || method === "HEAD"
          ? probes.get(pathOf(req.url))
          : undefined;
    if (!handle) return void app(req, res);
    handle(req, res).catch((err: unknown) => {
      // What express's error handler would do for a handler that threw.
      opts.log.error({ err, path: req.url }, "request failed");
      if (!res.headersSent) sendWhole(res, errorReply(500, "InternalError", (err as Error).message));
      else res.destroy();
    });
  };
}

/** The path of a request target, without its query. */
function pathOf(url: string | undefined): string {
  if (url === undefined) return "";
  const q = url.indexOf("?");
  return q === -1 ? url : url.slice(0, q);
}

/** A known path asked with the wrong method: 405, and which methods it takes. */
function mountMethodNotAllowed(app: express.Express, allowed: ReadonlyMap<string, string>): void {
  for (const [path, methods] of allowed) {
    app.all(path, (req, res) => {
      res.set("Allow", methods);
      sendWhole(
        res,
        errorReply(405, "MethodNotAllowed", `${req.method} is not allowed on ${path}; use ${methods}`),
      );
    });
  }
}

const TEXT_TYPE = "text/plain; charset=utf-8";

/**
 * /healthz (the process is up), /readyz (the caller's readiness) and /metrics,
 * by path, on node's own request and response.
 */
function probeHandlers(opts: AppOptions): Map<string, DirectHandler> {
  const { registry } = opts.metrics;
  // One rendering shared by the callers that ask while it is made: its cost grows with the series.
  let rendering: Promise<string> | undefined;
  return new Map<string, DirectHandler>([
    ["/healthz", async (_req, res) => sendText(res, 200, undefined, "ok", TEXT_TYPE)],
    [
      "/readyz",
      async (_req, res) =>
        opts.ready()
          ? sendText(res, 200, undefined, "ok", TEXT_TYPE)
          : sendText(res, 503, undefined, "not ready", TEXT_TYPE),
    ],
    [
      "/metrics",
      async (req, res) => {
        const refused = await opts.metricsAuth?.(req.headers);
        if (refused) return sendWhole(res, refused);
        rendering ??= registry.metrics().finally(() => (rendering = undefined));
        sendText(res, 200, undefined, await rendering, registry.contentType);
      },
    ],
  ]);
}

type ExpressHandler = (req: Request, res: Response) => Promise<void>;
/** Runs on node's own request and response, or express's (which extend them). */
type DirectHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

function getHandler(handler: JsonHandler, opts: AppOptions): ExpressHandler {
  const { log: logger } = opts;
  const { requestDuration } = opts.metrics;
  return async (req, res) => {
    const end = requestDuration.startTimer({ route: handler.path });
    let reply: JsonReply | undefined = await handler.authorize?.(req.headers);
    if (!reply) {
      try {
        reply = await handler.handle(undefined, {
          headers: req.headers,
          log: logger,
          signal: callerGone(res),
        });
      } catch (err) {
        logger.error({ err, route: handler.path }, "handler failed");
        reply = errorReply(500, "InternalError", `internal error: ${(err as Error).message}`);
      }
    }
    await sendInPieces(res, reply);
    end({ code: reply.status });
  };
}

/**
 * A POST: who may call it (a client certificate, or the handler's own check on
 * the headers) before a byte of the body is read; the body read within its
 * limits (request-body.ts); the reply written whole or in pieces by its size.
 */
function postHandler(handler: JsonHandler, opts: AppOptions, budgets: MemoryBudgets): DirectHandler {
  const { log: logger } = opts;
  const { requestDuration } = opts.metrics;
  return async (req, res) => {
    const end = requestDuration.startTimer({ route: handler.path });
    const refused = opts.clientCertPaths?.has(handler.path)
      ? clientCertRefusal(req, handler.path)
      : await handler.authorize?.(req.headers);
    if (refused) {
      // Refused from the headers: the body is never parsed or kept, only read and dropped.
      if (!discardBody(req, DISCARD_FLOOR)) res.setHeader("Connection", "close");
      sendWhole(res, refused);
      end({ code: refused.status });
      return;
    }
    const read = await readJsonBody(req, {
      limit: handler.limit,
      maxDepth: handler.maxDepth ?? DEFAULT_MAX_DEPTH,
      budget: budgets[handler.budget ?? "small"],
      path: handler.path,
      ...(opts.bodyTimeoutMs !== undefined ? { timeoutMs: opts.bodyTimeoutMs } : {}),
    });
    if (!read.ok) {
      if (!discardBody(req, Math.max(DISCARD_FLOOR, 2 * handler.limit))) res.setHeader("Connection", "close");
      sendWhole(res, read.reply);
      end({ code: read.reply.status });
      return;
    }
    let reply: JsonReply;
    try {
      reply = await handler.handle(read.body, contextFor(req, res, logger));
    } catch (err) {
      // A handler bug must not take the server down or leave the caller hanging.
      logger.error({ err, route: handler.path }, "handler failed");
      reply = errorReply(500, "InternalError", `internal error: ${(err as Error).message}`);
    }
    try {
      // A reply is about as large as its request at most (a ConversionReview
      // gives back what it got); only then is it worth writing in pieces, and
      // admission's small answers skip the piecewise serializer on the hot path.
      if (read.bytes > CHUNK_CHARS) await sendInPieces(res, reply);
      else sendWhole(res, reply);
    } finally {
      read.release();
    }
    end({ code: reply.status });
  };
}

/** 404 for any other path, and a JSON answer for what express itself throws (a malformed URL, say). */
function mountFallbacks(app: express.Express, logger: Logger): void {
  app.use((_req, res) => {
    sendWhole(
      res,
      errorReply(
        404,
        "NotFound",
        "no such path; this server answers /convert, /validate, /mutate, /reconcile",
      ),
    );
  });

  app.use((err: Error & { status?: number }, req: Request, res: Response, _next: NextFunction) => {
    const status = err.status !== undefined && err.status >= 400 && err.status < 500 ? err.status : 500;
    if (status === 500) logger.error({ err, path: req.path }, "request failed");
    sendWhole(res, errorReply(status, REASONS[status] ?? "InternalError", err.message));
  });
}
