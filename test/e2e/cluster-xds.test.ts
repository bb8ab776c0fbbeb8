// The xds sink in a real single-node cluster: the chart installed with its
// default sink (xds) and the plaintext ADS port for proxyless clients; gRPC
// backends as pods behind Services, their EndpointSlices made by the real
// controller; and gRPC's own xDS client (@grpc/grpc-js-xds) on the host, its
// bootstrap pointed at the ADS Service's ClusterIP. What a user would check:
// a route applied → its RPCs reach its backends and it says Programmed; a
// header match and a 90/10 split as declared; the backends scaled up and down
// → RPCs follow with no edit of the route; the route deleted → the client
// stops reaching it before the object is gone, and then it goes.
// Every loop is bounded in count and time.

import { spawn } from "node:child_process";
import path from "node:path";
import type * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify as toYaml } from "yaml";
import { FINALIZER, type EdgeRouteV2, type RouteRule } from "../../src/api/types.js";
import { clusterUnsupported, startCluster, type Cluster } from "../../tools/testenv/cluster.js";
import { buildOperatorImage, type OperatorImage } from "../../tools/testenv/image.js";
import { componentPods, helmInstall, release } from "../../tools/testenv/operator-in-cluster.js";
import { must, waitFor } from "../../tools/testenv/process.js";
import { callEcho, ECHO_METHOD, OTHER_METHOD } from "../xds/echo-backend.js";
import { ECHO_PORT, echoBackend } from "../xds/echo-pods.js";
import { useXdsServer, xdsClient } from "../xds/grpc-xds-client.js";

const unsupported = clusterUnsupported();
if (unsupported && !process.env.CI)
  process.stderr.write(`\n!!! SKIPPING THE XDS-IN-CLUSTER TESTS: ${unsupported} !!!\n\n`);

const rel = release();
const NS = "grpc-echo";
const HOST = "echo.grpc.test";
const ADS_PLAINTEXT_PORT = 18001;
let cluster: Cluster;
let image: OperatorImage;
let client: grpc.Client;

const kubectl = (args: string[], input?: string) =>
  cluster.kubectl(args, input === undefined ? {} : { input });
const applyYaml = (...objects: object[]) =>
  must("kubectl apply", kubectl(["apply", "-f", "-"], objects.map((o) => toYaml(o)).join("---\n")));

async function readRoute(name: string): Promise<EdgeRouteV2 | undefined> {
  const r = await kubectl(["get", "edgeroutes.v2.net.10xdev.io", name, "-n", NS, "-o", "json"]);
  if (r.code !== 0) {
    if (/NotFound|not found/.test(r.stderr)) return undefined;
    throw new Error(`kubectl get edgeroute ${name}: ${r.stderr}`);
  }
  return JSON.parse(r.stdout) as EdgeRouteV2;
}

/** The JSON objects of a stream that holds one after another (kubectl's watch output). */
function jsonObjects(text: string): unknown[] {
  const out: unknown[] = [];
  let depth = 0;
  let start = 0;
  let inString = false;
  let escaped = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (inString) {
      if (escaped) escaped = false;
      else if (ch === "\\") escaped = true;
      else if (ch === '"') inString = false;
    } else if (ch === '"') inString = true;
    else if (ch === "{" && depth++ === 0) start = i;
    else if (ch === "}" && --depth === 0) out.push(JSON.parse(text.slice(start, i + 1)));
  }
  return out;
}

