// The lab's lifecycle, played with kubectl against the real apiserver while
// the watcher runs, with gRPC's own xDS client as the data plane: what the
// lines say about the data plane comes from that client (what it holds, where
// its RPCs went), never from the operator's memory. Then the break-glass, v1
// and v2 side by side, a refused route, and what the client and the servers'
// ACK records hold. Each step waits (bounded) for what it expects and fails
// with what it saw instead.

import {
  API_VERSION_V1,
  FINALIZER,
  GROUP,
  V2_SPEC_ANNOTATION,
  type EdgeRouteV2,
} from "../../src/api/types.js";
import { objectKey } from "../../src/api/object-key.js";
import { SNAPSHOT_KEY } from "../../src/reconcile/protocol.js";
import type { DemoEnvironment } from "./environment.js";
import {
  CallWatcher,
  backendsReached,
  lastServedAt,
  pushesOf,
  rpcsField,
  type SeenCall,
} from "./data-plane-view.js";
import {
  conditionValue,
  deletionFields,
  mismatches,
  observedFields,
  renderLine,
  type Fields,
} from "./lifecycle-line.js";
import {
  CANARY_SERVICE,
  CHECKOUT_SERVICE,
  DEMO_NAMESPACE,
  LAB_HOST,
  LEGACY_HOST,
  canaryRoute,
  invalidRoute,
  labRoute,
  legacyRoute,
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
  /** What else to say if the step does not hold (the client's last failed call). */
  detail?: string;
}

/** The client's last failed call to `host`, in gRPC's words, for a step that failed. */
function lastFailureOf(client: CallWatcher, host: string): string {
  for (let i = client.calls.length - 1; i >= 0; i--) {
    const c = client.calls[i];
    if (c?.host === host && !c.call.ok) return `the client's last failed call to ${host}: ${c.call.details}`;
  }
  return "";
}

const STEP_TIMEOUT_MS = 45_000;
const POLL_MS = 150;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function assertAlive(env: DemoEnvironment): Promise<void> {
  const down = await env.operatorDown();
  if (down) throw new StepFailed(down);
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
  timeoutMs = STEP_TIMEOUT_MS,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let seen: Observation;
  let problems: string[];
  for (;;) {
    await assertAlive(env);
    seen = await observe();
    problems = [...mismatches(expected, seen.fields), ...(seen.problems ?? [])];
    if (problems.length === 0 || Date.now() > deadline) break;
    await sleep(POLL_MS);
  }
  out.line(renderLine(label, observedFields(expected, seen.fields)));
  if (problems.length > 0) {
    const lines = [...problems, ...(seen.detail ? [seen.detail] : [])];
    throw new StepFailed(
      `step "${label}" did not hold after ${timeoutMs / 1000} s:\n  ${lines.join("\n  ")}`,
    );
  }
}

