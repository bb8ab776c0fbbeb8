// The call to POST /reconcile: `{ key }` with the watcher's bearer token,
// over TLS verified against the given CA. The reply is parsed strictly; any
// other status, a malformed reply or a network error is a failure the queue
// retries with backoff. A failure with no reply at all says so (`unreachable`):
// the watcher's liveness counts those, not a server's error answers. The CA and
// the token are asked for on every call, so a rotated CA or token file is used
// from the next call on.

import { existsSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import { fileToken } from "../kube/kubeconfig.js";
import { SERVICE_ACCOUNT_TOKEN } from "../kube/service-account.js";
import { parseReconcileReply, type ReconcileOutcome, type Seen } from "../reconcile/protocol.js";

export type { ReconcileOutcome };

/** What a call came to: the server's reply, or no reply at all. */
export type CallOutcome = ReconcileOutcome | { kind: "failed"; reason: string; unreachable: true };

export interface ReconcileClientOptions {
  url: string;
  /** Re-read now and then: projected service account tokens rotate. */
  token: () => string | undefined;
  /** PEM bundle to verify the server against, as of now; the system's roots when absent. */
  ca?: () => string;
  /** Whole-call timeout (default 120 s: a snapshot of many routes takes time). */
  timeoutMs?: number;
  /** Connections kept open to the endpoint. */
  maxSockets?: number;
}

export interface ReconcileClient {
  /** `seen`: the newest resourceVersions the caller's informers have seen; the server waits for its cache to see as much. */
  reconcile(key: string, signal?: AbortSignal, seen?: Seen): Promise<CallOutcome>;
  close(): void;
}

export function reconcileClient(opts: ReconcileClientOptions): ReconcileClient {
  const url = new URL(opts.url);
  const secure = url.protocol === "https:";
  if (!secure && url.protocol !== "http:")
    throw new Error(`--reconcile-url must be http(s), got ${url.protocol}`);
  const maxSockets = opts.maxSockets ?? 8;
  const timeoutMs = opts.timeoutMs ?? 120_000;
  const newAgent = (ca: string | undefined): http.Agent =>
    secure
      ? new https.Agent({ keepAlive: true, maxSockets, ...(ca ? { ca } : {}) })
      : new http.Agent({ keepAlive: true, maxSockets });
  let agentCa = opts.ca?.();
  let agent = newAgent(agentCa);
  // Agents made for an older CA: their calls in flight may finish (a call lasts
  // at most timeoutMs), then they go.
  const retired = new Set<http.Agent>();
  const currentAgent = (): http.Agent => {
    const ca = opts.ca?.();
    if (!secure || ca === agentCa) return agent;
    const old = agent;
    retired.add(old);
    setTimeout(() => {
      old.destroy();
      retired.delete(old);
    }, timeoutMs + 1000).unref();
    agentCa = ca;
    agent = newAgent(ca);
    return agent;
  };

  return {
    reconcile(key, signal, seen) {
      return new Promise((resolve) => {
        const body = JSON.stringify(seen && Object.keys(seen).length > 0 ? { key, seen } : { key });
        const token = opts.token();
        const headers: http.OutgoingHttpHeaders = {
          "content-type": "application/json",
          "content-length": Buffer.byteLength(body),
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        };
        const req = (secure ? https : http).request(
          url,
          { method: "POST", agent: currentAgent(), headers, signal },
          (res) => {
            const chunks: Buffer[] = [];
            res.on("data", (c: Buffer) => chunks.push(c));
            // The reply was cut off: as good as none.
            res.on("error", (err) => resolve({ kind: "failed", reason: err.message, unreachable: true }));
            res.on("end", () => {
              const text = Buffer.concat(chunks).toString("utf8");
              const retryAfter = Number(res.headers["retry-after"]);
              if (res.statusCode === 503 && Number.isFinite(retryAfter) && retryAfter >= 0) {
                // The server's cache is behind what we saw: not a failure, ask again shortly.
                resolve({
                  kind: "requeue",
                  afterMs: retryAfter * 1000,
                  did: [text.slice(0, 200)],
                  enqueue: [],
                  notFailure: true,
                });
              } else if (res.statusCode !== 200) {
                resolve({ kind: "failed", reason: `HTTP ${res.statusCode}: ${text.slice(0, 200)}` });
              } else {
                resolve(parseReconcileReply(text));
              }
            });
          },
        );
        req.setTimeout(timeoutMs, () => req.destroy(new Error(`no reply in ${timeoutMs} ms`)));
        req.on("error", (err) =>
          resolve(
            err.name === "AbortError"
              ? { kind: "failed", reason: err.message }
              : { kind: "failed", reason: err.message, unreachable: true },
          ),
        );
        req.end(body);
      });
    },
    close() {
      agent.destroy();
      for (const a of retired) a.destroy();
      retired.clear();
    },
  };
}

/**
 * Where the bearer token comes from: --token-file, else the in-cluster
 * service account token, else the kubeconfig user's token. The file is read
 * again once a second at most: a rotated or replaced token is sent from the
 * next call (a kubeconfig's token files keep client-go's minute; here a stale
 * token stalls every reconcile).
 */
export function tokenSource(
  file: string | undefined,
  kubeconfigToken: string | undefined,
): () => string | undefined {
  const path = file ?? (existsSync(SERVICE_ACCOUNT_TOKEN) ? SERVICE_ACCOUNT_TOKEN : undefined);
  if (!path) return () => kubeconfigToken;
  return fileToken(path, "the reconcile token", 1000);
}
