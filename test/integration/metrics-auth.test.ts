// Who may read /metrics, on the real apiserver with the chart installed. The
// server runs with the flags the chart gives its pod (metrics.auth, on by
// default) and its ServiceAccount's token: /metrics then answers only a caller
// the apiserver vouches for (TokenReview) and RBAC lets `get` the non-resource
// URL (SubjectAccessReview), as the ClusterRole <fullname>-metrics-reader
// grants; a flood of new bogus tokens costs a bounded number of TokenReviews.
// The watcher's plain-HTTP metrics listener binds the pod's IP, not every
// interface.

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as fromYaml, parseAllDocuments, stringify as toYaml } from "yaml";
import { samples } from "../harness/apiserver-cost.js";
import { startControlPlane } from "../harness/control-plane.js";
import type { ControlPlane } from "../../tools/testenv/control-plane.js";
import { startCli, startServe, type ServeProcess } from "../../tools/testenv/operator.js";
import { freePort, must, waitFor } from "../../tools/testenv/process.js";
import { REPO_ROOT } from "../../tools/testenv/testbin.js";

const CHART = path.join(REPO_ROOT, "charts/edge-operator");
const NS = "edge-system";
const RELEASE = "edge";
const FULLNAME = "edge-edge-operator";
const MONITORING = "monitoring";

let cp: ControlPlane;
let dir: string;
let serve: ServeProcess | undefined;

type Doc = { kind?: string; metadata?: { name?: string }; [k: string]: unknown };

interface Container {
  args: string[];
  env?: { name: string; value?: string; valueFrom?: unknown }[];
  ports?: { name: string; containerPort: number }[];
  readinessProbe?: { httpGet?: Record<string, unknown> };
  livenessProbe?: { httpGet?: Record<string, unknown> };
}

async function render(args: string[] = []): Promise<Doc[]> {
  const out = await must(
    "helm template",
    cp.helm(["template", RELEASE, CHART, "-n", NS, "--kube-version", "1.36.3", ...args]),
  );
  return parseAllDocuments(out)
    .map((d) => d.toJS() as Doc | null)
    .filter((d): d is Doc => d !== null);
}

function container(docs: Doc[], deployment: string): Container {
  const dep = docs.find((d) => d.kind === "Deployment" && d.metadata?.name === deployment) as
    (Doc & { spec: { template: { spec: { containers: Container[] } } } }) | undefined;
  const c = dep?.spec.template.spec.containers[0];
  if (!c) throw new Error(`no Deployment ${deployment} rendered`);
  return c;
}

async function token(sa: string, ns: string): Promise<string> {
  return (await must(`create token ${sa}`, cp.kubectl(["create", "token", sa, "-n", ns]))).trim();
}

/** A kubeconfig for the admin's cluster that authenticates as ServiceAccount `sa` alone. */
async function tokenKubeconfig(sa: string): Promise<string> {
  const admin = fromYaml(readFileSync(cp.kubeconfig, "utf8")) as { clusters: { cluster: unknown }[] };
  const file = path.join(dir, `${sa}.kubeconfig`);
  writeFileSync(
    file,
    toYaml({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "c", cluster: admin.clusters[0]?.cluster }],
      users: [{ name: sa, user: { token: await token(sa, NS) } }],
      contexts: [{ name: sa, context: { cluster: "c", user: sa, namespace: NS } }],
      "current-context": sa,
    }),
  );
  return file;
}

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

function get(url: string, bearer?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = https.get(
      url,
      {
        ca: serve?.caPem ?? "",
        agent: false,
        timeout: 30_000,
        headers: bearer === undefined ? {} : { authorization: `Bearer ${bearer}` },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            text: Buffer.concat(chunks).toString("utf8"),
          }),
        );
      },
    );
    req.on("timeout", () => req.destroy(new Error(`GET ${url}: no answer in 30 s`)));
    req.on("error", reject);
  });
}

/** TokenReviews the apiserver has answered, from its own /metrics. */
async function tokenReviews(): Promise<number> {
  const text = await must("apiserver /metrics", cp.kubectl(["get", "--raw", "/metrics"]));
  return samples(text, "apiserver_request_total")
    .filter((s) => s.labels.resource === "tokenreviews")
    .reduce((n, s) => n + s.value, 0);
}