async function reconcileOk(env: DemoEnvironment, key: string): Promise<unknown> {
  const r = await env.reconcile(key);
  if (r.status !== 200) throw new StepFailed(`POST /reconcile ${key}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

async function deleteRoute(env: DemoEnvironment, name: string): Promise<void> {
  const del = await env.kubectl(["delete", "edgeroute", name, "-n", DEMO_NAMESPACE, "--wait=false"]);
  if (del.code !== 0) throw new StepFailed(`kubectl delete edgeroute ${name}: ${del.stderr.trim()}`);
}

function programmedMessage(route: EdgeRouteV2 | undefined): string {
  return route?.status?.conditions?.find((c) => c.type === "Programmed")?.message ?? "";
}

/** The lab's steps on the route `shop`, then the break-glass on `legacy`. */
export async function playLabLifecycle(env: DemoEnvironment, out: Output): Promise<void> {
  const name = labRoute.metadata.name ?? "shop";
  const key = objectKey(DEMO_NAMESPACE, name);
  const client = new CallWatcher(() => env.clientState());
  client.start();
  try {
    const backends = env.backendCount(CHECKOUT_SERVICE);
    const served = `served(${backends} backends)`;
    const routeFields = async (withReason: boolean, since: number) => {
      const [route, state] = await Promise.all([readRoute(env, name), client.state()]);
      return {
        route,
        state,
        fields: {
          Accepted: conditionValue(route, "Accepted", withReason),
          Programmed: conditionValue(route, "Programmed", withReason),
          dpPushes: String(pushesOf(state, key)),
          dpRoutes: String(state.held.routes.length),
          rpcs: rpcsField(client.calls, LAB_HOST, since),
        },
      };
    };

    let since = Date.now();
    await env.apply(labRoute);
    await step(
      env,
      out,
      "apply (service missing)",
      [
        ["Accepted", "false(ServiceNotFound)"],
        ["Programmed", "false"],
        ["dpPushes", "0"],
        ["rpcs", "fail(UNAVAILABLE)"],
      ],
      async () => {
        const { fields } = await routeFields(true, since);
        // The lab prints Programmed without its reason here.
        return { fields: { ...fields, Programmed: fields.Programmed.replace(/\(.*\)$/, "") } };
      },
    );

    since = Date.now();
    await env.apply(...env.service(CHECKOUT_SERVICE));
    await step(
      env,
      out,
      "service created (self-heal)",
      [
        ["Accepted", "true(Valid)"],
        ["Programmed", "true(Synced)"],
        ["dpPushes", "1"],
        ["dpRoutes", "1"],
        ["rpcs", served],
      ],
      async () => {
        const { fields, state } = await routeFields(true, since);
        // Programmed=True is written after the client's ACK: by then the client holds the route.
        const problems =
          fields.Programmed === "true(Synced)" && !state.held.routes.includes(key)
            ? [`Programmed=True while the client does not hold ${key}`]
            : [];
        return { fields, problems, detail: lastFailureOf(client, LAB_HOST) };
      },
    );

    // The lab reconciled twice by hand: so do we, with the watcher's token, and
    // check that nothing was written and nothing new reached the client.
    const before = (await readRoute(env, name))?.metadata.resourceVersion;
    const rdsBefore = (await client.state()).held.versions.rds;
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
        const { fields, route, state } = await routeFields(false, since);
        const after = route?.metadata.resourceVersion;
        const problems = [
          ...(after === before ? [] : [`the route was written (resourceVersion ${before} → ${after})`]),
          ...(state.held.versions.rds === rdsBefore
            ? []
            : [`the client took a new route version (${rdsBefore} → ${state.held.versions.rds})`]),
        ];
        return { fields, problems };
      },
    );

    // The data plane cannot answer: its link to the operator is cut (a relay in
    // the client's pod stops passing bytes, no socket closed: a partition).
    await env.setLink("cut");
    out.progress("the client's link to the ADS server is cut (its relay passes no bytes); deleting shop");
    // The watch lists the route before the delete, or a delete finished
    // before kubectl started would go unseen.
    const gone = env.watchGone(name);
    let message = "";
    try {
      await gone.listed;
      since = Date.now();
      await deleteRoute(env, name);
      await step(
        env,
        out,
        "delete issued (Terminating)",
        [
          ["exists", "true"],
          ["deletionTimestamp", "set"],
          ["finalizer", FINALIZER],
          ["Programmed", "false(Pending)"],
          ["dpRoutes", "1"],
          ["rpcs", served],
        ],
        async () => {
          const [route, state] = await Promise.all([readRoute(env, name), client.state()]);
          message = programmedMessage(route);
          return {
            fields: {
              ...deletionFields(route, FINALIZER),
              Programmed: conditionValue(route, "Programmed", true),
              dpRoutes: String(state.held.routes.length),
              rpcs: rpcsField(client.calls, LAB_HOST, since),
            },
            detail: lastFailureOf(client, LAB_HOST),
          };
        },
      );
      out.line(`  why: ${message}`);

      await env.setLink("up");
      out.progress("the client's link is back");
      await step(
        env,
        out,
        "link back (finalizer cleanup)",
        [
          ["exists", "false"],
          ["dpPushes", "2"],
          ["dpRoutes", "0"],
          ["rpcs", "fail(UNAVAILABLE)"],
        ],
        async () => {
          const [route, state] = await Promise.all([readRoute(env, name), client.state()]);
          return {
            fields: {
              ...deletionFields(route, FINALIZER),
              dpPushes: String(pushesOf(state, key)),
              dpRoutes: String(state.held.routes.length),
              rpcs: rpcsField(client.calls, LAB_HOST, since),
            },
          };
        },
      );
      // The order the finalizer exists for: the client stopped reaching the route, then the object went.
      const goneAt = gone.at();
      const lastServed = lastServedAt(client.calls, LAB_HOST);
      if (goneAt === undefined) throw new StepFailed("the watch never saw shop deleted");
      if (lastServed === undefined || lastServed >= goneAt) {
        throw new StepFailed(
          `the object was gone at ${new Date(goneAt).toISOString()}, but the client's RPCs reached the route until ${lastServed === undefined ? "never" : new Date(lastServed).toISOString()}`,
        );
      }
      out.line(
        `  order: the client's last RPC on the route ${((goneAt - lastServed) / 1000).toFixed(2)} s before the object was gone`,
      );
    } finally {
      gone.stop();
    }

    await playBreakGlass(env, out, client, served);
  } finally {
    client.stop();
  }
}

