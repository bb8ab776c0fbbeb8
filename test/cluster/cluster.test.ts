// The real single-node cluster itself, checked the way a user would: the Node
// Ready, a pod Running from a locally loaded image, a ClusterIP Service
// answering from the host, kubectl logs and exec, no packet forwarded between
// the cluster's bridge and another interface, a second start refused while the first goes on,
// and the machine exactly as it was once the cluster stops — also after a run
// that was SIGKILLed with a pod running.

import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { ensureClusterBin } from "../../tools/testenv/cluster-bin.js";
import { DATA_DIR, LOCK_FILE, NODE_IP, NODE_NAME, SERVICE_CIDR } from "../../tools/testenv/cluster-config.js";
import { hostSnapshot, type HostSnapshot } from "../../tools/testenv/host-state.js";
import { startCluster, type Cluster } from "../../tools/testenv/cluster.js";
import { run, waitFor } from "../../tools/testenv/process.js";
import { REPO_ROOT, ensureTestbin } from "../../tools/testenv/testbin.js";

function httpGet(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { timeout: 3000 }, (res) => {
      let body = "";
      res.on("data", (c: Buffer) => (body += c.toString("utf8")));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("timeout", () => req.destroy(new Error(`GET ${url}: no answer in 3 s`)));
    req.on("error", reject);
  });
}

function podManifest(name: string, image: string, labels: Record<string, string> = {}): string {
  return JSON.stringify({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "default", labels },
    spec: {
      containers: [{ name: "main", image, imagePullPolicy: "Never" }],
      terminationGracePeriodSeconds: 1,
      automountServiceAccountToken: false,
    },
  });
}

async function podPhase(c: Cluster, name: string): Promise<{ phase: string; ip: string }> {
  const res = await c.kubectl(["get", "pod", name, "-o", "jsonpath={.status.phase} {.status.podIP}"]);
  const [phase = "", ip = ""] = res.stdout.trim().split(" ");
  return { phase, ip };
}

/** What changed between two snapshots, as "key: +added -removed" lines (empty when equal). */
function diff(before: HostSnapshot, after: HostSnapshot): string[] {
  const out: string[] = [];
  const lists = (key: string, a: readonly string[], b: readonly string[]): void => {
    const added = b.filter((x) => !a.includes(x));
    const removed = a.filter((x) => !b.includes(x));
    if (added.length + removed.length > 0 || a.join() !== b.join())
      out.push(`${key}: +[${added.join(", ")}] -[${removed.join(", ")}]`);
  };
  for (const key of Object.keys(before) as (keyof HostSnapshot)[]) {
    const a = before[key];
    const b = after[key];
    if (Array.isArray(a) && Array.isArray(b)) {
      lists(key, a, b);
      continue;
    }
    const ra = a as Record<string, string | string[]>;
    const rb = b as Record<string, string | string[]>;
    for (const sub of new Set([...Object.keys(ra), ...Object.keys(rb)])) {
      const va = ra[sub];
      const vb = rb[sub];
      if (Array.isArray(va) || Array.isArray(vb))
        lists(`${key}.${sub}`, [va ?? []].flat(), [vb ?? []].flat());
      else if (va !== vb) out.push(`${key}.${sub}: ${va} → ${vb}`);
    }
  }
  return out;
}

