// serve --client-ca: the admission paths answer only a caller whose client
// certificate the CA signed; probes, /reconcile (bearer tokens) and /convert
// (the apiserver cannot present a certificate there) need none.

import https from "node:https";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCa, issueCertificate, type KeyPair } from "../certs/pki.js";
import { createApp } from "./app.js";
import { startHttpsServer, type RunningServer } from "./https.js";
import { MiB, type JsonHandler } from "./json-handler.js";
import { serverDeps } from "../../test/fixtures/server-deps.js";
import { silentLogger } from "../observability/logger.js";

const serverCa = createCa({ commonName: "serving-ca" });
const serving = issueCertificate(serverCa, { commonName: "localhost", ips: ["127.0.0.1"], usage: "server" });
const clientCa = createCa({ commonName: "apiserver-client-ca" });
const apiserver = issueCertificate(clientCa, { commonName: "kube-apiserver", usage: "client" });
const strangerCa = createCa({ commonName: "someone-else" });
const stranger = issueCertificate(strangerCa, { commonName: "kube-apiserver", usage: "client" });

const echo = (path: string): JsonHandler => ({
  path,
  limit: MiB,
  handle: () => ({ status: 200, body: { path } }),
});

let server: RunningServer;

beforeAll(async () => {
  const app = createApp({
    handlers: [echo("/validate"), echo("/mutate"), echo("/convert")],
    ...serverDeps(),
    ready: () => true,
    clientCertPaths: new Set(["/validate", "/mutate"]),
  });
  server = await startHttpsServer(app, {
    host: "127.0.0.1",
    port: 0,
    tls: serving,
    clientCa: clientCa.cert,
    log: silentLogger(),
  });
});
afterAll(async () => {
  await server.stop();
});

function call(
  path: string,
  client?: KeyPair,
): Promise<{ status: number; body: { reason?: string; message?: string } }> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: "127.0.0.1",
        port: server.address.port,
        path,
        method: path === "/healthz" ? "GET" : "POST",
        ca: serverCa.cert,
        agent: false,
        ...(client ? { cert: client.cert, key: client.key } : {}),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          resolve({ status: res.statusCode ?? 0, body: path === "/healthz" ? {} : JSON.parse(text) });
        });
      },
    );
    req.on("error", reject);
    req.end(path === "/healthz" ? undefined : "{}");
  });
}

describe("--client-ca", () => {
  it("lets the apiserver's certificate through to admission", async () => {
    for (const path of ["/validate", "/mutate"]) {
      const r = await call(path, apiserver);
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ path });
    }
  });

  it("refuses admission without a certificate, or with one another CA signed", async () => {
    for (const client of [undefined, stranger]) {
      const r = await call("/validate", client);
      expect(r.status).toBe(401);
      expect(r.body.reason).toBe("Unauthorized");
      expect(r.body.message).toContain(
        "needs a client certificate signed by the CA given to serve --client-ca",
      );
    }
  });

  it("asks nothing of probes and of /convert", async () => {
    expect((await call("/healthz")).status).toBe(200);
    expect((await call("/convert")).status).toBe(200);
  });

  it("keeps checking client certificates after the serving pair is reloaded", async () => {
    server.reload(
      issueCertificate(serverCa, { commonName: "localhost", ips: ["127.0.0.1"], usage: "server" }),
    );
    expect((await call("/validate", apiserver)).status).toBe(200);
    expect((await call("/validate", stranger)).status).toBe(401);
  });
});