/** The servers' xDS ACK records (the chart's Leases that a server pod holds): its holder Pod, the version served, the versions its clients ACKed. */
async function ackRecords(): Promise<{ holder?: string; served?: string; acked: (string | undefined)[] }[]> {
  const out = await must(
    "kubectl get leases",
    kubectl([
      "get",
      "leases",
      "-n",
      rel.namespace,
      "-l",
      "app.kubernetes.io/component=xds-acks",
      "-o",
      "json",
    ]),
  );
  const list = JSON.parse(out) as {
    items: {
      metadata: { annotations?: Record<string, string> };
      spec?: { holderIdentity?: string };
    }[];
  };
  // A Lease no pod holds is an empty slot, not a record.
  return list.items
    .filter((l) => l.spec?.holderIdentity)
    .map((l) => {
      const record = JSON.parse(l.metadata.annotations?.["net.10xdev.io/xds-acks"] ?? "{}") as {
        served?: string;
        clients?: { acked?: string }[];
      };
      const holder = l.spec?.holderIdentity;
      return {
        ...(holder ? { holder } : {}),
        ...(record.served ? { served: record.served } : {}),
        acked: (record.clients ?? []).map((c) => c.acked),
      };
    });
}

const programmed = (r: EdgeRouteV2 | undefined) =>
  r?.status?.conditions?.find((c) => c.type === "Programmed");

function echoRoute(rules: RouteRule[]): EdgeRouteV2 {
  return {
    apiVersion: "net.10xdev.io/v2",
    kind: "EdgeRoute",
    metadata: { name: "echo", namespace: NS },
    spec: { hostnames: [HOST], rules },
  };
}

const prefix = (value: string, headers?: { name: string; value: string }[]) => ({
  path: { type: "PathPrefix" as const, value },
  ...(headers ? { headers } : {}),
});
const OTHER_TO_BLUE: RouteRule = {
  matches: [prefix("/other.Other")],
  backends: [{ name: "blue", port: ECHO_PORT }],
};

/** Ready, not terminating pods of a backend Deployment, by name. */
async function readyPods(app: string): Promise<string[]> {
  const out = await must(
    "kubectl get pods",
    kubectl(["get", "pods", "-n", NS, "-l", `app=${app}`, "-o", "json"]),
  );
  const list = JSON.parse(out) as {
    items: {
      metadata: { name: string; deletionTimestamp?: string };
      status: { conditions?: { type: string; status: string }[] };
    }[];
  };
  return list.items
    .filter(
      (p) =>
        !p.metadata.deletionTimestamp &&
        p.status.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
    )
    .map((p) => p.metadata.name)
    .sort();
}

async function scale(app: string, replicas: number): Promise<void> {
  await must("kubectl scale", kubectl(["scale", `deployment/${app}`, "-n", NS, `--replicas=${replicas}`]));
}

/** `n` calls, `at once` at a time; each reply's backend or "error CODE". */
async function calls(
  n: number,
  opts: { method?: string; headers?: Record<string, string>; atOnce?: number } = {},
): Promise<string[]> {
  const out: string[] = [];
  const atOnce = opts.atOnce ?? 20;
  for (let i = 0; i < n; i += atOnce) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(atOnce, n - i) }, () =>
        callEcho(client, {
          ...(opts.method ? { method: opts.method } : {}),
          ...(opts.headers ? { headers: opts.headers } : {}),
          deadlineMs: 5_000,
        }),
      ),
    );
    out.push(...batch.map((r) => (r.ok ? r.backend : `error ${r.code}`)));
  }
  return out;
}

