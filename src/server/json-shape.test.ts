// The heap estimate against the heap JSON.parse really takes (forced GC, this
// Node): never short for the shapes an attacker would pick, and not so high
// that real ConversionReviews are refused for nothing. Plus the depth limit,
// fed a byte at a time.

import v8 from "node:v8";
import vm from "node:vm";
import { describe, expect, it } from "vitest";
import { JsonDepthError, JsonShapeScanner } from "./json-shape.js";

v8.setFlagsFromString("--expose-gc");
const gc = vm.runInNewContext("gc") as () => void;

const SIZE = 2 * 1024 * 1024;

function repeat(unit: (i: number) => string, open = "[", close = "]"): string {
  const parts: string[] = [];
  let n = 0;
  for (let i = 0; n < SIZE; i++) {
    const u = unit(i);
    parts.push(u);
    n += u.length + 1;
  }
  return open + parts.join(",") + close;
}

const at = "2026-11-29T10:00:00Z";
const realRoute = (i: number) =>
  JSON.stringify({
    apiVersion: "net.10xdev.io/v1",
    kind: "EdgeRoute",
    metadata: {
      name: `r-${i}`,
      namespace: "bench",
      uid: `00000000-0000-0000-0000-${String(i).padStart(12, "0")}`,
      resourceVersion: String(1000 + i),
      generation: 1,
      creationTimestamp: at,
      finalizers: ["net.10xdev.io/deprogram"],
      managedFields: [0, 1, 2].map((k) => ({
        manager: `kubectl-${k}`,
        operation: "Update",
        apiVersion: "net.10xdev.io/v1",
        time: at,
        fieldsType: "FieldsV1",
        fieldsV1: { "f:spec": { "f:host": {}, "f:pathPrefix": {}, "f:port": {}, "f:service": {} } },
      })),
    },
    spec: { host: `h${i % 50}.example.com`, pathPrefix: `/r/${i}`, service: "checkout", port: 8080 },
    status: {
      observedGeneration: 1,
      conditions: [
        { type: "Accepted", status: "True", reason: "Valid", message: "ok", lastTransitionTime: at },
      ],
    },
  });

/** Shapes chosen to cost the most heap per byte of text. */
const hostile: Record<string, () => string> = {
  "empty objects": () => repeat(() => "{}"),
  "empty arrays": () => repeat(() => "[]"),
  "small integers": () => repeat(() => "1"),
  "doubles and strings": () => repeat((i) => (i % 2 ? "1.5" : '""')),
  "unique short strings": () => repeat((i) => `"${i.toString(36)}"`),
  "one object, unique keys": () => repeat((i) => `"k${i}":0`, "{", "}"),
  "objects with a unique key each": () => repeat((i) => `{"k${i}":0}`),
  "nested unique keys": () => repeat((i) => `{"k${i}":0,"j${i}":{}}`),
  "one-key objects": () => repeat(() => `{"a":1}`),
  "repeated keys, unique values": () =>
    repeat((i) => `{"a":"${i.toString(36)}","b":${i}.5,"c":"${(i + 1).toString(36)}"}`),
  "long strings": () => repeat((i) => `"${String(i).padEnd(4000, "x")}"`),
  "arrays of one number": () => repeat(() => "[1]"),
};

/** Heap of the text plus its parsed value, as JSON.parse holds both. */
function measured(text: string): number {
  gc();
  const before = process.memoryUsage().heapUsed;
  const value: unknown = JSON.parse(text);
  gc();
  const parsed = process.memoryUsage().heapUsed - before;
  expect(value).toBeDefined();
  return parsed + text.length;
}

function estimate(text: string, chunk = 64 * 1024): number {
  const s = new JsonShapeScanner(64);
  const b = Buffer.from(text);
  for (let i = 0; i < b.length; i += chunk) s.push(b.subarray(i, i + chunk));
  return s.heapEstimate();
}

describe("the heap estimate", () => {
  it.each(Object.entries(hostile))("is never short for %s", (_name, make) => {
    const text = make();
    const real = measured(text);
    expect(estimate(text)).toBeGreaterThanOrEqual(real);
  });

  it("is within 2.5x of what a real ConversionReview of routes takes", () => {
    const text = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u","desiredAPIVersion":"net.10xdev.io/v2","objects":${repeat(realRoute)}}}`;
    const real = measured(text);
    const est = estimate(text);
    expect(est).toBeGreaterThanOrEqual(real);
    expect(est).toBeLessThan(2.5 * real);
  });

  it("gives the same estimate however the text is cut into chunks", () => {
    const text = repeat(realRoute).slice(0, 200_000);
    const whole = estimate(text, text.length);
    for (const size of [1, 7, 64, 4096]) expect(estimate(text, size)).toBeGreaterThanOrEqual(whole);
  });
});

describe("the depth limit", () => {
  it("stops at the first byte past the limit, even fed one byte at a time", () => {
    const s = new JsonShapeScanner(64);
    const text = Buffer.from("[".repeat(100_000));
    let fed = 0;
    expect(() => {
      for (; fed < text.length; fed++) s.push(text.subarray(fed, fed + 1));
    }).toThrow(JsonDepthError);
    expect(fed).toBe(64);
  });

  it("does not count brackets inside strings, escaped quotes included", () => {
    const s = new JsonShapeScanner(2);
    s.push(Buffer.from(JSON.stringify({ a: ['"[[[[{{{{\\"', "]]]"] })));
  });
});
