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
import { ReloadingFile } from "./reloading-file.js";

/** The in-cluster service account token. */
export const SERVICE_ACCOUNT_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token";

export type ReconcileOutcome =
  | { kind: "done"; did: string[]; enqueue: string[] }
  | { kind: "requeue"; afterMs: number | undefined; did: string[]; enqueue: string[] }
  | { kind: "failed"; reason: string; unreachable?: true };

function isStringArray(v: unknown): v is string[] {
  return Array.isArray(v) && v.every((x) => typeof x === "string");
}

/** Reads a 200 reply of the reconcile contract; a failure names what is wrong. */
export function parseReply(text: string): ReconcileOutcome {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return { kind: "failed", reason: "reply is not JSON" };
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return { kind: "failed", reason: "reply is not a JSON object" };
  }
  const { result, requeueAfterMs, did = [], enqueue = [] } = body as Record<string, unknown>;
  if (!isStringArray(did)) return { kind: "failed", reason: "reply.did: must be an array of strings" };
  if (!isStringArray(enqueue))
    return { kind: "failed", reason: "reply.enqueue: must be an array of strings" };
  if (result === "done") return { kind: "done", did, enqueue };
  if (result === "requeue") {
    if (requeueAfterMs !== undefined && !(typeof requeueAfterMs === "number" && requeueAfterMs >= 0)) {
      return { kind: "failed", reason: "reply.requeueAfterMs: must be a number >= 0" };
    }
    return { kind: "requeue", afterMs: requeueAfterMs, did, enqueue };
  }
  return {
    kind: "failed",
    reason: `reply.result: must be "done" or "requeue", got ${JSON.stringify(result)}`,
  };
}

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
  reconcile(key: string, signal?: AbortSignal): Promise<ReconcileOutcome>;
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
    reconcile(key, signal) {
      return new Promise((resolve) => {
        const body = JSON.stringify({ key });
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
              if (res.statusCode !== 200) {
                resolve({ kind: "failed", reason: `HTTP ${res.statusCode}: ${text.slice(0, 200)}` });
              } else {
                resolve(parseReply(text));
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
 * service account token, else the kubeconfig user's token. A file is followed
 * as it rotates (read again at most once a second; a failed read or an empty
 * file keeps the last token).
 */
export function tokenSource(
  file: string | undefined,
  kubeconfigToken: string | undefined,
  onChange?: (event: { path: string; taken: boolean; reason?: string }) => void,
): () => string | undefined {
  const path = file ?? (existsSync(SERVICE_ACCOUNT_TOKEN) ? SERVICE_ACCOUNT_TOKEN : undefined);
  if (!path) return () => kubeconfigToken;
  const token = new ReloadingFile(path, {
    check: (text) => (text.trim() ? undefined : "the token file is empty"),
    ...(onChange ? { onChange } : {}),
  });
  return () => token.current().trim();
}
