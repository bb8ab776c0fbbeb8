// Fault suite, part 3: `helm uninstall` with the server down entirely.
//
// Routes get their finalizer while the server runs (the chart installed out of
// cluster, the server on the host as the chart's ServiceAccount). Then the
// server is stopped, and the release is moved in cluster (`helm upgrade`
// without urlOverride): its webhooks now name a Service whose pods never run
// (this control plane has no kubelet), so every webhook and conversion call
// fails, as when the server's pods are all down. `helm uninstall` then runs the
// chart's pre-delete Job; with no kubelet, the test does what the Job
// controller and the kubelet would: it runs the Job's container command as
// the Job's ServiceAccount and marks the Job complete. No route may be left
// behind a finalizer.

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as fromYaml, stringify as toYaml } from "yaml";
import { FINALIZER, type EdgeRouteV2 } from "../../src/api/types.js";
import { startControlPlane } from "../harness/control-plane.js";
import type { ControlPlane, RunResult } from "../../tools/testenv/control-plane.js";
import { summaryLine } from "../harness/fault-checks.js";
import { CLI, startServe, type ServeProcess } from "../../tools/testenv/operator.js";
import { freePort, run, waitFor } from "../../tools/testenv/process.js";
import { REPO_ROOT } from "../../tools/testenv/testbin.js";
import { v1Route, v2Route, service } from "./routes.js";

const CHART = path.join(REPO_ROOT, "charts/edge-operator");
const NS = "edge-system";
const RELEASE = "edge";
const FULLNAME = "edge-edge-operator";
const APPS = "shop";
const JOB = `${FULLNAME}-release-finalizers`;

let cp: ControlPlane;
let dir: string;
let serve: ServeProcess | undefined;

const explain = (r: RunResult): string => `exit ${r.code}\n${r.stderr}${r.stdout}`;

async function must(what: string, p: Promise<RunResult>): Promise<string> {
  const r = await p;
  if (r.code !== 0) throw new Error(`${what} failed: ${explain(r)}`);
  return r.stdout;
}

/** A kubeconfig for the admin's cluster that authenticates as ServiceAccount `sa` alone. */
async function tokenKubeconfig(sa: string): Promise<string> {
  const token = (await must(`create token ${sa}`, cp.kubectl(["create", "token", sa, "-n", NS]))).trim();
  const admin = fromYaml(readFileSync(cp.kubeconfig, "utf8")) as { clusters: { cluster: unknown }[] };
  const file = path.join(dir, `${sa}.kubeconfig`);
  writeFileSync(
    file,
    toYaml({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "c", cluster: admin.clusters[0]?.cluster }],
      users: [{ name: sa, user: { token } }],
      contexts: [{ name: sa, context: { cluster: "c", user: sa, namespace: NS } }],
      "current-context": sa,
    }),
  );
  return file;
}

async function routes(): Promise<EdgeRouteV2[]> {
  // v1, the storage version: with the server down a v2 read would need /convert.
  const out = await must(
    "get routes",
    cp.kubectl(["get", "edgeroutes.v1.net.10xdev.io", "-A", "-o", "json"]),
  );
  return (JSON.parse(out) as { items: EdgeRouteV2[] }).items;
}

interface JobView {
  metadata: { name: string; uid: string };
  spec: {
    template: {
      spec: {
        serviceAccountName: string;
        containers: { args: string[]; env?: { name: string; value?: string }[] }[];
      };
    };
  };
}

/**
 * What the Job controller and the kubelet would do for the hook: run the
 * container's command (the image's entrypoint is `node dist/src/cli/main.js`)
 * with the Job's ServiceAccount, then record the outcome in the Job's status.
 */
async function runHookJob(): Promise<RunResult> {
  const job = await waitFor(
    `the pre-delete Job ${JOB}`,
    async () => {
      const r = await cp.kubectl(["get", "job", JOB, "-n", NS, "-o", "json"]);
      return r.code === 0 ? (JSON.parse(r.stdout) as JobView) : undefined;
    },
    60_000,
    200,
  );
  const pod = job.spec.template.spec;
  const container = pod.containers[0];
  if (!container) throw new Error("the Job has no container");
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    KUBECONFIG: await tokenKubeconfig(pod.serviceAccountName),
  };
  for (const e of container.env ?? []) if (e.value !== undefined) env[e.name] = e.value;
  const result = await run(process.execPath, [CLI, ...container.args], { env });
  const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  const conditions =
    result.code === 0
      ? [
          { type: "SuccessCriteriaMet", status: "True", lastTransitionTime: now, lastProbeTime: now },
          { type: "Complete", status: "True", lastTransitionTime: now, lastProbeTime: now },
        ]
      : [
          {
            type: "FailureTarget",
            status: "True",
            reason: "BackoffLimitExceeded",
            lastTransitionTime: now,
            lastProbeTime: now,
          },
          {
            type: "Failed",
            status: "True",
            reason: "BackoffLimitExceeded",
            lastTransitionTime: now,
            lastProbeTime: now,
          },
        ];
  const status =
    result.code === 0
      ? { startTime: now, completionTime: now, succeeded: 1, ready: 0, terminating: 0, conditions }
      : { startTime: now, failed: 1, ready: 0, terminating: 0, conditions };
  await must(
    "mark the Job done",
    cp.kubectl([
      "patch",
      "job",
      JOB,
      "-n",
      NS,
      "--subresource=status",
      "--type=merge",
      "-p",
      JSON.stringify({ status }),
    ]),
  );
  return result;
}

