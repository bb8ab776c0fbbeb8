// "Admission busy" (admission-pressure.ts) is switched on by what the
// apiserver sends, not by whoever reaches the port: 60 `{}` POSTs (or
// garbage, or reviews of something else) leave it off, and so do 60
// conversions, which the apiserver makes for its own watch caches; 60 real
// admission reviews turn it on, and with --client-ca only callers whose
// certificate verified count.
// Through the real listener and app, with serve's own wiring (countedIn); the
// window's clock stands still, so "within a second" holds on a loaded machine.

import https from "node:https";
import { afterEach, describe, expect, it } from "vitest";
import { createCa, issueCertificate, type KeyPair } from "../certs/pki.js";
import { CLIENT_CERT_PATHS } from "../cli/serve.js";
import { countedIn } from "./admission-pressure.js";
import { serverDeps } from "../../test/fixtures/server-deps.js";
import { admissionHandlers } from "./admission-handlers.js";
import { AdmissionPressure } from "./admission-pressure.js";
import { createApp } from "./app.js";
import { conversionHandler } from "./conversion-review.js";
import { startHttpsServer, type RunningServer } from "./https.js";
import { MiB } from "./json-handler.js";

const ca = createCa();
const apiserverCa = createCa({ commonName: "apiserver-clients" });
const apiserverCert = issueCertificate(apiserverCa, { commonName: "kube-apiserver", usage: "client" });
let server: RunningServer | undefined;
let agent: https.Agent | undefined;

afterEach(async () => {
  agent?.destroy();
  await server?.stop();
  server = undefined;
});

/** serve's handlers and busy signal on a listener; `clientCa`: as serve --client-ca. */
async function serve(clientCa?: string): Promise<AdmissionPressure> {
  const deps = serverDeps();
  // A clock that stands still: every call counts in the one window.
  const pressure = new AdmissionPressure(50, () => 1_000_000);
  const handlers = [conversionHandler(64 * MiB, deps.metrics), ...admissionHandlers(undefined, deps)].map(
    (h) => countedIn(pressure, h, { clientCertRequired: clientCa !== undefined }),
  );
  const app = createApp({
    handlers,
    ready: () => true,
    ...deps,
    ...(clientCa ? { clientCertPaths: CLIENT_CERT_PATHS } : {}),
  });
  server = await startHttpsServer(app, {
    host: "127.0.0.1",
    port: 0,
    tls: issueCertificate(ca, { commonName: "localhost", ips: ["127.0.0.1"], usage: "server" }),
    log: deps.log,
    closeIdleAfterMs: 0,
    ...(clientCa ? { clientCa } : {}),
  });
  return pressure;
}

/** `n` POSTs of `body` to `path`, eight at a time on kept-alive connections; answers their statuses. */
async function post(path: string, body: (i: number) => string, n: number, cert?: KeyPair): Promise<number[]> {
  agent ??= new https.Agent({
    keepAlive: true,
    maxSockets: 8,
    ca: ca.cert,
    ...(cert ? { cert: cert.cert, key: cert.key } : {}),
  });
  const one = (i: number) =>
    new Promise<number>((resolve, reject) => {
      const req = https.request(
        {
          host: "127.0.0.1",
          port: server?.address.port,
          path,
          method: "POST",
          agent,
          headers: { "content-type": "application/json" },
          timeout: 10_000,
        },
        (res) => {
          res.resume();
          res.on("end", () => resolve(res.statusCode ?? 0));
        },
      );
      req.on("timeout", () => req.destroy(new Error("no answer in 10 s")));
      req.on("error", reject);
      req.end(body(i));
    });
  return Promise.all(Array.from({ length: n }, (_, i) => one(i)));
}

const route = {
  apiVersion: "net.10xdev.io/v1",
  kind: "EdgeRoute",
  metadata: { name: "shop", namespace: "default" },
  spec: { host: "shop.example.com", pathPrefix: "/api", service: "checkout", port: 8080 },
};

const admissionReview = (uid: string, resource = "edgeroutes") =>
  JSON.stringify({
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    request: {
      uid,
      kind: { group: "net.10xdev.io", version: "v1", kind: "EdgeRoute" },
      resource: { group: "net.10xdev.io", version: "v1", resource },
      namespace: "default",
      operation: "CREATE",
      object: route,
    },
  });

const conversionReview = (uid: string) =>
  JSON.stringify({
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "ConversionReview",
    request: { uid, desiredAPIVersion: "net.10xdev.io/v2", objects: [route] },
  });

describe("the admission-busy signal", () => {
  it("stays off for 60 `{}` POSTs within a second, and for garbage and reviews of something else", async () => {
    const pressure = await serve();
    expect(await post("/validate", () => "{}", 60)).toEqual(new Array<number>(60).fill(400));
    expect(pressure.busy()).toBe(false);
    await post("/mutate", () => "{}", 20);
    await post("/convert", () => "{}", 20);
    await post("/validate", () => "not json", 20);
    await post("/validate", () => '{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1"}', 20);
    // A well-formed review, but not of EdgeRoutes: the webhook would never be sent it.
    await post("/validate", (i) => admissionReview(`pods-${i}`, "pods"), 20);
    await post(
      "/convert",
      (i) => conversionReview(`bad-${i}`).replace('"net.10xdev.io/v2"', '"net.10xdev.io/v9"'),
      20,
    );
    expect(pressure.perSecond()).toBe(0);
    expect(pressure.busy()).toBe(false);
  });

  it("stays off for 60 conversions within a second: the apiserver makes them for its watch caches", async () => {
    const pressure = await serve();
    expect(await post("/convert", (i) => conversionReview(`c-${i}`), 60)).toEqual(
      new Array<number>(60).fill(200),
    );
    expect(pressure.perSecond()).toBe(0);
    expect(pressure.busy()).toBe(false);
  });

  it("turns on for 60 real admission reviews", async () => {
    const pressure = await serve();
    const statuses = [
      ...(await post("/validate", (i) => admissionReview(`v-${i}`), 30)),
      ...(await post("/mutate", (i) => admissionReview(`m-${i}`), 30)),
    ];
    expect(statuses).toEqual(new Array<number>(60).fill(200));
    expect(pressure.perSecond()).toBe(60);
    expect(pressure.busy()).toBe(true);
  });

  it("with --client-ca counts only callers whose certificate verified", async () => {
    const pressure = await serve(apiserverCa.cert);
    // Without a certificate: admission is refused (401); conversions are answered, and never counted.
    expect(await post("/validate", (i) => admissionReview(`v-${i}`), 30)).toEqual(
      new Array<number>(30).fill(401),
    );
    expect(await post("/convert", (i) => conversionReview(`c-${i}`), 60)).toEqual(
      new Array<number>(60).fill(200),
    );
    expect(pressure.perSecond()).toBe(0);
    agent?.destroy();
    agent = undefined;
    // The apiserver, with its client certificate.
    expect(await post("/validate", (i) => admissionReview(`v-${i}`), 30, apiserverCert)).toEqual(
      new Array<number>(30).fill(200),
    );
    expect(await post("/mutate", (i) => admissionReview(`m-${i}`), 30, apiserverCert)).toEqual(
      new Array<number>(30).fill(200),
    );
    expect(pressure.perSecond()).toBe(60);
    expect(pressure.busy()).toBe(true);
  });
});
