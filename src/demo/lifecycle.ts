// The lab's lifecycle, played with kubectl against the real apiserver while
// the watcher runs, then v1 and v2 side by side, a refused route and the live
// data-plane version. Each step waits (bounded) for what it expects and fails
// with what it saw instead.

import { API_VERSION_V1, FINALIZER, GROUP, V2_SPEC_ANNOTATION, type EdgeRouteV2 } from "../api/types.js";
import { SNAPSHOT_KEY, objectKey } from "../reconcile/protocol.js";
import type { DemoEnvironment } from "./environment.js";
import {
  conditionValue,
  deletionFields,
  mismatches,
  observedFields,
  renderLine,
  type Fields,
} from "./lifecycle-line.js";
import {
  DEMO_NAMESPACE,
  canaryRoute,
  endpointSlice,
  invalidRoute,
  labRoute,
  service,
  webRoute,
} from "./manifests.js";

export class StepFailed extends Error {}

export interface Output {
  /** A line of the demo's result, on stdout. */
  line(text: string): void;
  /** Progress and diagnostics, on stderr. */
  progress(text: string): void;
}

interface Observation {
  fields: Record<string, string>;
  /** What must hold besides the printed fields. */
  problems?: string[];
}

const STEP_TIMEOUT_MS = 30_000;
const POLL_MS = 150;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function assertAlive(env: DemoEnvironment): void {
  for (const p of [env.serve.process, env.watcher]) {
    if (p.child.exitCode !== null || p.child.signalCode !== null) {
      throw new StepFailed(`edge-operator ${p.name} exited:\n${p.output().slice(-3000)}`);
    }
  }
}

async function readRoute(env: DemoEnvironment, name: string): Promise<EdgeRouteV2 | undefined> {
  const r = await env.kubectl(["get", `edgeroutes.v2.${GROUP}`, name, "-n", DEMO_NAMESPACE, "-o", "json"]);
  if (r.code !== 0) {
    if (r.stderr.includes("NotFound")) return undefined;
    throw new Error(`kubectl get edgeroute ${name}: ${r.stderr.trim()}`);
  }
  return JSON.parse(r.stdout) as EdgeRouteV2;
}

/** Observes until the step holds or its time is up, prints its line, and fails on what did not hold. */
async function step(
  env: DemoEnvironment,
  out: Output,
  label: string,
  expected: Fields,
  observe: () => Promise<Observation>,
): Promise<void> {
  const deadline = Date.now() + STEP_TIMEOUT_MS;
  let seen: Observation;
  let problems: string[];
  for (;;) {
    assertAlive(env);
    seen = await observe();
    problems = [...mismatches(expected, seen.fields), ...(seen.problems ?? [])];
    if (problems.length === 0 || Date.now() > deadline) break;
    await sleep(POLL_MS);
  }
  out.line(renderLine(label, observedFields(expected, seen.fields)));
  if (problems.length > 0) {
    throw new StepFailed(
      `step "${label}" did not hold after ${STEP_TIMEOUT_MS / 1000} s:\n  ${problems.join("\n  ")}`,
    );
  }
}