beforeAll(async () => {
  cp = await startControlPlane();
  dir = mkdtempSync(path.join(os.tmpdir(), "edge-metrics-auth-"));
  await must("create namespace", cp.kubectl(["create", "namespace", NS]));
  await must("create namespace", cp.kubectl(["create", "namespace", MONITORING]));
  // Out of cluster: the ServiceAccounts and RBAC (the metrics reader's ClusterRole too) as in cluster.
  await must(
    "helm install",
    cp.helm([
      "install",
      RELEASE,
      CHART,
      "-n",
      NS,
      "--set",
      "webhook.urlOverride=https://127.0.0.1:9443",
      "--set",
      "webhook.caBundle=Q0E=",
    ]),
  );
  // The server pod's own flags for /metrics, as the chart renders them with its defaults.
  const flags = container(await render(), `${FULLNAME}-server`).args.filter((a) => a.startsWith("--metrics"));
  serve = await startServe({
    args: ["--kubeconfig", await tokenKubeconfig(`${FULLNAME}-server`), ...flags],
  });
});

afterAll(async () => {
  await serve?.stop();
  await cp?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("the server's /metrics, as the chart runs it", () => {
  it("answers 401 without a token, or with one the apiserver does not accept", async () => {
    const none = await get(`${serve?.url}/metrics`);
    expect(none.status, none.text.slice(0, 200)).toBe(401);
    expect(JSON.parse(none.text)).toMatchObject({
      kind: "Status",
      code: 401,
      reason: "Unauthorized",
      message: "a bearer token is required (Authorization: Bearer ...)",
    });
    const bogus = await get(`${serve?.url}/metrics`, "not-a-token");
    expect(bogus.status, bogus.text.slice(0, 200)).toBe(401);
    // The probes stay open: the kubelet sends no token.
    expect((await get(`${serve?.url}/healthz`)).status).toBe(200);
    expect((await get(`${serve?.url}/readyz`)).status).toBe(200);
  });

  it("answers 403 to a ServiceAccount RBAC does not let get /metrics", async () => {
    await must("create sa", cp.kubectl(["create", "serviceaccount", "nobody", "-n", MONITORING]));
    const r = await get(`${serve?.url}/metrics`, await token("nobody", MONITORING));
    expect(r.status, r.text.slice(0, 200)).toBe(403);
    expect(JSON.parse(r.text)).toMatchObject({
      reason: "Forbidden",
      message: `system:serviceaccount:${MONITORING}:nobody may not read /metrics (RBAC: get on the non-resource URL /metrics)`,
    });
  });

  it("serves the metrics to a ServiceAccount bound to <fullname>-metrics-reader", async () => {
    await must("create sa", cp.kubectl(["create", "serviceaccount", "prometheus", "-n", MONITORING]));
    await must(
      "bind the metrics reader",
      cp.kubectl([
        "create",
        "clusterrolebinding",
        "prometheus-edge-metrics",
        `--clusterrole=${FULLNAME}-metrics-reader`,
        `--serviceaccount=${MONITORING}:prometheus`,
      ]),
    );
    const bearer = await token("prometheus", MONITORING);
    const r = await waitFor(
      "200 from /metrics",
      async () => {
        const a = await get(`${serve?.url}/metrics`, bearer);
        if (a.status !== 200) throw new Error(`${a.status}: ${a.text.slice(0, 200)}`);
        return a;
      },
      15_000,
      500,
    );
    expect(r.headers["content-type"]).toContain("text/plain");
    expect(r.text).toContain("edge_operator_http_request_duration_seconds");
  });

  it("reviews a bounded number of new bogus tokens, answers the rest 429, and still serves its reader", async () => {
    const reader = await token("prometheus", MONITORING);
    // Let in before the flood (a new token of its own): the flood must not lock it out after.
    expect((await get(`${serve?.url}/metrics`, reader)).status).toBe(200);
    const before = await tokenReviews();
    const statuses = new Map<number, number>();
    let retryAfter: string | undefined;
    const started = Date.now();
    for (let batch = 0; batch < 10; batch++) {
      const answers = await Promise.all(
        Array.from({ length: 50 }, (_, i) => get(`${serve?.url}/metrics`, `bogus-${batch}-${i}`)),
      );
      for (const a of answers) {
        statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
        if (a.status === 429) retryAfter ??= String(a.headers["retry-after"]);
      }
    }
    const seconds = (Date.now() - started) / 1000;
    const reviews = (await tokenReviews()) - before;
    expect([...statuses.keys()].sort()).toEqual([401, 429]);
    // The budget: a burst of 20, then 5 a second (caller-auth.ts).
    expect(reviews).toBeLessThanOrEqual(20 + Math.ceil(5 * seconds) + 1);
    expect(statuses.get(401)).toBe(reviews);
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
    // A caller let in before is not locked out by the flood.
    expect((await get(`${serve?.url}/metrics`, reader)).status).toBe(200);
  });
});

describe("the chart's metrics settings", () => {
  it("turns the server's check on by default, and off with metrics.auth=false", async () => {
    expect(container(await render(), `${FULLNAME}-server`).args).toContain("--metrics-auth");
    const off = container(await render(["--set", "metrics.auth=false"]), `${FULLNAME}-server`);
    expect(off.args.join(" ")).not.toContain("--metrics-auth");
    const reader = (await render()).find(
      (d) => d.kind === "ClusterRole" && d.metadata?.name === `${FULLNAME}-metrics-reader`,
    );
    expect(reader?.rules).toEqual([{ nonResourceURLs: ["/metrics"], verbs: ["get"] }]);
  });

  it("binds the watcher's metrics listener to the pod's IP, where its probes reach it", async () => {
    const c = container(await render(), `${FULLNAME}-watcher`);
    const port = c.ports?.find((p) => p.name === "metrics")?.containerPort;
    expect(c.args).toContain(`--metrics-listen=:${port}`);
    expect(c.env?.find((e) => e.name === "POD_IP")).toEqual({
      name: "POD_IP",
      valueFrom: { fieldRef: { fieldPath: "status.podIP" } },
    });
    // No host in the probes: the kubelet dials the pod's IP.
    expect(c.readinessProbe?.httpGet).toEqual({ path: "/readyz", port: "metrics" });
    expect(c.livenessProbe?.httpGet).toEqual({ path: "/healthz", port: "metrics" });
  });

  it("lets only metricsFrom's peers reach the watcher pods when networkPolicy is on", async () => {
    const policies = (docs: Doc[]) =>
      docs.filter((d) => d.kind === "NetworkPolicy" && d.metadata?.name === `${FULLNAME}-watcher`);
    expect(policies(await render())).toEqual([]);
    const [closed] = policies(await render(["--set", "networkPolicy.enabled=true"]));
    expect(closed?.spec).toMatchObject({ policyTypes: ["Ingress"], ingress: [] });
    const docs = await render([
      "--set",
      "networkPolicy.enabled=true",
      "--set",
      `networkPolicy.metricsFrom[0].namespaceSelector.matchLabels.kubernetes\\.io/metadata\\.name=${MONITORING}`,
    ]);
    const [open] = policies(docs);
    expect(open?.spec).toMatchObject({
      ingress: [
        {
          ports: [{ port: 8081, protocol: "TCP" }],
          from: [{ namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": MONITORING } } }],
        },
      ],
    });
    const dry = await cp.kubectl(["apply", "--dry-run=server", "-n", NS, "-f", "-"], {
      input: toYaml(open),
    });
    expect(dry.code, dry.stderr).toBe(0);
  });
});

/** The status of GET http://HOST:PORT/healthz, or the error code when nothing answers there. */
function probe(host: string, port: number): Promise<number | string> {
  return new Promise((resolve) => {
    const req = http.get({ host, port, path: "/healthz", agent: false, timeout: 2_000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
}

describe("the watcher's metrics listener", () => {
  const watchWith = async (
    env: Record<string, string>,
  ): Promise<{ port: number; stop: () => Promise<void> }> => {
    const port = await freePort();
    const proc = startCli(
      "watch",
      [
        "watch",
        "--reconcile-url",
        "https://127.0.0.1:1/reconcile",
        "--kubeconfig",
        await tokenKubeconfig(`${FULLNAME}-watcher`),
        "--no-leader-elect",
        "--metrics-listen",
        `:${port}`,
      ],
      env,
    );
    return {
      port,
      stop: async () => {
        await proc.stop();
      },
    };
  };

  it("with no host, listens on $POD_IP only", async () => {
    const w = await watchWith({ POD_IP: "127.0.0.2" });
    try {
      await waitFor("the watcher on 127.0.0.2", async () =>
        (await probe("127.0.0.2", w.port)) === 200 ? true : undefined,
      );
      expect(await probe("127.0.0.1", w.port)).toBe("ECONNREFUSED");
    } finally {
      await w.stop();
    }
  });

  it("with no host and no POD_IP (out of cluster), listens on loopback only", async () => {
    const w = await watchWith({ POD_IP: "" });
    try {
      await waitFor("the watcher on 127.0.0.1", async () =>
        (await probe("127.0.0.1", w.port)) === 200 ? true : undefined,
      );
      expect(await probe("127.0.0.2", w.port)).toBe("ECONNREFUSED");
    } finally {
      await w.stop();
    }
  });
});
