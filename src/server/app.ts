// The express app: health, readiness, metrics, and the JSON handlers it is given.

import type { TLSSocket } from "node:tls";
import { setMaxListeners } from "node:events";
import express, { type NextFunction, type Request, type Response } from "express";
import type { Logger } from "../observability/logger.js";
import type { ServerMetrics } from "../observability/metrics.js";
import { DEFAULT_MAX_DEPTH, errorReply, type JsonReply, type JsonHandler } from "./json-handler.js";
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
  /** Heap set aside for request bodies (default: shares of V8's heap limit). */
  budgets?: MemoryBudgets;
  /**
   * Paths that only a caller with a client certificate the listener verified
   * (serve --client-ca) may call: the apiserver's admission webhooks.
   */
  clientCertPaths?: ReadonlySet<string>;
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
function callerGone(res: Response): AbortSignal {
  const gone = new AbortController();
  // Every apiserver call of a reconcile listens on it, 32 at once while statuses are written.
  setMaxListeners(0, gone.signal);
  res.on("close", () => {
    if (!res.writableFinished) gone.abort();
  });
  return gone.signal;
}

function drained(res: Response): Promise<void> {
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

/** A reply known to be small (an AdmissionReview's answer): one JSON.stringify, with a Content-Length. */
function sendWhole(res: Response, reply: JsonReply): void {
  if (reply.headers) res.set(reply.headers);
  res.status(reply.status).type("application/json").send(JSON.stringify(reply.body));
}

/**
 * A reply that may be large (a ConversionReview of a whole LIST) is serialized a
 * chunk at a time as the socket drains: the whole text never exists as one
 * string plus one Buffer. One that turns out to fit in a chunk still goes out
 * whole, with a Content-Length.
 */
async function sendInPieces(res: Response, reply: JsonReply): Promise<void> {
  if (reply.headers) res.set(reply.headers);
  res.status(reply.status).type("application/json");
  const chunks = jsonChunks(reply.body, CHUNK_CHARS);
  const first = chunks.next();
  const second = first.done ? first : chunks.next();
  if (second.done) {
    res.send(first.done ? "null" : first.value);
    return;
  }
  res.write(first.value as string);
  for (let next: IteratorResult<string> = second; !next.done; next = chunks.next()) {
    if (!res.write(next.value)) await drained(res);
    // The caller went away: stop serializing for nobody.
    if (res.destroyed) return;
  }
  res.end();
}

/** Why the caller's TLS client certificate is not good enough, or nothing when it is. */
function clientCertRefusal(req: Request): JsonReply | undefined {
  const socket = req.socket as TLSSocket;
  if (socket.authorized) return undefined;
  const why = socket.authorizationError ? `: ${String(socket.authorizationError)}` : "";
  return errorReply(
    401,
    "Unauthorized",
    `${req.path} needs a client certificate signed by the CA given to serve --client-ca${why}`,
  );
}

/**
 * The app in named phases: probes and metrics, the GET and POST handlers it
 * hosts, 405 for a known path asked with the wrong method, then the fallbacks.
 */
export function createApp(opts: AppOptions): express.Express {
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  const budgets = opts.budgets ?? budgetsFromHeapLimit();
  /** Path → the methods it answers, for 405's Allow header. */
  const allowed = new Map<string, string>();
  mountProbes(app, opts);
  for (const p of ["/healthz", "/readyz", "/metrics"]) allowed.set(p, "GET, HEAD");
  for (const handler of opts.handlers.filter((r) => r.method === "GET")) {
    allowed.set(handler.path, "GET, HEAD");
    app.get(handler.path, getHandler(handler, opts));
  }
  for (const handler of opts.handlers.filter((r) => r.method !== "GET")) {
    allowed.set(handler.path, "POST");
    // The body is read by readJsonBody as raw bytes whatever the content type
    // says: a webhook caller that gets the header wrong still deserves a JSON answer.
    app.post(handler.path, postHandler(handler, opts, budgets));
  }
  mountMethodNotAllowed(app, allowed);
  mountFallbacks(app, opts.log);
  return app;
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

/** /healthz (the process is up), /readyz (the caller's readiness) and /metrics. */
function mountProbes(app: express.Express, opts: AppOptions): void {
  const { registry } = opts.metrics;
  app.get("/healthz", (_req, res) => {
    res.type("text/plain").send("ok");
  });
  app.get("/readyz", (_req, res) => {
    if (opts.ready()) res.type("text/plain").send("ok");
    else res.status(503).type("text/plain").send("not ready");
  });
  app.get("/metrics", async (_req, res) => {
    res.type(registry.contentType).send(await registry.metrics());
  });
}

type ExpressHandler = (req: Request, res: Response) => Promise<void>;

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
function postHandler(handler: JsonHandler, opts: AppOptions, budgets: MemoryBudgets): ExpressHandler {
  const { log: logger } = opts;
  const { requestDuration } = opts.metrics;
  return async (req, res) => {
    const end = requestDuration.startTimer({ route: handler.path });
    const refused = opts.clientCertPaths?.has(handler.path)
      ? clientCertRefusal(req)
      : await handler.authorize?.(req.headers);
    if (refused) {
      // Refused from the headers: the body is never parsed or kept, only read and dropped.
      if (!discardBody(req, DISCARD_FLOOR)) res.set("Connection", "close");
      sendWhole(res, refused);
      end({ code: refused.status });
      return;
    }
    const read = await readJsonBody(req, {
      limit: handler.limit,
      maxDepth: handler.maxDepth ?? DEFAULT_MAX_DEPTH,
      budget: budgets[handler.budget ?? "small"],
      path: handler.path,
    });
    if (!read.ok) {
      if (!discardBody(req, Math.max(DISCARD_FLOOR, 2 * handler.limit))) res.set("Connection", "close");
      sendWhole(res, read.reply);
      end({ code: read.reply.status });
      return;
    }
    let reply: JsonReply;
    try {
      reply = await handler.handle(read.body, { headers: req.headers, log: logger, signal: callerGone(res) });
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