/** A route deleted while the data plane stays cut off past the deprogram timeout: stuck, then released by hand. */
async function playBreakGlass(
  env: DemoEnvironment,
  out: Output,
  client: CallWatcher,
  served: string,
): Promise<void> {
  const name = legacyRoute.metadata.name ?? "legacy";
  const key = objectKey(DEMO_NAMESPACE, name);
  out.line("");
  out.line(`break-glass (deprogram timeout ${env.deprogramTimeout}):`);
  let since = Date.now();
  await env.apply(legacyRoute);
  await step(
    env,
    out,
    "legacy applied",
    [
      ["Programmed", "true(Synced)"],
      ["rpcs", served],
    ],
    async () => {
      const route = await readRoute(env, name);
      return {
        fields: {
          Programmed: conditionValue(route, "Programmed", true),
          rpcs: rpcsField(client.calls, LEGACY_HOST, since),
        },
      };
    },
  );

  await env.setLink("cut");
  since = Date.now();
  await deleteRoute(env, name);
  const fields = async (): Promise<{ route: EdgeRouteV2 | undefined; fields: Record<string, string> }> => {
    const route = await readRoute(env, name);
    return {
      route,
      fields: {
        ...deletionFields(route, FINALIZER),
        Programmed: conditionValue(route, "Programmed", true),
        rpcs: rpcsField(client.calls, LEGACY_HOST, since),
      },
    };
  };
  let message = "";
  await step(
    env,
    out,
    "delete, link cut (stuck)",
    [
      ["exists", "true"],
      ["finalizer", FINALIZER],
      ["Programmed", "false(DeprogramStuck)"],
      ["rpcs", served],
    ],
    async () => {
      const f = await fields();
      message = programmedMessage(f.route);
      return { fields: f.fields };
    },
    env.deprogramTimeoutMs + STEP_TIMEOUT_MS,
  );
  out.line(`  why: ${message}`);

  const reason = "demo: the data plane stays cut off";
  const released = await env.releaseFinalizer(key, reason);
  out.line(`  $ edge-operator finalizer release ${key} --reason "${reason}"`);
  for (const l of released.split("\n").filter((x) => x.trim() !== "")) out.line(`  ${l}`);
  since = Date.now();
  await step(
    env,
    out,
    "finalizer released by hand",
    [
      ["exists", "false"],
      ["rpcs", served],
    ],
    async () => {
      const f: Record<string, string> = (await fields()).fields;
      return { fields: { exists: f.exists ?? "?", rpcs: f.rpcs ?? "?" } };
    },
  );

  await env.setLink("up");
  since = Date.now();
  await step(
    env,
    out,
    "link back",
    [
      ["dpRoutes", "0"],
      ["rpcs", "fail(UNAVAILABLE)"],
    ],
    async () => {
      const state = await client.state();
      return {
        fields: {
          dpRoutes: String(state.held.routes.filter((r) => r === key).length),
          rpcs: rpcsField(client.calls, LEGACY_HOST, since),
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

/** A v1 and a v2 route together, one of them read in both versions; a refused route; what the data plane holds. */
export async function playVersionsAndDataPlane(env: DemoEnvironment, out: Output): Promise<void> {
  await env.apply(...env.service(CANARY_SERVICE), webRoute, canaryRoute);
  const names = ["canary", "web"];
  out.line("");
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

  // What the data plane holds, from the client, and what each server recorded of its clients.
  const want = names.map((n) => objectKey(DEMO_NAMESPACE, n));
  const state = await waitForHeld(env, want);
  const v = state.held.versions;
  out.line("");
  out.line(`data plane (xDS client ${state.node}, from its CSDS):`);
  out.line(
    `  holds: lds=${v.lds ?? "none"} rds=${v.rds ?? "none"} cds=${v.cds ?? "none"} eds=${v.eds ?? "none"}`,
  );
  out.line(`  routes: ${state.held.routes.join(" ")}`);
  // The canary takes 10 %: watched until every backend of the split answered (a
  // few seconds at 5 RPCs a second), bounded, so the line shows the split, not luck.
  const everyBackend = env.backendCount(CHECKOUT_SERVICE) + env.backendCount(CANARY_SERVICE);
  const since = Date.now();
  const calls = await collectCalls(
    env,
    30_000,
    (seen) => backendsReached(seen, LAB_HOST, since).size >= everyBackend,
  );
  const onHost = calls.filter((c) => c.host === LAB_HOST && c.call.at >= since && c.call.ok);
  const reached = [...backendsReached(onHost, LAB_HOST, since)].sort();
  out.line(`  ${LAB_HOST} RPCs answered by: ${reached.join(" ") || "none"} (${onHost.length} RPCs)`);
  for (const r of await env.ackRecords())
    out.line(
      `  server ${r.replica}: serves ${r.served ?? "nothing"}; clients ${r.clients.map((c) => `${c.id}${c.acked ? ` acked ${c.acked}` : " (none acked)"}`).join(", ") || "none"}`,
    );
}

/** Waits (bounded) until the client holds exactly these routes. */
async function waitForHeld(env: DemoEnvironment, routes: readonly string[]) {
  const deadline = Date.now() + STEP_TIMEOUT_MS;
  for (;;) {
    const s = await env.clientState();
    if (s.held.routes.join(" ") === [...routes].sort().join(" ")) return s;
    if (Date.now() > deadline)
      throw new StepFailed(`the client holds [${s.held.routes.join(" ")}], expected [${routes.join(" ")}]`);
    await sleep(POLL_MS);
  }
}

/** The client's calls over `ms`. */
/** The client's calls seen over `ms`, or until `enough` says so. */
async function collectCalls(
  env: DemoEnvironment,
  ms: number,
  enough: (calls: readonly SeenCall[]) => boolean = () => false,
): Promise<readonly SeenCall[]> {
  const w = new CallWatcher(() => env.clientState());
  w.start();
  const deadline = Date.now() + ms;
  while (Date.now() < deadline && !enough(w.calls)) await sleep(200);
  w.stop();
  return w.calls;
}
