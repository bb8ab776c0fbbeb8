// A thin JSON client for the apiserver on Node's http(s), with the kubeconfig's
// credentials and one keep-alive agent, shared by the watcher, the reconcile,
// certificates, migration and the break-glass. It gives control of watch
// streams (timeouts, aborts), patch content types and error bodies that the
// generated clients do not, and costs a request no more than it must.

import http from "node:http";
import https from "node:https";
import type { IncomingMessage } from "node:http";
import type { ClusterAccess } from "./kubeconfig.js";

/** A non-2xx answer from the apiserver, with its metav1.Status reason. */
export class KubeError extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
    /** The metav1.Status as sent (a 410 on a list carries a continue token in its metadata). */
    readonly body?: unknown,
  ) {
    super(message);
    this.name = "KubeError";
  }
}

/** The HTTP status of an apiserver answer that failed, or undefined for any other error. */
export function kubeStatus(err: unknown): number | undefined {
  return err instanceof KubeError ? err.status : undefined;
}

export interface RequestOptions {
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  /** For PATCH: application/merge-patch+json or application/json-patch+json. */
  contentType?: string;
  signal?: AbortSignal;
  /** Whole-request timeout; a hung apiserver must not hang the caller. */
  timeoutMs?: number;
}

export interface KubeClient {
  json<T>(method: string, path: string, opts?: RequestOptions): Promise<T>;
  /** Opens a watch; the caller reads lines from the response and aborts through `signal`. */
  stream(path: string, opts: RequestOptions & { signal: AbortSignal }): Promise<IncomingMessage>;
}

type Options = https.RequestOptions;

export function kubeClient(access: ClusterAccess): KubeClient {
  const base = new URL(access.server);
  const secure = base.protocol === "https:";
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
      agent = secure
        ? new https.Agent({ keepAlive: true, ca, cert, key, servername, rejectUnauthorized })
        : new http.Agent({ keepAlive: true });
    }
    const headers: http.OutgoingHttpHeaders = { ...creds.headers, accept: "application/json" };
    if (opts.body !== undefined) headers["content-type"] = opts.contentType ?? "application/json";
    return { url, o: { method, headers, agent, signal: opts.signal } };
  };

  const send = (url: URL, o: Options, body: unknown, timeoutMs?: number): Promise<IncomingMessage> =>
    new Promise((resolve, reject) => {
      const req = (secure ? https : http).request(url, o, resolve);
      req.on("error", reject);
      if (timeoutMs !== undefined) {
        req.setTimeout(timeoutMs, () =>
          req.destroy(new Error(`no answer from the apiserver in ${timeoutMs} ms`)),
        );
      }
      req.end(body === undefined ? undefined : JSON.stringify(body));
    });

  const readAll = async (res: IncomingMessage): Promise<string> => {
    const chunks: Buffer[] = [];
    for await (const c of res) chunks.push(c as Buffer);
    return Buffer.concat(chunks).toString("utf8");
  };

  const failure = (status: number, text: string, what: string): KubeError => {
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
    return new KubeError(status, reason, `${what}: ${status} ${message}`, body);
  };

  return {
    async json<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
      const { url, o } = await prepare(method, path, opts);
      const res = await send(url, o, opts.body, opts.timeoutMs);
      const text = await readAll(res);
      const status = res.statusCode ?? 0;
      if (status < 200 || status >= 300) throw failure(status, text, `${method} ${path}`);
      return JSON.parse(text) as T;
    },
    async stream(path: string, opts: RequestOptions & { signal: AbortSignal }): Promise<IncomingMessage> {
      const { url, o } = await prepare("GET", path, opts);
      const res = await send(url, o, undefined, opts.timeoutMs);
      const status = res.statusCode ?? 0;
      if (status !== 200) throw failure(status, await readAll(res), `watch ${path}`);
      return res;
    },
  };
}
