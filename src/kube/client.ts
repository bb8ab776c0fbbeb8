// A thin JSON client for the apiserver on Node's http(s), with the kubeconfig's
// credentials and one keep-alive agent, shared by the watcher, the reconcile,
// certificates, migration and the break-glass. It gives control of watch
// streams (timeouts, aborts), patch content types and error bodies that the
// generated clients do not, and costs a request no more than it must.
//
// Every call has a deadline for the whole of it (connect, answer, body, and
// any retries), and transient failures are retried by the one rule in
// retry.ts: 429 and 5xx (after Retry-After when given) and cut connections,
// for requests that are safe to send twice.

import http from "node:http";
import https from "node:https";
import type { IncomingMessage } from "node:http";
import {
  NO_ANSWER,
  NO_CALL_OBSERVER,
  callLabels,
  type CallLabels,
  type KubeCallObserver,
} from "./client-metrics.js";
import type { ClusterAccess } from "./kubeconfig.js";
import { KubeError } from "./kube-error.js";
import { tunnelAgent } from "./proxy-tunnel.js";
import {
  DEFAULT_BACKOFF,
  DeadlineExceeded,
  isIdempotent,
  mayRetry,
  retryAfterMs,
  retryDelayMs,
  type BackoffPolicy,
} from "./retry.js";
import { userAgent } from "./user-agent.js";

export { KubeError, kubeStatus } from "./kube-error.js";
export { DeadlineExceeded, isTransient } from "./retry.js";

/** The deadline of a call that names none. */
export const DEFAULT_TIMEOUT_MS = 30_000;
/** Attempts of one call at most, whatever its deadline leaves. */
export const MAX_ATTEMPTS = 8;

export interface RequestOptions {
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  /** For PATCH: application/merge-patch+json or application/json-patch+json. */
  contentType?: string;
  /** The Accept header (default application/json); a metadata-only read asks for PartialObjectMetadata. */
  accept?: string;
  signal?: AbortSignal;
  /**
   * The deadline for the whole call, retries included (default 30 s): a hung
   * apiserver must not hang the caller. For a watch, the whole stream's.
   */
  timeoutMs?: number;
  /**
   * Whether a failed attempt may be sent again. Default: reads, and writes
   * with a resourceVersion precondition (retry.ts isIdempotent). Say true for a
   * POST that changes nothing (a TokenReview), false to never retry.
   */
  retry?: boolean;
}

export interface KubeClient {
  json<T>(method: string, path: string, opts?: RequestOptions): Promise<T>;
  /** Opens a watch; the caller reads lines from the response and aborts through `signal`. */
  stream(path: string, opts: RequestOptions & { signal: AbortSignal }): Promise<IncomingMessage>;
}

export interface ClientOptions {
  /** Default: `edge-operator/VERSION (JOB)`. */
  userAgent?: string;
  backoff?: BackoffPolicy;
  /** Counts every attempt and retry (client-metrics.ts kubeClientMetrics); default: nothing. */
  metrics?: KubeCallObserver;
  /** Called before each retry, for logs and tests. */
  onRetry?(info: { method: string; path: string; attempt: number; delayMs: number; error: Error }): void;
}

type Options = https.RequestOptions;

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = (): void => {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const t = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}

/** An AbortController that fires at the deadline or when the caller's signal does, whichever is first. */
function callScope(
  what: string,
  timeoutMs: number,
  caller?: AbortSignal,
): { signal: AbortSignal; deadline: number; done(): void } {
  const ac = new AbortController();
  const deadline = Date.now() + timeoutMs;
  const timer = setTimeout(
    () => ac.abort(new DeadlineExceeded(`${what}: no complete answer from the apiserver in ${timeoutMs} ms`)),
    timeoutMs,
  );
  const onCaller = (): void => ac.abort(caller?.reason);
  if (caller?.aborted) ac.abort(caller.reason);
  else caller?.addEventListener("abort", onCaller, { once: true });
  return {
    signal: ac.signal,
    deadline,
    done() {
      clearTimeout(timer);
      caller?.removeEventListener("abort", onCaller);
    },
  };
}

