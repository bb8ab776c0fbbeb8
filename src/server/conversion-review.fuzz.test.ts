// Malformed and random bodies through the real server (express app + TLS, in
// this process): whatever arrives, the answer is a well-formed ConversionReview
// or a 4xx JSON error, and the server keeps serving.

import https from "node:https";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCa, issueCertificate } from "../certs/pki.js";
import { createApp } from "./app.js";
import { startHttpsServer, type RunningServer } from "./https.js";
import { conversionHandler } from "./conversion-review.js";
import { routeV1, routeV2 } from "../../test/fixtures/route-arbitraries.js";
import { serverDeps } from "../../test/fixtures/server-deps.js";

const LIMIT = 256 * 1024;
let server: RunningServer;
let agent: https.Agent;
let base: string;

const deps = serverDeps();

beforeAll(async () => {
  const ca = createCa();
  const pair = issueCertificate(ca, { commonName: "127.0.0.1", ips: ["127.0.0.1"], usage: "server" });
  server = await startHttpsServer(
    createApp({ handlers: [conversionHandler(LIMIT, deps.metrics)], ready: () => true, ...deps }),
    {
      host: "127.0.0.1",
      port: 0,
      tls: pair,
      log: deps.log,
      drainMs: 100,
    },
  );
  agent = new https.Agent({ ca: ca.cert, keepAlive: true, maxSockets: 4 });
  base = `https://127.0.0.1:${server.address.port}`;
});

afterAll(async () => {
  agent?.destroy();
  await server?.stop();
});

function post(path: string, body: Buffer): Promise<{ status: number; type: string; text: string }> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      `${base}${path}`,
      {
        method: "POST",
        agent,
        headers: { "content-type": "application/json", "content-length": body.length },
      },
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
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

/** Replaces the value at a path chosen by `choices` (indexes into keys or items) with `value`. */
function mutate(obj: unknown, choices: readonly number[], value: unknown): unknown {
  if (choices.length === 0 || typeof obj !== "object" || obj === null) return value;
  const [c, ...rest] = choices as [number, ...number[]];
  if (Array.isArray(obj)) {
    if (obj.length === 0) return value;
    const i = c % obj.length;
    return obj.map((x, j) => (j === i ? mutate(x, rest, value) : x));
  }
  const keys = Object.keys(obj);
  if (keys.length === 0) return value;
  const k = keys[c % keys.length] as string;
  return { ...obj, [k]: mutate((obj as Record<string, unknown>)[k], rest, value) };
}

const anyRoute = fc.oneof(routeV1, routeV2);
const mutatedRoute = fc
  .tuple(anyRoute, fc.array(fc.nat(), { maxLength: 6 }), fc.jsonValue({ maxDepth: 2 }))
  .map(([r, choices, v]) => mutate(r, choices, v));
/** Usually `valid`, sometimes any JSON at all, sometimes absent (undefined is not serialized). */
function mostly<T>(
  valid: fc.Arbitrary<T>,
  noise: fc.Arbitrary<unknown> = fc.jsonValue({ maxDepth: 1 }),
): fc.Arbitrary<unknown> {
  return fc.oneof(
    { weight: 18, arbitrary: valid },
    { weight: 1, arbitrary: noise },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );
}
const desired = mostly(
  fc.constantFrom(
    "net.10xdev.io/v1",
    "net.10xdev.io/v2",
    "net.10xdev.io/v1",
    "net.10xdev.io/v2",
    "net.10xdev.io/v3",
    "",
  ),
);
const objects = mostly(
  fc.array(
    fc.oneof(
      { weight: 30, arbitrary: anyRoute },
      { weight: 2, arbitrary: mutatedRoute },
      { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
    ),
    { maxLength: 6 },
  ),
  fc.jsonValue({ maxDepth: 2 }),
);
const reviewLike = fc.record(
  {
    apiVersion: mostly(
      fc.constant("apiextensions.k8s.io/v1"),
      fc.oneof(fc.constant("apiextensions.k8s.io/v1beta1"), fc.jsonValue({ maxDepth: 1 })),
    ),
    kind: mostly(fc.constant("ConversionReview")),
    request: mostly(
      fc.record({ uid: mostly(fc.uuid()), desiredAPIVersion: desired, objects }, { noNullPrototype: true }),
      fc.jsonValue({ maxDepth: 2 }),
    ),
  },
  { noNullPrototype: true },
);
// Mostly review-shaped (the interesting cases), the rest raw noise.
const body: fc.Arbitrary<Buffer> = fc.oneof(
  { weight: 6, arbitrary: reviewLike.map((r) => Buffer.from(JSON.stringify(r))) },
  {
    weight: 2,
    arbitrary: fc.tuple(reviewLike, fc.nat()).map(([r, n]) => {
      const s = JSON.stringify(r);
      return Buffer.from(s.slice(0, n % (s.length + 1)));
    }),
  },
  { weight: 1, arbitrary: fc.json({ maxDepth: 3 }).map((s) => Buffer.from(s)) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 200 }).map((a) => Buffer.from(a)) },
);