/** Calls in batches until a batch's backends are exactly `want` (bounded by `timeoutMs`); answers the batches seen. */
async function until(
  what: string,
  want: (backends: Set<string>) => boolean,
  opts: { method?: string; batch?: number; timeoutMs?: number } = {},
): Promise<string[][]> {
  const seen: string[][] = [];
  const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
  while (Date.now() < deadline) {
    const batch = await calls(opts.batch ?? 40, opts.method ? { method: opts.method } : {});
    seen.push(batch);
    if (want(new Set(batch))) return seen;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(
    `${what}: not within ${opts.timeoutMs ?? 60_000} ms; last batches: ${JSON.stringify(seen.slice(-3))}`,
  );
}

const sameSet = (a: Set<string>, b: readonly string[]) => a.size === b.length && b.every((x) => a.has(x));

describe.skipIf(unsupported !== undefined && !process.env.CI)(
  "the xds sink in a real cluster, with gRPC's own xDS client",
  () => {
    beforeAll(async () => {
      cluster = await startCluster({
        progress: (l) => process.stderr.write(`cluster: ${l}\n`),
        waitForOtherMs: 900_000,
      });
      image = await buildOperatorImage();
      await cluster.ctrImport(image.tar);
      // The default sink (xds) with the chart's default replicas (two servers,
      // two watchers), plus the plaintext ADS port that gRPC's xDS client
      // needs (its bootstrap trusts no private CA). The client lands on either
      // server through the ADS Service; every server serves its own cache's
      // snapshot, and whichever answers /reconcile reads the ACKs from both
      // servers' records.
      await helmInstall(cluster, rel, image, [
        "--set",
        "dataPlane.xds.plaintext.enabled=true",
        "--set",
        "dataPlane.xds.ackTimeout=5s",
      ]);
      if ((await kubectl(["get", "namespace", NS])).code !== 0)
        await must("create namespace", kubectl(["create", "namespace", NS]));
      await applyYaml(...echoBackend("blue", NS, 2, image.ref), ...echoBackend("green", NS, 1, image.ref));
      await must(
        "backends available",
        kubectl(
          [
            "wait",
            "-n",
            NS,
            "--for=condition=Available",
            "deployment/blue",
            "deployment/green",
            "--timeout=180s",
          ],
          undefined,
        ),
      );
      const adsIp = (
        await must(
          "kubectl get svc",
          kubectl([
            "get",
            "svc",
            `${rel.fullname}-ads`,
            "-n",
            rel.namespace,
            "-o",
            "jsonpath={.spec.clusterIP}",
          ]),
        )
      ).trim();
      await useXdsServer(ADS_PLAINTEXT_PORT, "host-client", adsIp);
      client = xdsClient(HOST);
    }, 1_800_000);

    afterAll(async () => {
      client?.close();
      await cluster?.stop();
    }, 120_000);

    it("helm install: the server runs the default sink, xds, behind the ADS Service; no route yet, no RPC served", async () => {
      const [server] = await componentPods(cluster, rel, "server");
      const dep = JSON.parse(
        await must(
          "kubectl get deploy",
          kubectl(["get", "deployment", `${rel.fullname}-server`, "-n", rel.namespace, "-o", "json"]),
        ),
      ) as { spec: { template: { spec: { containers: { args: string[] }[] } } } };
      expect(server?.ready).toBe(true);
      expect(dep.spec.template.spec.containers[0]?.args).toContain("--dataplane=xds");
      // No route for the host yet: the client's calls fail, none reaches a backend.
      const r = await calls(5);
      expect(r.every((x) => x.startsWith("error"))).toBe(true);
    });

    it("a route applied: RPCs reach its backends (both blue pods), and it says Programmed=True/Synced", async () => {
      const blue = await readyPods("blue");
      expect(blue).toHaveLength(2);
      const started = performance.now();
      await applyYaml(
        echoRoute([
          { matches: [prefix("/echo.Echo")], backends: [{ name: "blue", port: ECHO_PORT }] },
          OTHER_TO_BLUE,
        ]),
      );
      const seen = await until("RPCs reach both blue pods", (b) => sameSet(b, blue), { timeoutMs: 60_000 });
      process.stderr.write(
        `route applied → RPCs on both blue pods: ${((performance.now() - started) / 1000).toFixed(1)} s\n`,
      );
      expect(seen.at(-1)?.every((x) => blue.includes(x))).toBe(true);
      const cond = await waitFor(
        "Programmed=True",
        async () => {
          const c = programmed(await readRoute("echo"));
          return c?.status === "True" ? c : undefined;
        },
        30_000,
        250,
      );
      expect(cond.reason).toBe("Synced");
      // Both server pods serve the same snapshot, each from its own cache, and
      // record it in a Lease of their own, one of those the chart made, held
      // by their Pod; the client is on one of them and ACKed it.
      const servers = (await componentPods(cluster, rel, "server")).map((p) => p.name).sort();
      expect(servers).toHaveLength(2);
      const records = await waitFor(
        "an ACK record per server pod, both serving one version, the client's ACK in one",
        async () => {
          const got = await ackRecords();
          const owners = got.map((r) => r.holder).sort();
          const served = new Set(got.map((r) => r.served));
          const acked = got.flatMap((r) => r.acked);
          const same = served.size === 1 && !served.has(undefined);
          return JSON.stringify(owners) === JSON.stringify(servers) && same && acked.includes([...served][0])
            ? got
            : undefined;
        },
        30_000,
        500,
      );
      expect(records.filter((r) => r.acked.length > 0)).toHaveLength(1);
    });

    it("a header match and a 90/10 split route as declared (green 10% ± 4% over 1,000 RPCs)", async () => {
      const [blue, green] = [await readyPods("blue"), await readyPods("green")];
      await applyYaml(
        echoRoute([
          {
            matches: [prefix("/echo.Echo", [{ name: "x-variant", value: "green" }])],
            backends: [{ name: "green", port: ECHO_PORT }],
          },
          {
            matches: [prefix("/echo.Echo")],
            backends: [
              { name: "blue", port: ECHO_PORT, weight: 90 },
              { name: "green", port: ECHO_PORT, weight: 10 },
            ],
          },
          OTHER_TO_BLUE,
        ]),
      );
      // The new version is in once the header reaches green, and it says Programmed again.
      await waitFor(
        "the header match in force",
        async () => {
          const r = await calls(10, { headers: { "x-variant": "green" } });
          return r.every((x) => green.includes(x)) ? true : undefined;
        },
        60_000,
        250,
      );
      const byHeader = await calls(100, { headers: { "x-variant": "green" } });
      expect(new Set(byHeader)).toEqual(new Set(green));
      const other = await calls(100, { headers: { "x-variant": "blue" } });
      expect(other.filter((x) => x.startsWith("error"))).toEqual([]);

      const split = await calls(1000, { atOnce: 50 });
      const toGreen = split.filter((x) => green.includes(x)).length;
      const toBlue = split.filter((x) => blue.includes(x)).length;
      process.stderr.write(`90/10 split over 1,000 RPCs: blue ${toBlue}, green ${toGreen}\n`);
      expect(toBlue + toGreen).toBe(1000);
      // Binomial(1000, 0.1): sd ≈ 9.5, so 60..140 is over four sd either side.
      expect(toGreen).toBeGreaterThanOrEqual(60);
      expect(toGreen).toBeLessThanOrEqual(140);
      await waitFor(
        "Programmed=True for the split",
        async () => (programmed(await readRoute("echo"))?.status === "True" ? true : undefined),
        30_000,
        250,
      );
    });

    it("the blue Deployment scaled up, then down: RPCs follow its pods, with no edit of the route", async () => {
      const generation = (await readRoute("echo"))?.metadata.generation;
      await scale("blue", 3);
      const three = await waitFor(
        "three blue pods Ready",
        async () => {
          const p = await readyPods("blue");
          return p.length === 3 ? p : undefined;
        },
        120_000,
        500,
      );
      const up = performance.now();
      await until("RPCs on all three blue pods", (b) => sameSet(b, three), {
        method: OTHER_METHOD,
        batch: 60,
      });
      process.stderr.write(
        `scaled to 3 → RPCs on the new pod: ${((performance.now() - up) / 1000).toFixed(1)} s\n`,
      );

      // Down to one, calling all the while: the leaving pods keep serving
      // through their preStop sleep while the endpoints and the client's EDS drop them.
      await scale("blue", 1);
      const failures: string[] = [];
      const down = performance.now();
      const seen = await waitFor(
        "RPCs on the one blue pod left",
        async () => {
          const left = await readyPods("blue");
          const batch = await calls(40, { method: OTHER_METHOD });
          failures.push(...batch.filter((x) => x.startsWith("error")));
          return left.length === 1 && sameSet(new Set(batch), left) ? left : undefined;
        },
        90_000,
        200,
      );
      process.stderr.write(
        `scaled to 1 → RPCs on the one pod left: ${((performance.now() - down) / 1000).toFixed(1)} s, ${failures.length} failed RPCs\n`,
      );
      expect(failures).toEqual([]);
      expect((await calls(40, { method: OTHER_METHOD })).every((x) => x === seen[0])).toBe(true);
      expect((await readRoute("echo"))?.metadata.generation).toBe(generation);
    });

    it("the route deleted: the client stops reaching it before the object is gone, and then it goes", async () => {
      expect((await calls(10, { method: ECHO_METHOD })).some((x) => !x.startsWith("error"))).toBe(true);
      // The object's every change, from the apiserver's watch: a read can miss a
      // Terminating that lasts less than a kubectl call, the watch cannot.
      const watch = spawn(
        path.join(cluster.binDir, "kubectl"),
        [
          "get",
          "edgeroutes.v2.net.10xdev.io",
          "echo",
          "-n",
          NS,
          "--watch",
          "--output-watch-events",
          "-o",
          "json",
        ],
        { env: { ...process.env, KUBECONFIG: cluster.kubeconfig }, stdio: ["ignore", "pipe", "ignore"] },
      );
      let events = "";
      watch.stdout.setEncoding("utf8").on("data", (d: string) => (events += d));
      await waitFor(
        "the watch's first event",
        async () => (events.includes('"ADDED"') ? true : undefined),
        30_000,
      );
      const deleted = performance.now();
      await must(
        "kubectl delete",
        kubectl(["delete", "edgeroute.v2.net.10xdev.io", "echo", "-n", NS, "--wait=false"]),
      );
      // Calls and reads side by side: every call that succeeded must have
      // ended before the first read that found the object gone.
      let lastOk = -1;
      let goneAt = -1;
      const deadline = Date.now() + 60_000;
      const caller = (async () => {
        while (goneAt < 0 && Date.now() < deadline) {
          const r = await callEcho(client, { deadlineMs: 2_000 });
          if (r.ok) lastOk = performance.now();
          await new Promise((res) => setTimeout(res, 20));
        }
      })();
      while (goneAt < 0 && Date.now() < deadline) {
        if ((await readRoute("echo")) === undefined) goneAt = performance.now();
        await new Promise((res) => setTimeout(res, 20));
      }
      await caller;
      await waitFor(
        "the watch's DELETED",
        async () => (events.includes('"DELETED"') ? true : undefined),
        30_000,
      );
      watch.kill("SIGTERM");
      const seen = jsonObjects(events) as { type: string; object: EdgeRouteV2 }[];
      // Held by its finalizer: a change that set deletionTimestamp and kept the finalizer, before DELETED.
      const terminatingSeen = seen.some(
        (e) =>
          e.type === "MODIFIED" &&
          e.object.metadata.deletionTimestamp !== undefined &&
          (e.object.metadata.finalizers ?? []).includes(FINALIZER),
      );
      expect(seen.at(-1)?.type).toBe("DELETED");
      expect(goneAt, "the route was not gone within 60 s").toBeGreaterThan(0);
      process.stderr.write(
        `route deleted → last RPC reaching it ${lastOk < 0 ? "before the delete" : `${((lastOk - deleted) / 1000).toFixed(2)} s`}, object gone ${((goneAt - deleted) / 1000).toFixed(2)} s\n`,
      );
      expect(terminatingSeen).toBe(true);
      expect(lastOk).toBeLessThan(goneAt);
      // And from then on, nothing reaches it.
      const after = await calls(20);
      expect(after.every((x) => x.startsWith("error"))).toBe(true);
    });
  },
);
