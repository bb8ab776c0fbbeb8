// A change's way to the data plane, on the real control plane, at each route
// count: the test control plane, `serve --dataplane xds` and the watcher as
// processes, and in this process an Envoy-like ADS client that ACKs every
// response as it arrives and a watch on the routes. Three loads, in order:
//  - single creates spaced past the max hold-off (each comes after a quiet
//    spell: the leading edge), each timed from its POST to the watch seeing it
//    ADDED (the floor), to the client holding it (ACKed at once), and to the
//    watch seeing it Programmed=True; and from the ACK to Programmed;
//  - a burst of creates, 16 in flight: route-configuration pushes the client
//    got and snapshot builds until every one is Programmed, and the time;
//  - steady churn (creates at a fixed rate): builds per second, and each
//    change's wait from POST to ACKed and to Programmed.
//
// With --quarantine, after the singles one route the client refuses is
// created (the client NACKs any route configuration that holds it, as Envoy
// refuses a whole configuration); once the server holds it back
// (Accepted=False/Rejected) the singles run again beside it, and both are
// printed with their ratio.
//
// npm run bench:latency [-- --routes 1000,10000 --singles 20 --burst 1000
//   --churn-rate 50 --churn-seconds 60 --serve-args="--xds-busy-push-interval 500ms"
//   --quiet-conversions --quarantine]
// CPU_PROF_DIR: write `serve`'s CPU profiles there, one per phase
// (serve-PID-1: start and the routes already there, -2: the singles, -3: the
// burst, -4: the churn; serve-PID: the rest).

import { mkdirSync } from "node:fs";
import os from "node:os";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { TYPE_URL } from "../src/envoy/envoy-resources.js";
import { decodeResource } from "../src/dataplane/xds/proto-codec.js";
import type { KubeClient } from "../src/kube/client.js";
import { startControlPlane } from "../tools/testenv/control-plane.js";
import { httpsJson } from "../tools/testenv/https-json.js";
import { freePort } from "../tools/testenv/process.js";
import { fileURLToPath } from "node:url";
import { operatorRole, pidsOf } from "./process-cpu.js";
import { startOperatorStack, type OperatorStack } from "../test/harness/operator-stack.js";
import { adsClient, sotwStream } from "../test/xds/raw-ads-client.js";
import { fmt, summarize } from "./stats.js";
import { untilFlat } from "./until-flat.js";
import { byLabel, counterSeries } from "./metrics-text.js";
import { eachConcurrently } from "../src/kube/each-concurrently.js";

const indices = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

const { values } = parseArgs({
  options: {
    routes: { type: "string", default: "1000,10000" },
    singles: { type: "string", default: "20" },
    burst: { type: "string", default: "1000" },
    "churn-rate": { type: "string", default: "50" },
    "churn-seconds": { type: "string", default: "60" },
    // More flags for serve, split on spaces (e.g. "--xds-busy-push-interval 500ms").
    "serve-args": { type: "string", default: "" },
    // Before the singles, wait until serve has had no /convert call for 10 s (at most 3 min).
    "quiet-conversions": { type: "boolean", default: false },
    quarantine: { type: "boolean", default: false },
  },
});
const SIZES = values.routes.split(",").map(Number);
const SINGLES = Number(values.singles);
const BURST = Number(values.burst);
const CHURN_RATE = Number(values["churn-rate"]);
const CHURN_SECONDS = Number(values["churn-seconds"]);
const QUIET_CONVERSIONS = values["quiet-conversions"];
const QUARANTINE = values.quarantine;
/** The route the Envoy-like client refuses, by its name in a route configuration's bytes. */
const REFUSED = "quarantined";
const NS = "bench";
const ROUTES = `/apis/net.10xdev.io/v2/namespaces/${NS}/edgeroutes`;
const WAIT_MS = 180_000;
const CPU_PROF_DIR = process.env.CPU_PROF_DIR;
if (CPU_PROF_DIR) mkdirSync(CPU_PROF_DIR, { recursive: true });
/** Ends serve's CPU profile of the phase that just ended (bench/cpu-profile-preload.mjs). */
const cutProfile = (): void => {
  if (CPU_PROF_DIR) for (const pid of pidsOf(operatorRole, "serve")) process.kill(pid, "SIGUSR2");
};
/** Past the watcher's max hold-off (1 s): each single comes after a quiet spell. */
const SINGLE_SPACING_MS = 1500;