export function kubeClient(access: ClusterAccess, clientOpts: ClientOptions = {}): KubeClient {
  const base = new URL(access.server);
  const secure = base.protocol === "https:";
  const backoff = clientOpts.backoff ?? DEFAULT_BACKOFF;
  const observer = clientOpts.metrics ?? NO_CALL_OBSERVER;
  let agent: http.Agent | undefined;

  const prepare = async (
    method: string,
    path: string,
    opts: RequestOptions,
  ): Promise<{ url: URL; o: Options }> => {
    const url = new URL(base.pathname.replace(/\/$/, "") + path, base);
    for (const [k, v] of Object.entries(opts.query ?? {}))
      if (v !== undefined) url.searchParams.set(k, String(v));
    // Credentials are read per request: exec plugins and token files rotate.
    const creds = await access.credentials();
    if (!agent) {
      const { ca, servername, rejectUnauthorized } = access.tls;
      // An exec plugin may hand out a client certificate; the first one is kept, as before.
      const cert = creds.cert ?? access.tls.cert;
      const key = creds.key ?? access.tls.key;
      const agentOpts: https.AgentOptions = secure
        ? { keepAlive: true, ca, cert, key, servername, rejectUnauthorized }
        : { keepAlive: true };
      if (access.proxyUrl) agent = tunnelAgent(secure, access.proxyUrl, agentOpts);
      else agent = secure ? new https.Agent(agentOpts) : new http.Agent(agentOpts);
    }
    const headers: http.OutgoingHttpHeaders = {
      ...creds.headers,
      accept: opts.accept ?? "application/json",
      "user-agent": clientOpts.userAgent ?? userAgent(),
    };
    if (opts.body !== undefined) headers["content-type"] = opts.contentType ?? "application/json";
    return { url, o: { method, headers, agent } };
  };

  const send = (url: URL, o: Options, body: unknown, signal: AbortSignal): Promise<IncomingMessage> =>
    new Promise((resolve, reject) => {
      const req = (secure ? https : http).request(url, { ...o, signal }, resolve);
      req.on("error", (err) =>
        reject(signal.aborted && signal.reason instanceof Error ? signal.reason : err),
      );
      req.end(body === undefined ? undefined : JSON.stringify(body));
    });

  const readAll = async (res: IncomingMessage, signal: AbortSignal): Promise<string> => {
    const chunks: Buffer[] = [];
    try {
      for await (const c of res) chunks.push(c as Buffer);
    } catch (err) {
      throw signal.aborted && signal.reason instanceof Error ? signal.reason : err;
    }
    return Buffer.concat(chunks).toString("utf8");
  };

  const failure = (status: number, text: string, what: string, res: IncomingMessage): KubeError => {
    let reason = "";
    let message = text.slice(0, 300);
    let body: unknown;
    try {
      const s = JSON.parse(text) as { reason?: unknown; message?: unknown };
      body = s;
      if (typeof s.reason === "string") reason = s.reason;
      if (typeof s.message === "string") message = s.message;
    } catch {
      // not a metav1.Status: keep the text
    }
    return new KubeError(
      status,
      reason,
      `${what}: ${status} ${message}`,
      body,
      retryAfterMs(res.headers["retry-after"]),
    );
  };

  /**
   * Runs `attempt` until it succeeds, fails for good, or the deadline comes.
   * A wait that would end past the deadline is not begun: the last failure is
   * what the caller gets.
   */
  const withRetries = async <T>(
    method: string,
    path: string,
    call: CallLabels,
    idempotent: boolean,
    scope: { signal: AbortSignal; deadline: number },
    caller: AbortSignal | undefined,
    attempt: (answered: (status: number) => void) => Promise<T>,
  ): Promise<T> => {
    let last: unknown;
    const pastDeadline = (err: unknown): unknown => {
      // The deadline: say so, with what the last attempt met.
      const reason = scope.signal.reason as unknown;
      if (!(reason instanceof DeadlineExceeded)) return err;
      const cause = err === reason ? last : err;
      return cause === undefined
        ? reason
        : new DeadlineExceeded(`${reason.message} (last: ${(cause as Error).message})`, cause);
    };
    for (let n = 1; ; n++) {
      const started = process.hrtime.bigint();
      const seconds = (): number => Number(process.hrtime.bigint() - started) / 1e9;
      let status = 0;
      try {
        const value = await attempt((s) => (status = s));
        observer.attempt(call, String(status), seconds());
        return value;
      } catch (err) {
        const code = err instanceof KubeError ? String(err.status) : NO_ANSWER;
        // A caller that gave up ended the attempt, not the apiserver: not counted.
        if (!caller?.aborted) observer.attempt(call, code, seconds());
        if (caller?.aborted) throw err;
        if (scope.signal.aborted) throw pastDeadline(err);
        last = err;
        if (n >= MAX_ATTEMPTS || !mayRetry(err, idempotent)) throw err;
        const delayMs = retryDelayMs(n, err instanceof KubeError ? err.retryAfterMs : undefined, backoff);
        if (Date.now() + delayMs >= scope.deadline) throw err;
        observer.retry(call, code, delayMs, code === "429");
        clientOpts.onRetry?.({ method, path, attempt: n, delayMs, error: err as Error });
        await sleep(delayMs, scope.signal);
        if (caller?.aborted) throw err;
        if (scope.signal.aborted) throw pastDeadline(err);
      }
    }
  };

  return {
    async json<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
      const what = `${method} ${path}`;
      const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
      const idempotent = opts.retry ?? isIdempotent(method, opts.body, opts.contentType);
      const scope = callScope(what, timeoutMs, opts.signal);
      try {
        const call = callLabels(method, path);
        return await withRetries(method, path, call, idempotent, scope, opts.signal, async (answered) => {
          const { url, o } = await prepare(method, path, opts);
          const res = await send(url, o, opts.body, scope.signal);
          const text = await readAll(res, scope.signal);
          const status = res.statusCode ?? 0;
          answered(status);
          if (status < 200 || status >= 300) throw failure(status, text, what, res);
          return JSON.parse(text) as T;
        });
      } finally {
        scope.done();
      }
    },

    async stream(path: string, opts: RequestOptions & { signal: AbortSignal }): Promise<IncomingMessage> {
      const what = `watch ${path}`;
      const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
      // The scope lives as long as the stream: its deadline ends a watch the
      // server failed to end, and the caller's signal ends it at any time.
      const scope = callScope(what, timeoutMs, opts.signal);
      try {
        const call = callLabels("GET", path, opts.query?.watch === true || opts.query?.watch === "true");
        const res = await withRetries(
          "GET",
          path,
          call,
          opts.retry ?? true,
          scope,
          opts.signal,
          async (answered) => {
            const { url, o } = await prepare("GET", path, opts);
            const r = await send(url, o, undefined, scope.signal);
            const status = r.statusCode ?? 0;
            answered(status);
            if (status !== 200) throw failure(status, await readAll(r, scope.signal), what, r);
            return r;
          },
        );
        res.once("close", () => scope.done());
        scope.signal.addEventListener(
          "abort",
          () => res.destroy(scope.signal.reason instanceof Error ? scope.signal.reason : undefined),
          { once: true },
        );
        return res;
      } catch (err) {
        scope.done();
        throw err;
      }
    },
  };
}
