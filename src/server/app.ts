// The express app: health, readiness, metrics, and the JSON handlers it is given.

import { setMaxListeners } from "node:events";
import express, { type NextFunction, type Request, type Response } from "express";
import type { Logger } from "../observability/logger.js";
import type { ServerMetrics } from "../observability/metrics.js";
import { errorReply, type JsonReply, type JsonHandler } from "./json-handler.js";
import { jsonChunks } from "./json-chunks.js";

export interface AppOptions {
  handlers: readonly JsonHandler[];
  /** Readiness beyond "the process is up": TLS material loaded, and whatever else the caller needs. */
  ready: () => boolean;
  log: Logger;
  /** /metrics serves its registry. */
  metrics: ServerMetrics;
}

interface BodyParserError extends Error {
  type?: string;
  status?: number;
  limit?: number;
}

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
  res.status(reply.status).type("application/json").send(JSON.stringify(reply.body));
}

/**
 * A reply that may be large (a ConversionReview of a whole LIST) is serialized a
 * chunk at a time as the socket drains: the whole text never exists as one
 * string plus one Buffer. One that turns out to fit in a chunk still goes out
 * whole, with a Content-Length.
 */
async function sendInPieces(res: Response, reply: JsonReply): Promise<void> {
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

/** The app in named phases: probes and metrics, the GET and POST handlers it hosts, then the fallbacks. */
export function createApp(opts: AppOptions): express.Express {
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  mountProbes(app, opts);
  for (const handler of opts.handlers.filter((r) => r.method === "GET"))
    app.get(handler.path, getHandler(handler, opts));
  for (const handler of opts.handlers.filter((r) => r.method !== "GET")) {
    app.post(
      handler.path,
      // Raw bytes, whatever the content type says: a webhook caller that gets the
      // header wrong still deserves a JSON answer, not a silent empty body.
      express.raw({ type: () => true, limit: handler.limit }),
      postHandler(handler, opts),
    );
  }
  mountFallbacks(app, opts.log);
  return app;
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
    let reply: JsonReply;
    try {
      reply = await handler.handle(undefined, { headers: req.headers, log: logger, signal: callerGone(res) });
    } catch (err) {
      logger.error({ err, route: handler.path }, "handler failed");
      reply = errorReply(500, "InternalError", `internal error: ${(err as Error).message}`);
    }
    await sendInPieces(res, reply);
    end({ code: reply.status });
  };
}

/** A POST: the raw body parsed as JSON here, once, and the reply written whole or in pieces by its size. */
function postHandler(handler: JsonHandler, opts: AppOptions): ExpressHandler {
  const { log: logger } = opts;
  const { requestDuration } = opts.metrics;
  return async (req, res) => {
    const end = requestDuration.startTimer({ route: handler.path });
    let reply: JsonReply;
    const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    // A reply is about as large as its request at most (a ConversionReview
    // gives back what it got); only then is it worth writing in pieces, and
    // admission's small answers skip the piecewise serializer on the hot path.
    const large = raw.length > CHUNK_CHARS;
    try {
      let body: unknown;
      try {
        body = JSON.parse(raw.toString("utf8"));
        // The parsed body is all the handler needs; the bytes (up to the
        // handler's limit) need not stay alive while it works.
        req.body = undefined;
      } catch (err) {
        reply = errorReply(400, "BadRequest", `request body is not valid JSON: ${(err as Error).message}`);
        sendWhole(res, reply);
        end({ code: reply.status });
        return;
      }
      reply = await handler.handle(body, { headers: req.headers, log: logger, signal: callerGone(res) });
    } catch (err) {
      // A handler bug must not take the server down or leave the caller hanging.
      logger.error({ err, route: handler.path }, "handler failed");
      reply = errorReply(500, "InternalError", `internal error: ${(err as Error).message}`);
    }
    if (large) await sendInPieces(res, reply);
    else sendWhole(res, reply);
    end({ code: reply.status });
  };
}

/** 404 for any other path, and JSON answers for what body parsing refused (too large, aborted, undecodable). */
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

  app.use((err: BodyParserError, req: Request, res: Response, _next: NextFunction) => {
    if (err.type === "entity.too.large") {
      sendWhole(
        res,
        errorReply(
          413,
          "RequestEntityTooLarge",
          `request body is larger than the ${err.limit ?? "configured"}-byte limit of ${req.path}`,
        ),
      );
      return;
    }
    const status = err.status !== undefined && err.status >= 400 && err.status < 500 ? err.status : 500;
    if (status === 500) logger.error({ err, path: req.path }, "request failed");
    sendWhole(res, errorReply(status, status === 500 ? "InternalError" : "BadRequest", err.message));
  });
}