function isEnvelope(
  parsed: unknown,
): parsed is { request: { uid: string; desiredAPIVersion: string; objects: unknown[] } } {
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return false;
  const p = parsed as Record<string, unknown>;
  const r = p.request as Record<string, unknown> | null;
  return (
    p.apiVersion === "apiextensions.k8s.io/v1" &&
    p.kind === "ConversionReview" &&
    typeof r === "object" &&
    r !== null &&
    !Array.isArray(r) &&
    typeof r.uid === "string" &&
    r.uid !== "" &&
    typeof r.desiredAPIVersion === "string" &&
    Array.isArray(r.objects)
  );
}

type Outcome = "Success" | "Failed" | "4xx";

function check(sent: Buffer, res: { status: number; type: string; text: string }): Outcome {
  expect(res.type).toMatch(/^application\/json/);
  const answer = JSON.parse(res.text) as Record<string, unknown>;
  let parsed: unknown = undefined;
  try {
    parsed = JSON.parse(sent.toString("utf8"));
  } catch {
    // not JSON: must be a 400
  }
  if (!isEnvelope(parsed)) {
    expect(res.status).toBe(400);
    expect(answer).toMatchObject({ kind: "Status", status: "Failure", code: 400 });
    expect(typeof answer.message).toBe("string");
    return "4xx";
  }
  expect(res.status).toBe(200);
  expect(answer.apiVersion).toBe("apiextensions.k8s.io/v1");
  expect(answer.kind).toBe("ConversionReview");
  const response = answer.response as {
    uid: string;
    convertedObjects: { apiVersion: string }[];
    result: { status: string; message?: string };
  };
  expect(response.uid).toBe(parsed.request.uid);
  expect(Array.isArray(response.convertedObjects)).toBe(true);
  if (response.result.status === "Success") {
    expect(response.convertedObjects).toHaveLength(parsed.request.objects.length);
    for (const o of response.convertedObjects) expect(o.apiVersion).toBe(parsed.request.desiredAPIVersion);
    return "Success";
  }
  expect(response.result.status).toBe("Failed");
  expect(response.result.message).toMatch(/\S/);
  return "Failed";
}

describe("/convert under random input", () => {
  it("answers 10,000 malformed or random bodies with a well-formed review or a 4xx JSON error", async () => {
    const seen: Record<Outcome, number> = { Success: 0, Failed: 0, "4xx": 0 };
    await fc.assert(
      fc.asyncProperty(body, async (b) => {
        seen[check(b, await post("/convert", b))]++;
      }),
      { numRuns: 10_000 },
    );
    // Every kind of answer was exercised, not only the easy rejections.
    expect(seen.Success + seen.Failed + seen["4xx"]).toBeGreaterThanOrEqual(10_000);
    expect(seen.Success).toBeGreaterThan(1000);
    expect(seen.Failed).toBeGreaterThan(1000);
    expect(seen["4xx"]).toBeGreaterThan(1000);
    console.log("fuzz outcomes", seen);
    // Still serving after all of it.
    const ok = await post(
      "/convert",
      Buffer.from(
        JSON.stringify({
          apiVersion: "apiextensions.k8s.io/v1",
          kind: "ConversionReview",
          request: { uid: "u", desiredAPIVersion: "net.10xdev.io/v1", objects: [] },
        }),
      ),
    );
    expect(ok.status).toBe(200);
  }, 300_000);

  it("answers a body past the limit with 413 JSON, and an empty body with 400", async () => {
    const big = await post("/convert", Buffer.alloc(LIMIT + 1, 0x20));
    expect(big.status).toBe(413);
    expect(JSON.parse(big.text)).toMatchObject({ kind: "Status", code: 413 });
    const empty = await post("/convert", Buffer.alloc(0));
    expect(empty.status).toBe(400);
  });
});