function route(name: string, i: number) {
  return {
    apiVersion: "net.10xdev.io/v2",
    kind: "EdgeRoute",
    metadata: { name, namespace: NS },
    spec: {
      hostnames: [`h${i % 10}.example.com`],
      rules: [
        {
          matches: [{ path: { type: "PathPrefix", value: `/${name}` } }],
          backends: [{ name: "checkout", port: 8080 }],
        },
      ],
    },
  };
}

/** What this process saw, by route name: when, from the POST's clock. */
class Seen {
  readonly added = new Map<string, number>();
  readonly programmed = new Map<string, number>();
  readonly byClient = new Map<string, number>();
  /** Routes whose status says they are held back for a client's refusal (Accepted=False/Rejected). */
  readonly held = new Set<string>();
  /** When each route-configuration response reached the client. */
  readonly pushes: number[] = [];
  /** Responses of any type the client took. */
  responses = 0;
}

interface WatchEvent {
  type: string;
  object: {
    metadata?: { name?: string; resourceVersion?: string };
    status?: { conditions?: { type: string; status: string; reason?: string }[] };
  };
}

/**
 * Every route event, for the whole bench. The apiserver may end a watch (its
 * timeout, or a consumer too slow for its cache's buffer, as this process is
 * while it decodes 10,000-route configurations): it is resumed from the last
 * resourceVersion, and after a 410 from a fresh list, so no Programmed is
 * missed. Each resumption is told on stderr.
 */
