// The kubeconfig's `proxy-url`: every connection to the apiserver goes
// through an HTTP proxy as a CONNECT tunnel, and TLS runs end to end inside it
// (the proxy sees only the host and port), as client-go does for http://
// proxies. The agent still keeps connections alive: one tunnel a socket.

import http from "node:http";
import https from "node:https";
import net from "node:net";
import tls from "node:tls";
import type { Duplex } from "node:stream";

type Callback = (err: Error | null, socket?: Duplex) => void;

/** The proxy's URL checked: only http:// (CONNECT) proxies; a one-line reason otherwise. */
export function parseProxyUrl(raw: string, where: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error(`${where}: proxy-url ${raw} is not a URL`);
  }
  if (url.protocol !== "http:") {
    throw new Error(`${where}: proxy-url ${raw}: only http:// proxies (HTTP CONNECT) are supported`);
  }
  return url;
}

/** Opens a CONNECT tunnel to host:port through the proxy; resolves with the raw socket once it answers 200. */
export function connectTunnel(
  proxy: URL,
  host: string,
  port: number,
  timeoutMs = 30_000,
): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({
      host: proxy.hostname.replace(/^\[|\]$/g, ""),
      port: Number(proxy.port || 80),
    });
    const target = `${net.isIPv6(host) ? `[${host}]` : host}:${port}`;
    const fail = (err: Error): void => {
      socket.destroy();
      reject(err);
    };
    socket.setTimeout(timeoutMs, () =>
      fail(new Error(`proxy ${proxy.host}: no answer to CONNECT in ${timeoutMs} ms`)),
    );
    socket.once("error", fail);
    socket.once("connect", () => {
      const auth =
        proxy.username || proxy.password
          ? `Proxy-Authorization: Basic ${Buffer.from(
              `${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`,
            ).toString("base64")}\r\n`
          : "";
      socket.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n${auth}\r\n`);
    });
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer): void => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf("\r\n\r\n");
      if (end < 0) {
        if (head.length > 16 * 1024) fail(new Error(`proxy ${proxy.host}: CONNECT answer too long`));
        return;
      }
      socket.removeListener("data", onData);
      socket.removeListener("error", fail);
      socket.setTimeout(0);
      const status = /^HTTP\/1\.[01] (\d{3})/.exec(head.subarray(0, end).toString("latin1"));
      if (status?.[1] !== "200") {
        const line = head.subarray(0, head.indexOf("\r\n")).toString("latin1");
        return fail(new Error(`proxy ${proxy.host} refused CONNECT ${target}: ${line}`));
      }
      // Bytes after the header already belong to the tunnel.
      const rest = head.subarray(end + 4);
      if (rest.length > 0) socket.unshift(rest);
      resolve(socket);
    };
    socket.on("data", onData);
  });
}

/** An agent whose every connection is a CONNECT tunnel through `proxy`. */
export function tunnelAgent(secure: boolean, proxy: URL, options: https.AgentOptions): http.Agent {
  const open = (o: http.ClientRequestArgs & tls.ConnectionOptions, cb: Callback): undefined => {
    const host = o.host ?? o.hostname ?? "localhost";
    const port = Number(o.port ?? (secure ? 443 : 80));
    connectTunnel(proxy, host, port).then(
      (raw) => {
        if (!secure) return cb(null, raw);
        const servername = o.servername ?? (net.isIP(host) ? undefined : host);
        const sock = tls.connect({ ...o, socket: raw, ...(servername ? { servername } : {}) });
        const onErr = (err: Error): void => cb(err);
        sock.once("error", onErr);
        sock.once("secureConnect", () => {
          sock.removeListener("error", onErr);
          cb(null, sock);
        });
      },
      (err: Error) => cb(err),
    );
    return undefined;
  };
  const agent = secure ? new https.Agent(options) : new http.Agent(options);
  // Node's Agent takes the socket from the callback when createConnection returns nothing.
  agent.createConnection = open as unknown as http.Agent["createConnection"];
  return agent;
}
