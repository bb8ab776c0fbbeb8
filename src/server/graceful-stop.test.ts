// The order of a stop, on a real HTTPS listener: keep accepting through the
// delay (answers say Connection: close), then refuse new connections, let the
// request in flight finish, and only then close idle keep-alive connections.

import https from "node:https";
import type { TLSSocket } from "node:tls";
import { describe, expect, it } from "vitest";
import { createCa, issueCertificate } from "../certs/pki.js";
import { startHttpsServer } from "./https.js";
import { silentLogger } from "../observability/logger.js";

const ca = createCa();
const pair = issueCertificate(ca, { commonName: "localhost", ips: ["127.0.0.1"], usage: "server" });

function get(
  port: number,
  path: string,
  agent: https.Agent | false,
): Promise<{ status: number; connection?: string; socket: TLSSocket }> {
  return new Promise((resolve, reject) => {
    const req = https.get({ host: "127.0.0.1", port, path, agent, ca: ca.cert }, (res) => {
      const socket = res.socket as TLSSocket;
      res.resume();
      res.on("end", () =>
        resolve({ status: res.statusCode ?? 0, connection: res.headers.connection, socket }),
      );
    });
    req.on("error", reject);
  });
}

describe("graceful stop", () => {
  it("serves through the delay, closes the listener, finishes in-flight work, then closes idle connections", async () => {
    const events: string[] = [];
    const server = await startHttpsServer(
      (req, res) => {
        if (req.url === "/slow") {
          setTimeout(() => {
            events.push("slow answered");
            res.end("slow");
          }, 1200);
        } else res.end("ok");
      },
      {
        host: "127.0.0.1",
        port: 0,
        tls: pair,
        shutdownDelayMs: 400,
        closeIdleAfterMs: 0,
        drainMs: 10_000,
        log: silentLogger(),
      },
    );
    const port = server.address.port;
    const idleAgent = new https.Agent({ keepAlive: true, maxSockets: 1 });
    const idle = await get(port, "/", idleAgent);
    expect(idle.connection).toBe("keep-alive");
    idle.socket.on("close", () => events.push("idle connection closed"));

    const slow = get(port, "/slow", false);
    await new Promise((r) => setTimeout(r, 100));
    const stopped = server.stop().then(() => events.push("stopped"));

    // Step 2: still accepting, and telling clients not to reuse the connection.
    await new Promise((r) => setTimeout(r, 100));
    const during = await get(port, "/", false);
    expect(during.status).toBe(200);
    expect(during.connection).toBe("close");

    // Step 3: after the delay, new connections are refused while /slow still runs.
    await new Promise((r) => setTimeout(r, 500));
    await expect(get(port, "/", false)).rejects.toThrow(/ECONNREFUSED/);
    expect(events).toEqual([]);

    expect((await slow).status).toBe(200);
    await stopped;
    // Step 4: the idle keep-alive connection outlived the request in flight, and was closed after it.
    await expect.poll(() => events.includes("idle connection closed")).toBe(true);
    expect(events[0]).toBe("slow answered");
    idleAgent.destroy();
  });

  it("lets a kept-alive client use its connection after the listener closed, answering Connection: close, then closes it", async () => {
    const server = await startHttpsServer((_req, res) => res.end("ok"), {
      host: "127.0.0.1",
      port: 0,
      tls: pair,
      shutdownDelayMs: 0,
      closeIdleAfterMs: 5_000,
      drainMs: 10_000,
      log: silentLogger(),
    });
    const port = server.address.port;
    const pooled = new https.Agent({ keepAlive: true, maxSockets: 1 });
    const first = await get(port, "/", pooled);
    expect(first.connection).toBe("keep-alive");
    let stopped = false;
    const stopping = server.stop().then(() => (stopped = true));
    await new Promise((r) => setTimeout(r, 300));
    // New connections are refused, but the pooled one (as the apiserver holds them) still answers.
    await expect(get(port, "/", false)).rejects.toThrow(/ECONNREFUSED/);
    const late = await get(port, "/", pooled);
    expect(late.status).toBe(200);
    expect(late.socket).toBe(first.socket);
    expect(late.connection).toBe("close");
    // The client closed it after that answer: the stop ends well before its 5 s wait.
    const started = Date.now();
    await stopping;
    expect(stopped).toBe(true);
    expect(Date.now() - started).toBeLessThan(3_000);
    pooled.destroy();
  });
});