beforeAll(async () => {
  // The control plane finds a Service's webhook through its endpoints
  // (--enable-aggregator-routing, on in every test control plane): with none,
  // it fails at once and dials nothing.
  cp = await startControlPlane();
  dir = mkdtempSync(path.join(os.tmpdir(), "edge-faults-uninstall-"));
});

afterAll(async () => {
  await serve?.stop();
  await cp?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("helm uninstall with the server down entirely", () => {
  it("leaves no EdgeRoute behind a finalizer: the hook reads at the storage version and the webhooks let the operator's release through", async () => {
    // Installed out of cluster, the server running as the chart's ServiceAccount.
    const certDir = path.join(dir, "certs");
    await must(
      "edge-operator certs",
      run(process.execPath, [CLI, "certs", "--ip", "127.0.0.1", "--dns", "localhost", "--out", certDir]),
    );
    const caPem = readFileSync(path.join(certDir, "ca.crt"), "utf8");
    const port = await freePort();
    await must(
      "helm install",
      cp.helm([
        "install",
        RELEASE,
        CHART,
        "-n",
        NS,
        "--create-namespace",
        "--set",
        `webhook.urlOverride=https://127.0.0.1:${port}`,
        "--set",
        `webhook.caBundle=${Buffer.from(caPem).toString("base64")}`,
        // Storage on v1 (an install from before v2 became the default): routes
        // written in v2 are then stored converted, the harder case for a release with the server down.
        "--set",
        "crd.storageVersion=v1",
      ]),
    );
    await must(
      "wait crd",
      cp.kubectl(["wait", "--for=condition=Established", "crd/edgeroutes.net.10xdev.io"]),
    );
    serve = await startServe({
      port,
      tls: { caPem, certFile: path.join(certDir, "tls.crt"), keyFile: path.join(certDir, "tls.key") },
      args: ["--kubeconfig", await tokenKubeconfig(`${FULLNAME}-server`), "--dataplane", "memory"],
    });

    // Routes in both versions get the finalizer from /mutate; some are then
    // deleted, and with no watcher to deprogram them they stay Terminating.
    await must("namespace", cp.kubectl(["create", "namespace", APPS]));
    const objects: object[] = [service("checkout", APPS)];
    for (let i = 0; i < 10; i++) objects.push(v1Route(`v1-${i}`, { namespace: APPS, path: `/v1/${i}` }));
    for (let i = 0; i < 10; i++) objects.push(v2Route(`v2-${i}`, { namespace: APPS, path: `/v2/${i}` }));
    await waitFor("the webhooks to admit routes", async () => {
      const r = await cp.kubectl(["apply", "-f", "-"], {
        input: objects.map((o) => toYaml(o)).join("---\n"),
      });
      return r.code === 0 ? true : undefined;
    });
    await must(
      "delete some",
      cp.kubectl([
        "delete",
        "edgeroutes.v1.net.10xdev.io",
        "-n",
        APPS,
        "v1-0",
        "v1-1",
        "v2-0",
        "v2-1",
        "--wait=false",
      ]),
    );
    const before = await routes();
    expect(before).toHaveLength(20);
    expect(before.every((r) => r.metadata.finalizers?.includes(FINALIZER))).toBe(true);
    expect(before.filter((r) => r.metadata.deletionTimestamp)).toHaveLength(4);

    // The server down entirely, and the release moved in cluster, where its pods never run.
    await serve.stop();
    serve = undefined;
    await must(
      "helm upgrade (in cluster, no pods)",
      // Defaults but the storage version: this install keeps storing v1.
      cp.helm(["upgrade", RELEASE, CHART, "-n", NS, "--reset-values", "--set", "crd.storageVersion=v1"]),
    );
    // Any change through the webhooks now fails: the server is not there.
    const label = await cp.kubectl(["label", "edgeroutes.v1.net.10xdev.io", "v1-5", "-n", APPS, "x=y"]);
    expect(label.code).not.toBe(0);
    expect(label.stderr).toMatch(/failed calling webhook/);

    // helm uninstall waits for its pre-delete Job, which the test runs as the kubelet would.
    const began = Date.now();
    const uninstall = cp.helm(["uninstall", RELEASE, "-n", NS, "--timeout", "120s"]);
    const hook = await runHookJob();
    const un = await uninstall;
    const seconds = (Date.now() - began) / 1000;
    expect(hook.code, explain(hook)).toBe(0);
    expect(hook.stdout).toContain("released the finalizer of 20 EdgeRoute(s)");
    expect(un.code, explain(un)).toBe(0);

    const after = await routes();
    const stranded = after.filter((r) => r.metadata.finalizers?.includes(FINALIZER));
    // The terminating ones are gone; the live ones stay, as the chart keeps them, free.
    expect(stranded.map((r) => r.metadata.name)).toEqual([]);
    expect(after.map((r) => r.metadata.name).sort()).toEqual(
      before
        .filter((r) => !r.metadata.deletionTimestamp)
        .map((r) => r.metadata.name)
        .sort(),
    );
    console.log(
      summaryLine(
        "uninstall-server-down",
        "server stopped, webhooks unreachable, then helm uninstall (time: the uninstall)",
        {
          routesChecked: before.length,
          strandedFinalizers: stranded.map((r) => `${r.metadata.namespace}/${r.metadata.name}`),
          servedGone: [],
          missing: [],
          crashed: [],
          convergedSeconds: seconds,
        },
      ),
    );
  });
});