async function reconcileOk(env: DemoEnvironment, key: string): Promise<unknown> {
  const r = await env.reconcile(key);
  if (r.status !== 200) throw new StepFailed(`POST /reconcile ${key}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

/** The five steps of the lab, on the route `shop`. */
export async function playLabLifecycle(env: DemoEnvironment, out: Output): Promise<void> {
  const name = labRoute.metadata.name ?? "shop";
  const key = objectKey(DEMO_NAMESPACE, name);
  const routeFields = async (
    withReason: boolean,
  ): Promise<{ Accepted: string; Programmed: string; dpPushes: string }> => {
    const [route, dp] = await Promise.all([readRoute(env, name), env.dataPlane()]);
    return {
      Accepted: conditionValue(route, "Accepted", withReason),
      Programmed: conditionValue(route, "Programmed", withReason),
      dpPushes: String(dp.pushes),
    };
  };

  await env.apply(labRoute);
  await step(
    env,
    out,
    "apply (service missing)",
    [
      ["Accepted", "false(ServiceNotFound)"],
      ["Programmed", "false"],
      ["dpPushes", "0"],
    ],
    async () => {
      const f = await routeFields(true);
      // The lab prints Programmed without its reason here.
      return { fields: { ...f, Programmed: f.Programmed.replace(/\(.*\)$/, "") } };
    },
  );

  await env.apply(service("checkout"));
  await step(
    env,
    out,
    "service created (self-heal)",
    [
      ["Accepted", "true(Valid)"],
      ["Programmed", "true(Synced)"],
      ["dpPushes", "1"],
    ],
    async () => ({ fields: await routeFields(true) }),
  );

  // The lab reconciled twice by hand: so do we, with the watcher's token, and
  // check that nothing was written either (a no-op status update is a write).
  const before = (await readRoute(env, name))?.metadata.resourceVersion;
  for (let i = 0; i < 2; i++) {
    await reconcileOk(env, key);
    await reconcileOk(env, SNAPSHOT_KEY);
  }
  await step(
    env,
    out,
    "reconcile x2 (idempotent)",
    [
      ["Accepted", "true"],
      ["Programmed", "true"],
      ["dpPushes", "1"],
    ],
    async () => {
      const after = (await readRoute(env, name))?.metadata.resourceVersion;
      return {
        fields: await routeFields(false),
        problems: after === before ? [] : [`the route was written (resourceVersion ${before} → ${after})`],
      };
    },
  );

  // Deterministic Terminating: the data plane refuses pushes, so the route must
  // stay behind its finalizer (traffic still goes to it) until a push succeeds.
  await env.failNextPushes(1_000_000);
  const del = await env.kubectl(["delete", "edgeroute", name, "-n", DEMO_NAMESPACE, "--wait=false"]);
  if (del.code !== 0) throw new StepFailed(`kubectl delete edgeroute ${name}: ${del.stderr.trim()}`);
  await step(
    env,
    out,
    "delete issued (Terminating)",
    [
      ["exists", "true"],
      ["deletionTimestamp", "set"],
      ["finalizer", FINALIZER],
      ["dpRoutes", "1"],
    ],
    async () => {
      const [route, dp] = await Promise.all([readRoute(env, name), env.dataPlane()]);
      return { fields: { ...deletionFields(route, FINALIZER), dpRoutes: String(dp.routes.length) } };
    },
  );

  await env.failNextPushes(0);
  await reconcileOk(env, SNAPSHOT_KEY);
  await step(
    env,
    out,
    "reconcile (finalizer cleanup)",
    [
      ["exists", "false"],
      ["dpPushes", "2"],
      ["dpRoutes", "0"],
    ],
    async () => {
      const [route, dp] = await Promise.all([readRoute(env, name), env.dataPlane()]);
      return {
        fields: {
          ...deletionFields(route, FINALIZER),
          dpPushes: String(dp.pushes),
          dpRoutes: String(dp.routes.length),
        },
      };
    },
  );
}

function indent(text: string): string {
  return text
    .trimEnd()
    .split("\n")
    .map((l) => `  ${l}`)
    .join("\n");
}

async function kubectlShown(env: DemoEnvironment, out: Output, args: string[]): Promise<string> {
  const r = await env.kubectl(args);
  if (r.code !== 0) throw new StepFailed(`kubectl ${args.join(" ")}: ${r.stderr.trim()}`);
  out.line(`  $ kubectl ${args.join(" ")}`);
  out.line(indent(r.stdout));
  return r.stdout;
}

/** A v1 and a v2 route together, one of them read in both versions; a refused route; the data plane. */
export async function playVersionsAndDataPlane(env: DemoEnvironment, out: Output): Promise<void> {
  await env.apply(
    service("checkout-canary"),
    endpointSlice("checkout", ["10.0.0.11", "10.0.0.12"]),
    endpointSlice("checkout-canary", ["10.0.0.21"]),
    webRoute,
    canaryRoute,
  );
  const names = ["canary", "web"];
  await step(
    env,
    out,
    "v1 + v2 routes applied",
    [
      ["web", "true(Valid)/true(Synced)"],
      ["canary", "true(Valid)/true(Synced)"],
    ],
    async () => {
      const routes = await Promise.all(names.map((n) => readRoute(env, n)));
      const fields: Record<string, string> = {};
      names.forEach((n, i) => {
        fields[n] =
          `${conditionValue(routes[i], "Accepted", true)}/${conditionValue(routes[i], "Programmed", true)}`;
      });
      return { fields };
    },
  );

  out.line("");
  out.line("v1 and v2 side by side (every route in both versions; canary was written as v2):");
  await kubectlShown(env, out, ["get", `edgeroutes.v1.${GROUP}`]);
  await kubectlShown(env, out, ["get", `edgeroutes.v2.${GROUP}`]);
  const asV1 = await env.kubectl(["get", `edgeroutes.v1.${GROUP}`, "canary", "-o", "json"]);
  const asV2 = await env.kubectl(["get", `edgeroutes.v2.${GROUP}`, "canary", "-o", "json"]);
  if (asV1.code !== 0 || asV2.code !== 0)
    throw new StepFailed(`kubectl get canary: ${asV1.stderr}${asV2.stderr}`);
  const v1 = JSON.parse(asV1.stdout) as {
    apiVersion: string;
    spec: unknown;
    metadata: { annotations?: Record<string, string> };
  };
  const v2 = JSON.parse(asV2.stdout) as EdgeRouteV2;
  out.line(`  canary as v1: ${JSON.stringify(v1.spec)}`);
  out.line(`  canary as v2: ${JSON.stringify(v2.spec)}`);
  const lossless = v1.metadata.annotations?.[V2_SPEC_ANNOTATION] !== undefined;
  out.line(
    `  (v1 shows the first rule's first backend; the whole v2 spec travels in the ${V2_SPEC_ANNOTATION} annotation)`,
  );
  if (v1.apiVersion !== API_VERSION_V1 || !lossless || v2.spec.rules[0]?.backends.length !== 2) {
    throw new StepFailed("canary does not read the same in v1 and v2 (conversion webhook)");
  }

  out.line("");
  const refused = await env.kubectl(["apply", "-f", "-"], JSON.stringify(invalidRoute));
  const message = refused.stderr.trim().split("\n")[0] ?? "";
  out.line(`invalid route refused:         ${message}`);
  if (refused.code === 0 || !message.includes("70000")) {
    throw new StepFailed(
      `the invalid route was not refused with a message naming 70000: ${refused.stdout}${refused.stderr}`,
    );
  }

  const dp = await env.dataPlane();
  const clusters = Object.entries(dp.endpoints)
    .map(([c, eps]) => `${c}=[${eps.join(",")}]`)
    .join(" ");
  out.line(`data plane (memory sink):      version=${dp.version ?? "none"} pushes=${dp.pushes}`);
  out.line(`  routes: ${dp.routes.join(" ")}`);
  out.line(`  endpoints: ${clusters}`);
  const want = names.map((n) => objectKey(DEMO_NAMESPACE, n)).join(" ");
  if (dp.routes.join(" ") !== want || !dp.version) {
    throw new StepFailed(`the data plane serves [${dp.routes.join(" ")}], expected [${want}]`);
  }
}