describe("the real single-node cluster", () => {
  let clusterBinDir = "";
  let testbinDir = "";
  let pauseImage = "";
  let before: HostSnapshot;
  let cluster: Cluster | undefined;

  beforeAll(async () => {
    const bin = ensureClusterBin();
    if (!bin.ok) throw new Error(`the real cluster cannot run here: ${bin.reason}`);
    clusterBinDir = bin.binDir;
    pauseImage = bin.pauseImage;
    const tb = ensureTestbin();
    if (!tb.ok) throw new Error(`the control plane's binaries are missing: ${tb.reason}`);
    testbinDir = tb.binDir;
    // Another run on this shared machine may hold the cluster: take turns.
    cluster = await startCluster({
      snapshotHost: true,
      waitForOtherMs: 900_000,
      progress: (l) => process.stderr.write(`cluster: ${l}\n`),
    });
    before = cluster.hostBefore!;
  });

  afterAll(async () => {
    await cluster?.stop();
  });

  test("the Node is Ready at the node IP, its kubelet at the apiserver's version", async () => {
    const c = cluster!;
    const node = JSON.parse((await c.kubectl(["get", "node", NODE_NAME, "-o", "json"])).stdout) as {
      status: {
        conditions: { type: string; status: string }[];
        addresses: { type: string; address: string }[];
        nodeInfo: { kubeletVersion: string; containerRuntimeVersion: string };
      };
    };
    expect(node.status.conditions.find((x) => x.type === "Ready")?.status).toBe("True");
    expect(node.status.addresses).toContainEqual({ type: "InternalIP", address: NODE_IP });
    const version = JSON.parse((await c.kubectl(["version", "-o", "json"])).stdout) as {
      serverVersion: { gitVersion: string };
    };
    expect(node.status.nodeInfo.kubeletVersion).toBe(version.serverVersion.gitVersion);
    expect(node.status.nodeInfo.containerRuntimeVersion).toMatch(/^containerd:\/\/2\./);
  });

  test("a pod Runs from a loaded image, and its ClusterIP Service answers from the host", async () => {
    const c = cluster!;
    await c.ctrImport(c.helloImage.tar);
    const apply = await c.kubectl(["apply", "-f", "-"], {
      input: podManifest("hello", c.helloImage.ref, { app: "hello" }),
    });
    expect(apply.code, apply.stderr).toBe(0);
    const svc = await c.kubectl(["create", "service", "clusterip", "hello", "--tcp=80:8080"]);
    expect(svc.code, svc.stderr).toBe(0);
    const pod = await waitFor(
      "pod hello Running",
      async () => {
        const p = await podPhase(c, "hello");
        return p.phase === "Running" && p.ip ? p : undefined;
      },
      120_000,
      500,
    ).catch((e: Error) => {
      throw new Error(`${e.message}\n${c.logs()}`);
    });
    // `kubectl create service` selects app=<name>.
    const clusterIp = (await c.kubectl(["get", "service", "hello", "-o", "jsonpath={.spec.clusterIP}"]))
      .stdout;
    expect(clusterIp.startsWith(SERVICE_CIDR.split(".").slice(0, 3).join("."))).toBe(true);

    const direct = await waitFor(
      "the pod's own address",
      () => httpGet(`http://${pod.ip}:8080/`),
      30_000,
      250,
    );
    expect(direct.body).toBe("hello from hello\n");
    const viaService = await waitFor(
      "the Service's ClusterIP",
      async () => {
        const r = await httpGet(`http://${clusterIp}/`).catch(() => undefined);
        return r?.status === 200 ? r : undefined;
      },
      60_000,
      500,
    );
    expect(viaService.body).toBe("hello from hello\n");

    // The kubelet's streaming paths, as a user reaches a pod: logs and exec.
    const logs = await c.kubectl(["logs", "hello"]);
    expect(logs.stdout, logs.stderr).toBe("listening on :8080\n");
    const exec = await c.kubectl(["exec", "hello", "--", "/hello", "-hostname"]);
    expect(exec.stdout, exec.stderr).toBe("hello\n");

    // The sandbox image runs as a pod's container too.
    const pause = await c.kubectl(["apply", "-f", "-"], { input: podManifest("pause", c.pauseImage) });
    expect(pause.code, pause.stderr).toBe(0);
    await waitFor(
      "pod pause Running",
      async () => ((await podPhase(c, "pause")).phase === "Running" ? true : undefined),
      120_000,
      500,
    );
  });

  test("nothing is forwarded between the cluster's bridge and another interface", async () => {
    const c = cluster!;
    // A host of our own in a network namespace, on a veth of its own (not the
    // bridge), serving hello: the host reaches it directly, and without the guard
    // a pod would too, through the host's forwarding (ip_forward is on while pods run).
    const ns = "edge-guard-test";
    const netnsDirExisted = existsSync("/run/netns");
    const sh = async (args: string[]): Promise<void> => {
      const r = await run(args[0]!, args.slice(1));
      if (r.code !== 0) throw new Error(`${args.join(" ")}: ${r.stderr}`);
    };
    let server: ChildProcess | undefined;
    try {
      await sh(["ip", "netns", "add", ns]);
      await sh(["ip", "link", "add", "edge-gt0", "type", "veth", "peer", "name", "edge-gt1"]);
      await sh(["ip", "link", "set", "edge-gt1", "netns", ns]);
      await sh(["ip", "addr", "add", "10.245.0.1/24", "dev", "edge-gt0"]);
      await sh(["ip", "link", "set", "edge-gt0", "up"]);
      await sh(["ip", "-n", ns, "addr", "add", "10.245.0.2/24", "dev", "edge-gt1"]);
      await sh(["ip", "-n", ns, "link", "set", "edge-gt1", "up"]);
      await sh(["ip", "-n", ns, "route", "add", "default", "via", "10.245.0.1"]);
      server = spawn("ip", ["netns", "exec", ns, path.join(clusterBinDir, "hello"), "10.245.0.2:8080"], {
        stdio: "ignore",
      });
      const fromHost = await waitFor(
        "the namespace's server from the host",
        () => httpGet("http://10.245.0.2:8080/").catch(() => undefined),
        15_000,
        200,
      );
      expect(fromHost.status).toBe(200);
      expect(readFileSync("/proc/sys/net/ipv4/ip_forward", "utf8").trim()).toBe("1");

      const blocked = await c.kubectl(["exec", "hello", "--", "/hello", "-get", "http://10.245.0.2:8080/"]);
      expect(blocked.code).not.toBe(0);
      expect(blocked.stdout).toMatch(/Timeout|deadline exceeded|unreachable|refused/i);
      // Within the bridge, pod → Service → pod is forwarded as in any cluster.
      const clusterIp = (await c.kubectl(["get", "service", "hello", "-o", "jsonpath={.spec.clusterIP}"]))
        .stdout;
      const allowed = await c.kubectl(["exec", "hello", "--", "/hello", "-get", `http://${clusterIp}/`]);
      expect(allowed.stdout, allowed.stderr).toBe("hello from hello\n");
    } finally {
      server?.kill("SIGKILL");
      await run("ip", ["link", "del", "edge-gt0"]);
      await run("ip", ["netns", "del", ns]);
      // `ip netns add` made /run/netns a mount point of its own.
      if (!netnsDirExisted) {
        await run("umount", ["/run/netns"]);
        rmSync("/run/netns", { recursive: true, force: true });
      }
    }
  });

  test("a second start is refused with the running one's pid, and the first goes on", async () => {
    await expect(startCluster()).rejects.toThrow(
      new RegExp(`a cluster is already running \\(pid ${process.pid}\\)`),
    );
    const ready = await cluster!.kubectl(["get", "--raw", "/readyz"]);
    expect(ready.stdout).toBe("ok");
  });

  test("stopping puts the machine back exactly as it was before the start", async () => {
    const c = cluster!;
    cluster = undefined;
    await c.stop();
    const after = await hostSnapshot(clusterBinDir);
    expect(diff(before, after)).toEqual([]);
    expect(existsSync(LOCK_FILE)).toBe(false);
  });

  test("a start after a SIGKILLed run with a pod running cleans up first, and stops clean", async () => {
    const main = path.join(REPO_ROOT, "dist/tools/testenv/cluster-main.js");
    if (!existsSync(main)) throw new Error(`${main} is missing: run npm run build first`);
    let child: ChildProcess | undefined = spawn(process.execPath, [main], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    try {
      let out = "";
      let err = "";
      child.stdout?.on("data", (d: Buffer) => (out += d.toString("utf8")));
      child.stderr?.on("data", (d: Buffer) => (err += d.toString("utf8")));
      await waitFor(
        "the cluster process to say ready",
        () => {
          if (child?.exitCode !== null) throw new Error(`cluster-main exited:\n${err.slice(-4000)}`);
          return Promise.resolve(out.includes("ready\n") ? true : undefined);
        },
        300_000,
        250,
      );
      const kubeconfig = path.join(DATA_DIR, "kubeconfig/admin.kubeconfig");
      const k = (args: string[], input?: string) =>
        run(path.join(testbinDir, "kubectl"), args, {
          input,
          env: { ...process.env, KUBECONFIG: kubeconfig },
        });
      const created = await k(["apply", "-f", "-"], podManifest("left-behind", pauseImage));
      expect(created.code, created.stderr).toBe(0);
      await waitFor(
        "pod left-behind Running",
        async () => {
          const r = await k(["get", "pod", "left-behind", "-o", "jsonpath={.status.phase}"]);
          return r.stdout === "Running" ? true : undefined;
        },
        120_000,
        500,
      );
      const killedPid = child.pid;
      const exited = new Promise((r) => child?.once("exit", r));
      child.kill("SIGKILL");
      await exited;
      child = undefined;

      // The killed run left its containers, shims and mounts behind; a new start must cope.
      const lines: string[] = [];
      const again = await startCluster({ waitForOtherMs: 900_000, progress: (l) => lines.push(l) });
      expect(lines).toContain(`cleaning up after a cluster run that did not stop (pid ${killedPid})`);
      const pods = await again.kubectl(["get", "pods", "-A", "-o", "name"]);
      expect(pods.code, pods.stderr).toBe(0);
      await again.stop();
      const after = await hostSnapshot(clusterBinDir);
      expect(diff(before, after)).toEqual([]);
    } finally {
      child?.kill("SIGKILL");
    }
  });
});
