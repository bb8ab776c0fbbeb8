// `npm run demo` on the real cluster, run as a user runs it (the built demo,
// as a process, with --keep): it starts the cluster, builds and loads the
// images, installs the chart with its defaults (xds, two servers, two
// watchers), prints the lab's lines from gRPC's own xDS client in a pod (what
// it holds, where its RPCs went), in the order the finalizer is for; leaves a
// cluster kubectl can use, on which a server pod deleted under 100 applies
// fails none and the leader watcher deleted leaves every route converging;
// and on Ctrl-C tears it all down: no cluster process is left and the next
// start is free to take the machine.

import { execFileSync, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { clusterUnsupported } from "../../tools/testenv/cluster.js";
import { LOCK_FILE } from "../../tools/testenv/cluster-config.js";
import { run, waitFor, type RunResult } from "../../tools/testenv/process.js";
import { DEMO, LAB_LINES, REST_OF_THE_SHOW, nonEmptyLines } from "../harness/demo-lines.js";

const unsupported = clusterUnsupported();
if (unsupported && !process.env.CI)
  process.stderr.write(`\n!!! SKIPPING THE CLUSTER DEMO TEST: ${unsupported} !!!\n\n`);

/** The cluster's processes: every one runs from the cluster's directories. */
function clusterProcesses(): string[] {
  return execFileSync("ps", ["-eo", "pid=,args="], { encoding: "utf8" })
    .split("\n")
    .filter(
      (l) => /\/(kubelet|containerd|kube-apiserver|kube-proxy|etcd) /.test(l) && l.includes("edge-cluster"),
    );
}

type Kubectl = (args: string[], input?: string) => Promise<RunResult>;

const DRILL_ROUTES = 100;
const drillRoute = (i: number, timeout: string) =>
  JSON.stringify({
    apiVersion: "net.10xdev.io/v2",
    kind: "EdgeRoute",
    metadata: { name: `drill-${i}`, namespace: "default" },
    // On a host the demo's client calls, so Programmed=True needs its ACK.
    spec: {
      hostnames: ["shop.example.com"],
      rules: [
        {
          matches: [{ path: { value: `/drill-${i}` } }],
          backends: [{ name: "checkout", port: 8080 }],
          timeout,
        },
      ],
    },
  });

/** `kubectl apply` of the drill's routes, five at a time; answers the failures' stderr. */
async function applyDrill(
  kubectl: Kubectl,
  timeout: string,
  during?: (done: number) => Promise<void>,
): Promise<string[]> {
  const failures: string[] = [];
  let done = 0;
  let next = 0;
  await Promise.all(
    Array.from({ length: 5 }, async () => {
      while (next < DRILL_ROUTES) {
        const i = next++;
        const r = await kubectl(["apply", "-f", "-"], drillRoute(i, timeout));
        if (r.code !== 0) failures.push(`drill-${i}: ${r.stderr.trim()}`);
        done++;
        if (during) await during(done);
      }
    }),
  );
  return failures;
}

/** Every drill route says Accepted and Programmed for its current generation. */
async function converged(kubectl: Kubectl): Promise<string[]> {
  const r = await kubectl(["get", "edgeroutes.v2.net.10xdev.io", "-n", "default", "-o", "json"]);
  const items = (
    JSON.parse(r.stdout) as {
      items: {
        metadata: { name: string; generation?: number };
        status?: { observedGeneration?: number; conditions?: { type: string; status: string }[] };
      }[];
    }
  ).items;
  return items
    .filter((o) => o.metadata.name.startsWith("drill-"))
    .filter(
      (o) =>
        o.status?.observedGeneration !== o.metadata.generation ||
        !["Accepted", "Programmed"].every((t) =>
          o.status?.conditions?.some((c) => c.type === t && c.status === "True"),
        ),
    )
    .map((o) => o.metadata.name);
}

/** The install's two drills: a server pod deleted under 100 applies, then the leader watcher deleted. */
async function drills(kubectl: Kubectl): Promise<void> {
  const pods = async (component: string) =>
    (
      await kubectl([
        "get",
        "pods",
        "-n",
        "edge-system",
        "-l",
        `app.kubernetes.io/component=${component}`,
        "-o",
        "jsonpath={.items[*].metadata.name}",
      ])
    ).stdout
      .trim()
      .split(/\s+/);
  // A server pod deleted while 100 applies run: the other one answers the webhooks.
  const [server] = await pods("server");
  let deleted = false;
  const failures = await applyDrill(kubectl, "10s", async (done) => {
    if (done >= 10 && !deleted) {
      deleted = true;
      const d = await kubectl(["delete", "pod", "-n", "edge-system", server ?? "", "--wait=false"]);
      expect(d.code, d.stderr).toBe(0);
    }
  });
  expect(deleted).toBe(true);
  expect(failures).toEqual([]);
  await waitFor(
    "the drill's routes converged",
    async () => ((await converged(kubectl)).length === 0 ? true : undefined),
    180_000,
    1_000,
  );

  // The leader watcher deleted: the other takes the Lease, and every route changed since converges.
  const lease = await kubectl([
    "get",
    "lease",
    "-n",
    "edge-system",
    "edge-edge-operator-watcher",
    "-o",
    "jsonpath={.spec.holderIdentity}",
  ]);
  // The holder is the pod's hostname (its name) and a random suffix: HOSTNAME_random.
  const leader = lease.stdout.trim().replace(/_[0-9a-f]+$/, "");
  expect(await pods("watcher")).toContain(leader);
  const d = await kubectl(["delete", "pod", "-n", "edge-system", leader, "--wait=false"]);
  expect(d.code, d.stderr).toBe(0);
  expect(await applyDrill(kubectl, "20s")).toEqual([]);
  await waitFor(
    "every route converged after the leader watcher went",
    async () => ((await converged(kubectl)).length === 0 ? true : undefined),
    180_000,
    1_000,
  );
  const del = await kubectl([
    "delete",
    "edgeroutes.v2.net.10xdev.io",
    "-n",
    "default",
    ...Array.from({ length: DRILL_ROUTES }, (_, i) => `drill-${i}`),
    "--timeout=120s",
  ]);
  expect(del.code, del.stderr).toBe(0);
}

describe.skipIf(unsupported !== undefined && !process.env.CI)("the demo on the real cluster", () => {
  it("plays the lab's lines against the operator in pods, keeps the cluster for kubectl, and Ctrl-C puts it all away", async () => {
    // Take turns with other cluster suites on this machine: one cluster at a time.
    await waitFor(
      "no other cluster on this machine",
      async () => (existsSync(LOCK_FILE) ? undefined : true),
      900_000,
      2000,
    );
    const child = spawn(process.execPath, [DEMO, "--keep"], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString("utf8")));
    child.stderr.on("data", (c: Buffer) => (err += c.toString("utf8")));
    let spawnError: Error | undefined;
    child.on("error", (e) => (spawnError = e));
    const exited = new Promise<number>((resolve) =>
      child.on("exit", (code, sig) => resolve(code ?? (sig ? 128 : 1))),
    );
    try {
      // A demo that fails exits before its KUBECONFIG line: fail then, not after the bound
      // (waitFor retries what throws, so the exit is raced, not thrown from inside it).
      const early = exited.then((code) => {
        throw new Error(`demo exited early (${code}):\n${out}\n${err}`);
      });
      early.catch(() => undefined);
      const kubeconfig = await Promise.race([
        early,
        waitFor(
          "the demo to print its KUBECONFIG",
          async () => {
            if (spawnError) throw new Error(`demo did not start: ${spawnError.message}`);
            if (child.exitCode !== null || child.signalCode !== null) return ""; // `early` has the words
            return /^export KUBECONFIG=(\S+)$/m.exec(out)?.[1];
          },
          1_500_000,
          500,
        ),
      ]);
      const lines = nonEmptyLines(out);
      LAB_LINES.forEach((re, i) => expect(lines[i], out).toMatch(re));
      for (const re of REST_OF_THE_SHOW) expect(out).toMatch(re);
      // Each server pod's ACK record names the client and the version it ACKed.
      expect(out).toMatch(
        /server edge-edge-operator-server-\S+: serves [0-9a-f]+; clients edge-demo-client acked [0-9a-f]+/,
      );
      // The install a user gets: only the local images, the plaintext ADS port and the deprogram timeout set.
      expect(err).toMatch(
        /helm install edge charts\/edge-operator -n edge-system --create-namespace --set-string image\.repository=\S+ --set-string image\.tag=\S+ --set image\.pullPolicy=Never --set dataPlane\.xds\.plaintext\.enabled=true --set server\.deprogramTimeout=15s --wait/,
      );
      // Nothing from the memory sink or a debug route of the server.
      expect(err).not.toMatch(/NO REAL CLUSTER|memory data plane|\/debug\//);
      expect(out).not.toMatch(/memory data plane|\/debug\//);

      // The user's kubectl, with the printed KUBECONFIG: the operator runs in pods.
      const kubectl = /^(\S+\/kubectl) get edgeroutes/m.exec(out)?.[1] ?? "";
      const env = { ...process.env, KUBECONFIG: kubeconfig };
      const pods = await run(kubectl, ["get", "pods", "-n", "edge-system", "-o", "name"], { env });
      expect(pods.code, pods.stderr).toBe(0);
      expect(pods.stdout).toMatch(/pod\/edge-edge-operator-server-/);
      expect(pods.stdout).toMatch(/pod\/edge-edge-operator-watcher-/);
      const routes = await run(kubectl, ["get", "edgeroutes", "-A", "-o", "name"], { env });
      expect(routes.stdout.trim().split("\n").sort()).toEqual([
        "edgeroute.net.10xdev.io/canary",
        "edgeroute.net.10xdev.io/web",
      ]);
      expect(clusterProcesses().length).toBeGreaterThanOrEqual(5);
      expect(pods.stdout.match(/pod\/edge-edge-operator-server-/g)).toHaveLength(2);
      expect(pods.stdout.match(/pod\/edge-edge-operator-watcher-/g)).toHaveLength(2);

      await drills((args, input) => run(kubectl, args, { env, ...(input === undefined ? {} : { input }) }));

      child.kill("SIGINT");
      expect(await exited, err).toBe(0);
      expect(err).toMatch(/SIGINT: tearing down/);
      expect(clusterProcesses()).toEqual([]);
      expect(existsSync(LOCK_FILE)).toBe(false);
      expect(existsSync(path.dirname(kubeconfig))).toBe(false);
    } finally {
      if (child.exitCode === null) {
        child.kill("SIGINT");
        await Promise.race([exited, new Promise((r) => setTimeout(r, 120_000))]);
      }
    }
  }, 1_800_000);
});
