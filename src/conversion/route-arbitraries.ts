// fast-check generators of valid EdgeRoutes in both versions, for the property
// tests, the benchmark and the integration test. "Valid" means valid against
// src/api/schema.ts (the tests check that with ajv) and the CRD's CEL rule.
// Not imported by the operator itself.

import fc from "fast-check";
import { LIMITS } from "../api/schema.js";
import {
  API_VERSION_V1,
  API_VERSION_V2,
  KIND,
  type Backend,
  type Condition,
  type EdgeRouteSpecV1,
  type EdgeRouteSpecV2,
  type EdgeRouteStatus,
  type EdgeRouteV1,
  type EdgeRouteV2,
  type HeaderMatch,
  type ObjectMeta,
  type RouteMatch,
  type RouteRule,
} from "../api/types.js";

const label = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,10}[a-z0-9])?$/);
export const hostname = fc
  .tuple(fc.boolean(), fc.array(label, { minLength: 1, maxLength: 4 }))
  .map(([wild, labels]) => `${wild ? "*." : ""}${labels.join(".")}`);
const segment = fc.stringMatching(/^[A-Za-z0-9._~-]{0,12}$/);
export const path = fc.array(segment, { minLength: 0, maxLength: 4 }).map((s) => `/${s.join("/")}`);
export const serviceName = fc.stringMatching(/^[a-z]([-a-z0-9]{0,14}[a-z0-9])?$/);
export const port = fc.integer({ min: 1, max: 65535 });
export const timeoutSeconds = fc.integer({ min: 1, max: LIMITS.maxTimeoutSeconds });
/** Gateway API durations, within an hour, including the sub-second and compound ones v1 cannot say. */
export const duration = fc.oneof(
  timeoutSeconds.map((s) => `${s}s`),
  fc.integer({ min: 0, max: 99_999 }).map((ms) => `${ms}ms`),
  fc.tuple(fc.integer({ min: 0, max: 59 }), fc.integer({ min: 0, max: 59 })).map(([m, s]) => `${m}m${s}s`),
  fc.constantFrom("1h", "0s", "90s", "1m", "1s500ms", "15s"),
);

const header: fc.Arbitrary<HeaderMatch> = fc.record(
  {
    name: fc.stringMatching(/^[A-Za-z0-9!#$%&'*+\-.^_`|~]{1,20}$/),
    value: fc.string({ maxLength: 20 }),
  },
  { noNullPrototype: true },
);

const match: fc.Arbitrary<RouteMatch> = fc.record(
  {
    path: fc.record(
      { type: fc.constantFrom("PathPrefix" as const, "Exact" as const), value: path },
      { requiredKeys: ["value"], noNullPrototype: true },
    ),
    headers: fc.array(header, { maxLength: 3 }),
  },
  { requiredKeys: ["path"], noNullPrototype: true },
);

const backend: fc.Arbitrary<Backend> = fc.record(
  { name: serviceName, port, weight: fc.integer({ min: 0, max: LIMITS.maxWeight }) },
  { requiredKeys: ["name", "port"], noNullPrototype: true },
);

// The CRD's CEL rule: at least one backend takes traffic.
const backends = fc
  .array(backend, { minLength: 1, maxLength: 4 })
  .filter((bs) => bs.some((b) => b.weight === undefined || b.weight > 0));

const rule: fc.Arbitrary<RouteRule> = fc.record(
  { matches: fc.array(match, { minLength: 1, maxLength: 3 }), backends, timeout: duration },
  { requiredKeys: ["matches", "backends"], noNullPrototype: true },
);

export const specV1: fc.Arbitrary<EdgeRouteSpecV1> = fc.record(
  { host: hostname, pathPrefix: path, service: serviceName, port, timeoutSeconds },
  { requiredKeys: ["pathPrefix", "service", "port"], noNullPrototype: true },
);

/** Any v2 spec: often one v1 can say in full, often one it cannot. */
export const specV2: fc.Arbitrary<EdgeRouteSpecV2> = fc.oneof(
  specV1.map((v1): EdgeRouteSpecV2 => ({
    ...(v1.host !== undefined ? { hostnames: [v1.host] } : {}),
    rules: [
      {
        matches: [{ path: { type: "PathPrefix", value: v1.pathPrefix } }],
        backends: [{ name: v1.service, port: v1.port, weight: 1 }],
        ...(v1.timeoutSeconds !== undefined ? { timeout: `${v1.timeoutSeconds}s` } : {}),
      },
    ],
  })),
  fc.record(
    {
      hostnames: fc.array(hostname, { maxLength: 4 }),
      rules: fc.array(rule, { minLength: 1, maxLength: 3 }),
    },
    { requiredKeys: ["rules"], noNullPrototype: true },
  ),
);

const timestamp = fc
  .date({ min: new Date("2020-01-01T00:00:00Z"), max: new Date("2030-01-01T00:00:00Z"), noInvalidDate: true })
  .map((d) => `${d.toISOString().slice(0, 19)}Z`);

const condition: fc.Arbitrary<Condition> = fc.record(
  {
    type: fc.constantFrom("Accepted", "Programmed"),
    status: fc.constantFrom("True" as const, "False" as const, "Unknown" as const),
    reason: fc.constantFrom("Valid", "ServiceNotFound", "Conflicted", "Synced", "PushFailed", "Pending"),
    message: fc.string({ maxLength: 30 }),
    observedGeneration: fc.integer({ min: 1, max: 100 }),
    lastTransitionTime: timestamp,
  },
  { noNullPrototype: true },
);

export const status: fc.Arbitrary<EdgeRouteStatus> = fc.record(
  {
    observedGeneration: fc.integer({ min: 0, max: 100 }),
    conditions: fc.uniqueArray(condition, { maxLength: 2, selector: (c) => c.type }),
  },
  { requiredKeys: [], noNullPrototype: true },
);

const nonEmptyMap = (key: fc.Arbitrary<string>) =>
  fc.dictionary(key, fc.string({ maxLength: 20 }), { minKeys: 1, maxKeys: 3, noNullPrototype: true });

/** Metadata as the apiserver sends it: never an empty labels or annotations map. */
export const metadata: fc.Arbitrary<ObjectMeta> = fc.record(
  {
    name: serviceName,
    namespace: fc.constantFrom("default", "team-a", "team-b"),
    uid: fc.uuid(),
    resourceVersion: fc.integer({ min: 1, max: 1_000_000 }).map(String),
    generation: fc.integer({ min: 1, max: 50 }),
    creationTimestamp: timestamp,
    labels: nonEmptyMap(fc.constantFrom("app", "team", "tier")),
    annotations: nonEmptyMap(
      fc.constantFrom("owner", "example.com/note", "kubectl.kubernetes.io/last-applied-configuration"),
    ),
    finalizers: fc.constant(["net.10xdev.io/deprogram"]),
  },
  {
    requiredKeys: ["name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp"],
    noNullPrototype: true,
  },
);

export const routeV1: fc.Arbitrary<EdgeRouteV1> = fc.record(
  { apiVersion: fc.constant(API_VERSION_V1), kind: fc.constant(KIND), metadata, spec: specV1, status },
  { requiredKeys: ["apiVersion", "kind", "metadata", "spec"], noNullPrototype: true },
);

export const routeV2: fc.Arbitrary<EdgeRouteV2> = fc.record(
  { apiVersion: fc.constant(API_VERSION_V2), kind: fc.constant(KIND), metadata, spec: specV2, status },
  { requiredKeys: ["apiVersion", "kind", "metadata", "spec"], noNullPrototype: true },
);
