// A JSON request to the operator's own HTTPS server, trusting its CA: how the
// tests and the demo read /debug/dataplane and /metrics and call /reconcile.

import https from "node:https";

export function httpsJson(
  url: string,
  caPem: string,
  method: string,
  body?: unknown,
  token?: string,
  /** The name the certificate must carry, when the URL's host is an address it does not name (a pod IP). */
  servername?: string,
): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      url,
      {
        method,
        ca: caPem,
        ...(servername ? { servername } : {}),
        timeout: 30_000,
        headers: {
          "content-type": "application/json",
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          let parsed: unknown = text;
          try {
            parsed = JSON.parse(text);
          } catch {
            // not JSON (metrics, or an error page): keep the text
          }
          resolve({ status: res.statusCode ?? 0, body: parsed });
        });
      },
    );
    req.on("timeout", () => req.destroy(new Error(`${method} ${url}: no answer in 30 s`)));
    req.on("error", reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}