async function watchRoutes(kube: KubeClient, seen: Seen, signal: AbortSignal): Promise<void> {
  let rv: string | undefined;
  const take = (obj: WatchEvent["object"], type: string, at: number): void => {
    const name = obj.metadata?.name;
    if (name === undefined) return;
    if (type === "ADDED" && !seen.added.has(name)) seen.added.set(name, at);
    const ok = obj.status?.conditions?.some((c) => c.type === "Programmed" && c.status === "True");
    if (ok && !seen.programmed.has(name)) seen.programmed.set(name, at);
    if (obj.status?.conditions?.some((c) => c.type === "Accepted" && c.reason === "Rejected"))
      seen.held.add(name);
  };
  const relist = async (): Promise<void> => {
    const list = await kube.json<{ metadata: { resourceVersion: string }; items: WatchEvent["object"][] }>(
      "GET",
      ROUTES,
      { signal },
    );
    for (const obj of list.items) take(obj, "LISTED", performance.now());
    rv = list.metadata.resourceVersion;
  };
  const once = async (): Promise<void> => {
    const query: Record<string, string | boolean> = { watch: true, allowWatchBookmarks: true };
    if (rv !== undefined) query.resourceVersion = rv;
    const res = await kube.stream(ROUTES, { query, signal, timeoutMs: 3_600_000 });
    let buf = "";
    res.setEncoding("utf8");
    let gone = false;
    await new Promise<void>((resolve) => {
      res.on("data", (chunk: string) => {
        const at = performance.now();
        buf += chunk;
        for (let nl = buf.indexOf("\n"); nl >= 0; nl = buf.indexOf("\n")) {
          const ev = JSON.parse(buf.slice(0, nl)) as WatchEvent;
          buf = buf.slice(nl + 1);
          if (ev.type === "ERROR") {
            gone = true;
            continue;
          }
          rv = ev.object.metadata?.resourceVersion ?? rv;
          if (ev.type !== "BOOKMARK") take(ev.object, ev.type, at);
        }
      });
      res.on("error", () => resolve());
      res.on("end", () => resolve());
      res.on("close", () => resolve());
    });
    if (gone) await relist();
  };
  await relist();
  void (async () => {
    for (let n = 1; n <= 1000 && !signal.aborted; n++) {
      await once().catch((err: unknown) => {
        if (!signal.aborted) process.stderr.write(`routes watch: ${String(err)}\n`);
      });
      if (signal.aborted) return;
      process.stderr.write(`routes watch ended (${n}); resuming from resourceVersion ${rv}\n`);
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
}

/** A route's name as the translation gives it (`namespace/name...`) in a RouteConfiguration's bytes. */
const ROUTE_NAME = new RegExp(`${NS}/([a-z0-9.-]+)`, "g");

/** An ADS client as Envoy runs one: CDS and LDS wildcards, RDS "edge", EDS for the clusters; ACKs at once. */
function envoyLike(port: number, seen: Seen): () => void {
  const client = adsClient(port);
  const s = sotwStream(client);
  let clusters: string[] = [];
  let stop = false;
  s.send({ node: { id: "bench-envoy" }, type_url: TYPE_URL.cluster });
  s.send({ type_url: TYPE_URL.listener });
  s.send({ type_url: TYPE_URL.routeConfiguration, resource_names: ["edge"] });
  s.call.on("error", (err: Error) => process.stderr.write(`ADS stream error: ${err.message}\n`));
  s.call.on("end", () => process.stderr.write("ADS stream ended\n"));
  void (async () => {
    while (!stop) {
      const r = await s.next(600_000).catch((err: unknown) => {
        process.stderr.write(`ADS client stopped: ${String(err)}\n`);
        return undefined;
      });
      if (r === undefined) return;
      seen.responses++;
      const m = r.message;
      const at = performance.now();
      if (m.type_url === TYPE_URL.cluster) {
        clusters = m.resources.map((x) => decodeResource(x).name as string);
        s.send({ type_url: m.type_url, response_nonce: m.nonce });
        s.send({ type_url: TYPE_URL.clusterLoadAssignment, resource_names: clusters });
        continue;
      }
      const names =
        m.type_url === TYPE_URL.routeConfiguration
          ? ["edge"]
          : m.type_url === TYPE_URL.clusterLoadAssignment
            ? clusters
            : [];
      // As Envoy refuses a whole route configuration for one bad route: this client, REFUSED's.
      const refused =
        QUARANTINE &&
        m.type_url === TYPE_URL.routeConfiguration &&
        m.resources.some((res) =>
          Buffer.from(res.value.buffer, res.value.byteOffset, res.value.byteLength)
            .toString("latin1")
            .includes(`${NS}/${REFUSED}/`),
        );
      s.send({
        type_url: m.type_url,
        response_nonce: m.nonce,
        resource_names: names,
        ...(refused
          ? {
              error_detail: {
                code: 3,
                message: "Proto constraint validation failed: a route this client refuses",
              },
            }
          : {}),
      });
      if (refused || m.type_url !== TYPE_URL.routeConfiguration) continue;
      seen.pushes.push(at);
      // Route names read straight from the bytes: decoding 10,000 routes to JSON held
      // this process for a few hundred milliseconds after each push, and the watch
      // events behind it (Programmed) were timed that much late.
      for (const res of m.resources) {
        const text = Buffer.from(res.value.buffer, res.value.byteOffset, res.value.byteLength).toString(
          "latin1",
        );
        for (const [, name] of text.matchAll(ROUTE_NAME))
          if (name !== undefined && !seen.byClient.has(name)) seen.byClient.set(name, at);
      }
    }
  })();
  return () => {
    stop = true;
    s.end();
    client.close();
  };
}

async function until(what: string, ok: () => boolean, ms = WAIT_MS): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

/** The server's counter `name` so far (its /metrics), summed by the value of `label`. */
async function counters(stack: OperatorStack, name: string, label = "route"): Promise<Map<string, number>> {
  const r = await httpsJson(`${stack.serve.url}/metrics`, stack.serve.caPem, "GET");
  return byLabel(counterSeries(String(r.body), [name]), label);
}

/** The server's snapshot builds so far. */
async function builds(stack: OperatorStack): Promise<number> {
  let sum = 0;
  for (const n of (await counters(stack, "edge_operator_snapshot_builds_total")).values()) sum += n;
  return sum;
}

/** The serve loop's timings, as histograms: a change's hold before its build, the build, the push to the clients' answers. */
const LOOP_HISTOGRAMS = [
  ["held", "edge_operator_snapshot_hold_seconds"],
  ["build", "edge_operator_snapshot_build_seconds"],
  ["push", "edge_operator_dataplane_push_duration_seconds"],
] as const;
type LoopCounts = Map<string, Map<string, number>>;

/** Each loop histogram's cumulative bucket counts so far, by `le` (all results together). */
async function loopHistograms(stack: OperatorStack): Promise<LoopCounts> {
  const r = await httpsJson(`${stack.serve.url}/metrics`, stack.serve.caPem, "GET");
  const text = String(r.body);
  const out: LoopCounts = new Map();
  for (const [label, name] of LOOP_HISTOGRAMS) {
    const buckets = byLabel(counterSeries(text, [`${name}_bucket`]), "le");
    buckets.set("sum", byLabel(counterSeries(text, [`${name}_sum`]), "le").get("") ?? 0);
    out.set(label, buckets);
  }
  return out;
}

/** Per histogram since `before`: how many, the mean, and the least bucket bound that holds them all. */
function describeLoop(after: LoopCounts, before: LoopCounts): string {
  return LOOP_HISTOGRAMS.map(([label]) => {
    const a = after.get(label) ?? new Map<string, number>();
    const b = before.get(label) ?? new Map<string, number>();
    const since = (le: string): number => (a.get(le) ?? 0) - (b.get(le) ?? 0);
    const n = since("+Inf");
    if (n === 0) return `${label}: none`;
    const bounds = [...a.keys()]
      .filter((le) => le !== "sum" && le !== "+Inf")
      .sort((x, y) => Number(x) - Number(y));
    const all = bounds.find((le) => since(le) === n) ?? "+Inf";
    return `${label}: ${n}, mean ${ms((since("sum") / n) * 1000)} ms, all ≤ ${all === "+Inf" ? all : ms(Number(all) * 1000)} ms`;
  }).join("; ");
}

/** The server's HTTP requests by route since `before`, as "route N, ...". */
async function requestsSince(stack: OperatorStack, before: Map<string, number>): Promise<string> {
  const now = await counters(stack, "edge_operator_http_request_duration_seconds_count");
  return [...now]
    .map(([route, n]) => `${route} ${n - (before.get(route) ?? 0)}`)
    .filter((x) => !x.endsWith(" 0"))
    .join(", ");
}

const load = (): string =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");
const ms = (n: number): string => fmt(n, 1);

async function runSize(size: number): Promise<void> {
  const cp = await startControlPlane();
  const adsPort = await freePort();
  const watcherMetrics = await freePort();
  process.stderr.write(`watcher metrics: http://127.0.0.1:${watcherMetrics}/metrics\n`);
  const stack = await startOperatorStack(cp, {
    storageVersion: "v2",
    serveArgs: [
      "--dataplane",
      "xds",
      "--xds-listen",
      `127.0.0.1:${adsPort}`,
      "--xds-plaintext",
      ...values["serve-args"].split(" ").filter((a) => a !== ""),
    ],
    watchArgs: ["--no-leader-elect", "--resync", "0", "--metrics-listen", `127.0.0.1:${watcherMetrics}`],
    ...(CPU_PROF_DIR
      ? {
          serveEnv: {
            CPU_PROF_DIR,
            NODE_OPTIONS: `--import ${fileURLToPath(new URL("./cpu-profile-preload.mjs", import.meta.url))}`,
          },
        }
      : {}),
  });
  const kube = cp.kube();
  const abort = new AbortController();
  const seen = new Seen();
  const stopClient = envoyLike(adsPort, seen);
  const out = (line: string): boolean => process.stdout.write(`[${size} routes] ${line}\n`);
  try {
    await kube.json("POST", "/api/v1/namespaces", { body: { metadata: { name: NS } } });
    await kube.json("POST", `/api/v1/namespaces/${NS}/services`, {
      body: { metadata: { name: "checkout" }, spec: { ports: [{ name: "http", port: 8080 }] } },
    });
    await watchRoutes(kube, seen, abort.signal);
    const post = async (name: string, i: number): Promise<number> => {
      const t0 = performance.now();
      await kube.json("POST", ROUTES, { body: route(name, i), timeoutMs: WAIT_MS });
      return t0;
    };

    /** SINGLES creates after quiet spells, each timed; prints them and answers the p50s. */
    const singles = async (prefix: string): Promise<{ acked: number; programmed: number }> => {
      const requestsBefore = await counters(stack, "edge_operator_http_request_duration_seconds_count");
      const floor: number[] = [];
      const acked: number[] = [];
      const programmed: number[] = [];
      const ackToProgrammed: number[] = [];
      for (let i = 0; i < SINGLES; i++) {
        const name = `${prefix}-${i}`;
        const t0 = await post(name, i);
        await until(`${name} Programmed`, () => seen.programmed.has(name) && seen.byClient.has(name)).catch(
          async (err: unknown) => {
            const r = await kube.json("GET", `${ROUTES}/${name}`);
            throw new Error(
              `${String(err)}; watch ADDED ${seen.added.has(name)}, client ${seen.byClient.has(name)}, Programmed ${seen.programmed.has(name)}; the route: ${JSON.stringify(r)}`,
            );
          },
        );
        const [w, c, p] = [seen.added, seen.byClient, seen.programmed].map((m) => m.get(name) as number);
        floor.push((w as number) - t0);
        acked.push((c as number) - t0);
        programmed.push((p as number) - t0);
        ackToProgrammed.push((p as number) - (c as number));
        await new Promise((r) => setTimeout(r, SINGLE_SPACING_MS));
      }
      const [f, a, p, ap] = [floor, acked, programmed, ackToProgrammed].map(summarize);
      out(`singles (${SINGLES}, ${SINGLE_SPACING_MS} ms apart, ${prefix}); load ${load()}`);
      out(`  applied → watch event (floor): p50 ${ms(f!.p50)} p99 ${ms(f!.p99)} ms`);
      out(
        `  applied → ACKed:      p50 ${ms(a!.p50)} p99 ${ms(a!.p99)} ms (floor + ${ms(a!.p50 - f!.p50)} / + ${ms(a!.p99 - f!.p99)})`,
      );
      out(
        `  applied → Programmed: p50 ${ms(p!.p50)} p99 ${ms(p!.p99)} ms (floor + ${ms(p!.p50 - f!.p50)} / + ${ms(p!.p99 - f!.p99)})`,
      );
      out(`  ACKed → Programmed:   p50 ${ms(ap!.p50)} p99 ${ms(ap!.p99)} ms`);
      out(`  server requests: ${await requestsSince(stack, requestsBefore)}`);
      out(`  applied → ACKed, in order: ${acked.map((x) => fmt(x, 0)).join(" ")}`);
      return { acked: a!.p50, programmed: p!.p50 };
    };

    // The routes already there.
    let t = performance.now();
    await eachConcurrently(indices(size), 16, (i) => post(`pre-${i}`, i));
    let said = performance.now();
    await until("every route Programmed", () => {
      if (performance.now() - said > 10_000) {
        said = performance.now();
        out(
          `  ${fmt((said - t) / 1000, 0)} s: ${seen.programmed.size} Programmed, ${seen.byClient.size} held by the client, ${seen.responses} responses`,
        );
      }
      return seen.programmed.size >= size;
    });
    out(`created ${size} and all Programmed in ${fmt((performance.now() - t) / 1000, 1)} s; load ${load()}`);
    await new Promise((r) => setTimeout(r, 3000));
    // The apiserver's v1 watch cache has serve convert the creates' objects a
    // while after they are done (about 17,000 calls over 25 s at 10,000
    // routes): the singles wait for that to end, so they time the operator.
    const quiet = async (): Promise<void> => {
      if (!QUIET_CONVERSIONS) return;
      const calls = async () =>
        (await counters(stack, "edge_operator_http_request_duration_seconds_count")).get("/convert") ?? 0;
      const { seconds, moved } = await untilFlat(calls, 10_000, 180_000);
      out(`waited ${fmt(seconds, 1)} s for /convert to be quiet 10 s (${moved} calls meanwhile)`);
    };
    await quiet();

    // Single changes after quiet spells.
    cutProfile();
    const first = await singles("single");
    if (QUARANTINE) {
      await post(REFUSED, 0);
      await until(`${REFUSED} held back`, () => seen.held.has(REFUSED), 60_000);
      out(`${REFUSED}: held back (Accepted=False/Rejected); the singles again beside it`);
      await quiet();
      await new Promise((r) => setTimeout(r, SINGLE_SPACING_MS));
      const beside = await singles("single-q");
      out(
        `  with a held route / without, p50: applied → ACKed ${fmt(beside.acked / first.acked, 3)}, applied → Programmed ${fmt(beside.programmed / first.programmed, 3)}`,
      );
    }

    // A burst of creates.
    cutProfile();
    await new Promise((r) => setTimeout(r, 2000));
    let buildsBefore = await builds(stack);
    t = performance.now();
    await eachConcurrently(indices(BURST), 16, (i) => post(`burst-${i}`, i));
    const posted = performance.now() - t;
    await until("the burst Programmed", () =>
      Array.from({ length: BURST }, (_, i) => `burst-${i}`).every((n) => seen.programmed.has(n)),
    );
    const lastProgrammed = Math.max(
      ...Array.from({ length: BURST }, (_, i) => seen.programmed.get(`burst-${i}`) as number),
    );
    const lastAcked = Math.max(
      ...Array.from({ length: BURST }, (_, i) => seen.byClient.get(`burst-${i}`) ?? 0),
    );
    const burstPushes = seen.pushes.filter((x) => x >= t && x <= lastAcked).length;
    out(
      `burst of ${BURST} creates (16 in flight, posted in ${fmt(posted / 1000, 2)} s): all ACKed ${fmt((lastAcked - t) / 1000, 2)} s, all Programmed ${fmt((lastProgrammed - t) / 1000, 2)} s after the first POST; ${burstPushes} route-configuration pushes, ${(await builds(stack)) - buildsBefore} snapshot builds; load ${load()}`,
    );

    // Steady churn.
    cutProfile();
    await new Promise((r) => setTimeout(r, 2000));
    const pushesBefore = seen.pushes.length;
    buildsBefore = await builds(stack);
    const loopBefore = await loopHistograms(stack);
    const n = CHURN_RATE * CHURN_SECONDS;
    const starts = new Map<string, number>();
    const failed: string[] = [];
    t = performance.now();
    const inFlight: Promise<void>[] = [];
    for (let i = 0; i < n; i++) {
      const due = t + (i * 1000) / CHURN_RATE;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const name = `churn-${i}`;
      starts.set(name, performance.now());
      inFlight.push(
        post(name, i).then(
          () => undefined,
          (err: unknown) => {
            // A refused create is a finding, not the end of the run: counted and printed.
            starts.delete(name);
            failed.push(err instanceof Error ? err.message : String(err));
          },
        ),
      );
      if (inFlight.length >= 64) await Promise.all(inFlight.splice(0, 32));
    }
    await Promise.all(inFlight);
    const churnEnd = performance.now();
    const churnBuilds = (await builds(stack)) - buildsBefore;
    const loop = describeLoop(await loopHistograms(stack), loopBefore);
    await until("the churn Programmed", () => [...starts.keys()].every((k) => seen.programmed.has(k)));
    const toWatch: number[] = [];
    const toAck: number[] = [];
    const watchToAck: number[] = [];
    const toProgrammed: number[] = [];
    for (const [name, t0] of starts) {
      const [w, c, p] = [seen.added, seen.byClient, seen.programmed].map((m) => m.get(name) as number);
      toWatch.push((w as number) - t0);
      toAck.push((c as number) - t0);
      watchToAck.push((c as number) - (w as number));
      toProgrammed.push((p as number) - t0);
    }
    // The longest the client went without a route configuration while the churn ran.
    const churnPushes = seen.pushes.filter((x) => x >= t && x <= churnEnd);
    const gaps = churnPushes.slice(1).map((x, i) => x - (churnPushes[i] as number));
    const [cw, ca, cwa, cpr] = [toWatch, toAck, watchToAck, toProgrammed].map(summarize);
    const secs = (churnEnd - t) / 1000;
    out(
      `churn: ${n} creates at ${CHURN_RATE}/s over ${fmt(secs, 1)} s: ${fmt(churnBuilds / secs, 2)} snapshot builds/s, ${fmt((seen.pushes.length - pushesBefore) / secs, 2)} route-configuration pushes/s; load ${load()}`,
    );
    if (failed.length > 0) out(`  ${failed.length} creates failed; the first: ${failed[0]}`);
    out(`  applied → watch event (floor): p50 ${ms(cw!.p50)} p99 ${ms(cw!.p99)} max ${ms(cw!.max)} ms`);
    out(`  applied → ACKed:      p50 ${ms(ca!.p50)} p99 ${ms(ca!.p99)} max ${ms(ca!.max)} ms`);
    out(`  watch event → ACKed:  p50 ${ms(cwa!.p50)} p99 ${ms(cwa!.p99)} max ${ms(cwa!.max)} ms`);
    out(`  longest gap between route-configuration pushes: ${ms(Math.max(0, ...gaps))} ms`);
    // Where a change's wait goes in serve (its cache, then the build that takes it, then the push).
    out(`  serve over the churn: ${loop}`);
    out(`  applied → Programmed: p50 ${ms(cpr!.p50)} p99 ${ms(cpr!.p99)} max ${ms(cpr!.max)} ms`);
  } finally {
    abort.abort();
    stopClient();
    await stack.stop();
    await cp.stop();
  }
}

process.stdout.write(
  `# bench:latency on ${os.cpus().length} cores, node ${process.version}, load ${load()}\n`,
);
for (const size of SIZES) await runSize(size);
setTimeout(() => process.exit(0), 200).unref();
