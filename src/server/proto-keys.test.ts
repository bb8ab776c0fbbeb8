// `__proto__` (and `constructor`, `prototype`) as keys anywhere in a body: JSON
// parses them as plain own keys, and nothing downstream (conversion, the
// admission rules, the patch diff) may turn them into a prototype change. The
// real routes, over a real socket, with the key put at random places in valid
// reviews.

import http from "node:http";
import type { AddressInfo } from "node:net";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { conversionHandler } from "./conversion-review.js";
import { admissionHandlers } from "./admission-handlers.js";
import { serverDeps } from "../../test/fixtures/server-deps.js";
import { createApp } from "./app.js";
import { MiB } from "./json-handler.js";

let server: http.Server;
let port: number;
const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });

beforeAll(async () => {
  const deps = serverDeps();
  const handlers = [conversionHandler(64 * MiB, deps.metrics), ...admissionHandlers(undefined, deps)];
  server = http.createServer(createApp({ handlers, ready: () => true, ...deps }));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  agent.destroy();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

function post(path: string, text: string): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port, path, method: "POST", agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () =>
        resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString("utf8")) }),
      );
    });
    req.on("error", reject);
    req.end(text);
  });
}

const v1Route = {
  apiVersion: "net.10xdev.io/v1",
  kind: "EdgeRoute",
  metadata: {
    name: "shop",
    namespace: "team-a",
    uid: "u1",
    labels: { app: "shop" },
    annotations: { a: "b" },
  },
  spec: { host: "shop.example.com", pathPrefix: "/api", service: "checkout", port: 8080 },
};

/** Every object path in a value, as key lists. */
function objectPaths(v: unknown, at: string[] = []): string[][] {
  if (typeof v !== "object" || v === null) return [];
  const here = Array.isArray(v) ? [] : [at];
  const entries = Array.isArray(v) ? v.map((x, i) => [String(i), x] as const) : Object.entries(v);
  return [...here, ...entries.flatMap(([k, x]) => objectPaths(x, [...at, k]))];
}

/** The JSON text of `doc` with `"KEY": payload` added to the object at `path`: as a hostile client writes it. */
function withKey(doc: unknown, path: string[], key: string, payload: unknown): string {
  const marker = `"__marker_${Math.random().toString(36).slice(2)}__"`;
  const copy = structuredClone(doc) as Record<string, unknown>;
  let target: Record<string, unknown> = copy;
  for (const k of path) target = target[k] as Record<string, unknown>;
  target[marker.slice(1, -1)] = 0;
  return JSON.stringify(copy).replace(`${marker}:0`, `${JSON.stringify(key)}:${JSON.stringify(payload)}`);
}

const reviews: Record<string, unknown> = {
  "/convert": {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "ConversionReview",
    request: { uid: "c1", desiredAPIVersion: "net.10xdev.io/v2", objects: [v1Route] },
  },
  "/validate": {
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    request: {
      uid: "a1",
      kind: { group: "net.10xdev.io", version: "v1", kind: "EdgeRoute" },
      resource: { group: "net.10xdev.io", version: "v1", resource: "edgeroutes" },
      namespace: "team-a",
      operation: "UPDATE",
      object: v1Route,
      oldObject: v1Route,
    },
  },
};
reviews["/mutate"] = reviews["/validate"];

describe("__proto__ keys in request bodies", () => {
  it("never change a prototype, and every answer is JSON: a review or a 4xx", async () => {
    const paths = Object.fromEntries(Object.entries(reviews).map(([p, doc]) => [p, objectPaths(doc)]));
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom("/convert", "/validate", "/mutate"),
        fc.nat(),
        fc.constantFrom("__proto__", "constructor", "prototype"),
        fc.oneof(
          fc.constant({ polluted: "yes" }),
          fc.constant({ prototype: { polluted: "yes" } }),
          fc.constant(null),
          fc.constant("x"),
        ),
        async (route, pick, key, payload) => {
          const candidates = paths[route] as string[][];
          const where = candidates[pick % candidates.length] as string[];
          const r = await post(route, withKey(reviews[route], where, key, payload));
          expect(({} as Record<string, unknown>).polluted).toBeUndefined();
          expect(Object.prototype).not.toHaveProperty("polluted");
          if (r.status === 200) {
            expect(r.body).toMatchObject({ response: {} });
          } else {
            expect(r.status).toBeGreaterThanOrEqual(400);
            expect(r.status).toBeLessThan(500);
            expect(r.body).toMatchObject({ kind: "Status", code: r.status });
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it("keeps a __proto__ annotation as an annotation through conversion", async () => {
    const text = withKey(
      reviews["/convert"],
      ["request", "objects", "0", "metadata", "annotations"],
      "__proto__",
      "v",
    );
    const r = await post("/convert", text);
    expect(r.status).toBe(200);
    const out = r.body as { response: { convertedObjects: { metadata: { annotations: object } }[] } };
    const annotations = out.response.convertedObjects[0]?.metadata.annotations as object;
    expect(Object.getPrototypeOf(annotations)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(annotations, "__proto__")?.value).toBe("v");
  });
});
