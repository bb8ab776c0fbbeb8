// 10,000 random and malformed AdmissionReviews through the real express app,
// over HTTP on loopback: the server never crashes, and every answer is JSON of
// the right shape (a Status for 4xx, a review that echoes the uid for 200).

import http from "node:http";
import type { AddressInfo } from "node:net";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "./app.js";
import { admissionHandlers } from "./admission-handlers.js";
import { ADMISSION_BODY_LIMIT } from "./admission-review.js";
import { serverDeps } from "../../test/fixtures/server-deps.js";

let server: http.Server;
let base: string;
const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });

const deps = serverDeps();

beforeAll(async () => {
  server = http.createServer(
    createApp({ handlers: admissionHandlers(undefined, deps), ready: () => true, ...deps }),
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  agent.destroy();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

function post(path: string, body: string | Buffer): Promise<{ status: number; type: string; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${base}${path}`,
      { method: "POST", agent, headers: { "content-type": "application/json" } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            type: String(res.headers["content-type"]),
            text: Buffer.concat(chunks).toString("utf8"),
          }),
        );
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

// Mostly plausible values, sometimes anything: enough valid reviews get past
// the envelope for the rules and the patches to be exercised too.
const anyValue = fc.oneof(fc.jsonValue({ maxDepth: 3 }), fc.constant(undefined));
function mostly<T>(arb: fc.Arbitrary<T>): fc.Arbitrary<T | unknown> {
  return fc.oneof({ weight: 19, arbitrary: arb }, { weight: 1, arbitrary: anyValue });
}
const uid = fc.oneof(
  { weight: 40, arbitrary: fc.uuid() },
  fc.string({ minLength: 1 }),
  fc.constant(""),
  fc.integer(),
  fc.constant(null),
);
const backend = fc.record(
  {
    name: mostly(fc.constantFrom("checkout", "checkout-canary", "Checkout", "1x", "")),
    port: mostly(fc.oneof(fc.integer({ min: 1, max: 65535 }), fc.integer())),
    weight: fc.oneof(fc.constant(undefined), mostly(fc.integer({ min: -1, max: 1_000_001 }))),
  },
  { requiredKeys: [] },
);
const match = fc.record(
  {
    path: mostly(
      fc.record(
        {
          type: fc.oneof(fc.constant(undefined), mostly(fc.constantFrom("Exact", "PathPrefix", "Regex"))),
          value: mostly(
            fc.oneof(fc.constantFrom("/", "/a", "/api", "/a//b", "a", "/%2f", "/a?b"), fc.string()),
          ),
        },
        { requiredKeys: [] },
      ),
    ),
    headers: fc.oneof(
      fc.constant(undefined),
      mostly(
        fc.array(fc.record({ name: fc.constantFrom("x-a", "X-A", "x b"), value: mostly(fc.string()) }), {
          maxLength: 3,
        }),
      ),
    ),
  },
  { requiredKeys: [] },
);
const rule = mostly(
  fc.record(
    {
      matches: mostly(fc.array(match, { maxLength: 3 })),
      backends: mostly(fc.array(backend, { maxLength: 3 })),
      timeout: fc.oneof(fc.constant(undefined), mostly(fc.constantFrom("15s", "2h", "1m30s", "x"))),
    },
    { requiredKeys: [] },
  ),
);
const specV2 = fc.record(
  {
    hostnames: fc.oneof(
      fc.constant(undefined),
      mostly(fc.array(mostly(fc.oneof(fc.domain(), fc.string())), { maxLength: 3 })),
    ),
    rules: mostly(fc.array(rule, { maxLength: 3 })),
  },
  { requiredKeys: [] },
);
const specV1 = fc.record(
  {
    host: fc.oneof(fc.constant(undefined), mostly(fc.oneof(fc.domain(), fc.string()))),
    pathPrefix: mostly(fc.constantFrom("/", "/a", "a", "/a/..")),
    service: mostly(fc.constantFrom("checkout", "Checkout")),
    port: mostly(fc.integer({ min: 0, max: 70000 })),
    timeoutSeconds: fc.oneof(fc.constant(undefined), anyValue),
  },
  { requiredKeys: [] },
);
const metadata = mostly(
  fc.record(
    {
      name: mostly(fc.string()),
      namespace: fc.string(),
      finalizers: fc.oneof(
        fc.constant(undefined),
        mostly(fc.array(fc.constantFrom("net.10xdev.io/deprogram", "x.io/y"), { maxLength: 2 })),
      ),
      deletionTimestamp: fc.oneof(
        { weight: 4, arbitrary: fc.constant(undefined) },
        mostly(fc.constant("2026-01-01T00:00:00Z")),
      ),
      labels: fc.oneof(fc.constant(undefined), mostly(fc.dictionary(fc.string(), fc.string()))),
    },
    { requiredKeys: [] },
  ),
);
const object = mostly(
  fc.oneof(
    fc.record(
      {
        apiVersion: mostly(fc.constantFrom("net.10xdev.io/v2", "net.10xdev.io/v3")),
        kind: fc.constant("EdgeRoute"),
        metadata,
        spec: mostly(specV2),
      },
      { requiredKeys: ["metadata"] },
    ),
    fc.record(
      {
        apiVersion: mostly(fc.constant("net.10xdev.io/v1")),
        kind: fc.constant("EdgeRoute"),
        metadata,
        spec: mostly(specV1),
      },
      { requiredKeys: ["metadata"] },
    ),
  ),
);
const request = fc.record(
  {
    uid,
    kind: mostly(
      fc.record({
        group: fc.constantFrom("net.10xdev.io", ""),
        version: fc.constantFrom("v1", "v2", "v3"),
        kind: fc.constant("EdgeRoute"),
      }),
    ),
    resource: mostly(
      fc.record(
        {
          group: fc.constantFrom("net.10xdev.io", "net.10xdev.io", "apps"),
          version: mostly(fc.constantFrom("v1", "v2")),
          resource: fc.constantFrom("edgeroutes", "edgeroutes", "pods"),
        },
        { requiredKeys: ["group", "resource"] },
      ),
    ),
    subResource: fc.oneof(
      { weight: 8, arbitrary: fc.constant(undefined) },
      fc.constantFrom("status", ""),
      anyValue,
    ),
    operation: mostly(fc.constantFrom("CREATE", "UPDATE", "UPDATE", "DELETE", "CONNECT", "PATCH")),
    name: anyValue,
    namespace: mostly(fc.string()),
    object,
    oldObject: object,
    dryRun: fc.oneof(fc.boolean(), anyValue),
  },
  { requiredKeys: ["uid", "resource", "operation", "object"] },
);
const review = fc.record(
  {
    apiVersion: mostly(
      fc.oneof(
        { weight: 10, arbitrary: fc.constant("admission.k8s.io/v1") },
        fc.constantFrom("admission.k8s.io/v1beta1", "admission.k8s.io/v2"),
      ),
    ),
    kind: mostly(
      fc.oneof({ weight: 10, arbitrary: fc.constant("AdmissionReview") }, fc.constant("ConversionReview")),
    ),
    request: mostly(request),
  },
  { requiredKeys: ["apiVersion", "kind", "request"] },
);
// Bodies that are not JSON at all, or JSON cut short.
const body = fc.oneof(
  { weight: 12, arbitrary: review.map((r) => JSON.stringify(r)) },
  { weight: 1, arbitrary: fc.jsonValue().map((v) => JSON.stringify(v)) },
  {
    weight: 1,
    arbitrary: review.chain((r) =>
      fc.nat().map((n) => {
        const s = JSON.stringify(r);
        return s.slice(0, n % (s.length + 1));
      }),
    ),
  },
  { weight: 1, arbitrary: fc.string({ unit: "binary" }) },
);

interface Sent {
  apiVersion?: unknown;
  request?: { uid?: unknown };
}

const seen = { error: 0, allowed: 0, denied: 0, patched: 0 };

function checkAnswer(sent: string, res: { status: number; type: string; text: string }): void {
  expect(res.type).toMatch(/^application\/json/);
  const answer = JSON.parse(res.text) as Record<string, unknown>;
  if (res.status !== 200) {
    seen.error++;
    expect([400, 413]).toContain(res.status);
    expect(answer).toMatchObject({ kind: "Status", apiVersion: "v1", status: "Failure", code: res.status });
    expect(typeof answer.message).toBe("string");
    return;
  }
  const asked = JSON.parse(sent) as Sent;
  expect(answer.apiVersion).toBe(asked.apiVersion);
  expect(answer.kind).toBe("AdmissionReview");
  const response = answer.response as Record<string, unknown>;
  expect(response.uid).toBe(asked.request?.uid);
  expect(typeof response.uid === "string" && response.uid !== "").toBe(true);
  expect(typeof response.allowed).toBe("boolean");
  seen[response.allowed === true ? "allowed" : "denied"]++;
  if (response.allowed === false) {
    const status = response.status as Record<string, unknown>;
    expect(status.status).toBe("Failure");
    expect(Number.isInteger(status.code) && (status.code as number) >= 400).toBe(true);
    expect(typeof status.message === "string" && status.message !== "").toBe(true);
    expect(response.patch).toBeUndefined();
  }
  if (response.patch !== undefined) {
    seen.patched++;
    expect(response.patchType).toBe("JSONPatch");
    const ops = JSON.parse(Buffer.from(response.patch as string, "base64").toString("utf8")) as unknown;
    expect(Array.isArray(ops) && ops.length > 0).toBe(true);
  }
  for (const w of (response.warnings as string[] | undefined) ?? []) expect(w.length).toBeLessThan(120);
}

describe("AdmissionReview fuzz through the express app", () => {
  it("answers 10,000 random and malformed reviews with well-formed JSON", { timeout: 300_000 }, async () => {
    let count = 0;
    await fc.assert(
      fc.asyncProperty(body, fc.constantFrom("/validate", "/mutate"), async (text, path) => {
        count++;
        checkAnswer(text, await post(path, text));
      }),
      { numRuns: 10_000 },
    );
    expect(count).toBeGreaterThanOrEqual(10_000);
    // The generator reaches every kind of answer, not only the 400s.
    for (const n of Object.values(seen)) expect(n).toBeGreaterThan(100);
    // And the server is still up.
    expect((await post("/validate", "{}")).status).toBe(400);
  });

  it("refuses a body over 3 MiB with a 413 JSON error, and takes one just under", async () => {
    const pad = (n: number) =>
      JSON.stringify({ kind: "AdmissionReview", apiVersion: "admission.k8s.io/v1", pad: "x".repeat(n) });
    const over = await post("/validate", pad(ADMISSION_BODY_LIMIT));
    expect(over.status).toBe(413);
    expect(JSON.parse(over.text)).toMatchObject({
      kind: "Status",
      code: 413,
      reason: "RequestEntityTooLarge",
    });
    const under = await post("/validate", pad(ADMISSION_BODY_LIMIT - 1000));
    expect(under.status).toBe(400);
    expect(JSON.parse(under.text)).toMatchObject({ message: "AdmissionReview.request is missing" });
  });
});
