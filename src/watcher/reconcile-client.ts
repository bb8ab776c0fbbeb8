// The call to POST /reconcile: `{ key }` with the watcher's bearer token,
// over TLS verified against the given CA. The reply is parsed strictly; any
// other status, a malformed reply or a network error is a failure the queue
// retries with backoff.

import { existsSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import { fileToken } from "../kube/kubeconfig.js";
import { SERVICE_ACCOUNT_TOKEN } from "../kube/service-account.js";
import { parseReconcileReply, type ReconcileOutcome } from "../reconcile/protocol.js";

export type { ReconcileOutcome };

export interface ReconcileClientOptions {
  url: string;
  /** Re-read now and then: projected service account tokens rotate. */
  token: () => string | undefined;
  /** PEM bundle to verify the server against; the system's roots when absent. */
  caPem?: string;
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
  const agent = secure
    ? new https.Agent({
        keepAlive: true,
        maxSockets: opts.maxSockets ?? 8,
        ...(opts.caPem ? { ca: opts.caPem } : {}),
      })
    : new http.Agent({ keepAlive: true, maxSockets: opts.maxSockets ?? 8 });
  const timeoutMs = opts.timeoutMs ?? 120_000;

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
          { method: "POST", agent, headers, signal },
          (res) => {
            const chunks: Buffer[] = [];
            res.on("data", (c: Buffer) => chunks.push(c));
            res.on("error", (err) => resolve({ kind: "failed", reason: err.message }));
            res.on("end", () => {
              const text = Buffer.concat(chunks).toString("utf8");
              if (res.statusCode !== 200) {
                resolve({ kind: "failed", reason: `HTTP ${res.statusCode}: ${text.slice(0, 200)}` });
              } else {
                resolve(parseReconcileReply(text));
              }
            });
          },
        );
        req.setTimeout(timeoutMs, () => req.destroy(new Error(`no reply in ${timeoutMs} ms`)));
        req.on("error", (err) => resolve({ kind: "failed", reason: err.message }));
        req.end(body);
      });
    },
    close() {
      agent.destroy();
    },
  };
}

/**
 * Where the bearer token comes from: --token-file, else the in-cluster
 * service account token, else the kubeconfig user's token. The file is read
 * again once a minute at most, as every token file is.
 */
export function tokenSource(
  file: string | undefined,
  kubeconfigToken: string | undefined,
): () => string | undefined {
  const path = file ?? (existsSync(SERVICE_ACCOUNT_TOKEN) ? SERVICE_ACCOUNT_TOKEN : undefined);
  if (!path) return () => kubeconfigToken;
  return fileToken(path, "the reconcile token");
}
