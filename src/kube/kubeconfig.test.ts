// Cluster access as kubectl reads it, from real files in a temporary directory.

import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { stringify as toYaml } from "yaml";
import { loadKubeConfig } from "./load-kubeconfig.js";
import { kubeClient } from "./client.js";
import {
  inClusterAccess,
  loadKubeconfigFiles,
  mergeKubeconfigs,
  parseKubeconfig,
  selectCurrentContext,
  type ClusterAccess,
} from "./kubeconfig.js";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "kubeconfig-test-"));
});
afterEach(() => {
  vi.unstubAllEnvs();
  rmSync(dir, { recursive: true, force: true });
});

const b64 = (s: string): string => Buffer.from(s).toString("base64");

interface Doc {
  current?: string;
  clusters?: Record<string, Record<string, unknown>>;
  users?: Record<string, Record<string, unknown>>;
  contexts?: Record<string, { cluster: string; user?: string }>;
}

/** Writes a kubeconfig under dir (sub-directories allowed) and returns its path. */
function write(name: string, d: Doc): string {
  const file = path.join(dir, name);
  mkdirSync(path.dirname(file), { recursive: true });
  const list = <T>(m: Record<string, T> | undefined, key: string): unknown[] =>
    Object.entries(m ?? {}).map(([n, v]) => ({ name: n, [key]: v }));
  writeFileSync(
    file,
    toYaml({
      apiVersion: "v1",
      kind: "Config",
      clusters: list(d.clusters, "cluster"),
      users: list(d.users, "user"),
      contexts: list(d.contexts, "context"),
      ...(d.current ? { "current-context": d.current } : {}),
    }),
  );
  return file;
}

const one = (user: Record<string, unknown>, cluster: Record<string, unknown> = {}): Doc => ({
  current: "ctx",
  clusters: { c: { server: "https://10.0.0.1:6443", ...cluster } },
  users: { u: user },
  contexts: { ctx: { cluster: "c", user: "u" } },
});

const auth = async (a: ClusterAccess): Promise<unknown> => (await a.credentials()).headers.authorization;

describe("a kubeconfig file", () => {
  it("uses current-context to pick the cluster and user among several", async () => {
    const file = write("config", {
      current: "prod",
      clusters: {
        dev: { server: "https://dev.example:6443" },
        prod: { server: "https://prod.example:6443/", "certificate-authority-data": b64("PROD CA") },
      },
      users: { alice: { token: "alice-token" }, bob: { token: "bob-token" } },
      contexts: { dev: { cluster: "dev", user: "alice" }, prod: { cluster: "prod", user: "bob" } },
    });
    const a = loadKubeconfigFiles([file]);
    expect(a.server).toBe("https://prod.example:6443");
    expect(a.tls.ca?.toString()).toBe("PROD CA");
    expect(a.tls.rejectUnauthorized).toBe(true);
    expect(a.token).toBe("bob-token");
    expect(await auth(a)).toBe("Bearer bob-token");
    expect(a.source).toBe(file);
  });

  it("reads certificate-authority, client-certificate and client-key relative to the kubeconfig's directory", async () => {
    mkdirSync(path.join(dir, "kube", "pki"), { recursive: true });
    writeFileSync(path.join(dir, "kube", "pki", "ca.crt"), "CA FILE");
    writeFileSync(path.join(dir, "kube", "pki", "admin.crt"), "CERT FILE");
    writeFileSync(path.join(dir, "kube", "pki", "admin.key"), "KEY FILE");
    const file = write(
      "kube/config",
      one(
        { "client-certificate": "pki/admin.crt", "client-key": "pki/admin.key" },
        { "certificate-authority": "pki/ca.crt" },
      ),
    );
    // Not the kubeconfig's directory: relative paths must not follow the cwd.
    const cwd = process.cwd();
    process.chdir(os.tmpdir());
    try {
      const a = loadKubeconfigFiles([path.relative(os.tmpdir(), file)]);
      expect(a.tls.ca?.toString()).toBe("CA FILE");
      expect(a.tls.cert?.toString()).toBe("CERT FILE");
      expect(a.tls.key?.toString()).toBe("KEY FILE");
      expect((await a.credentials()).headers).toEqual({});
    } finally {
      process.chdir(cwd);
    }
  });

  it("takes -data fields as base64, and insecure-skip-tls-verify and tls-server-name for the agent", () => {
    const a = loadKubeconfigFiles([
      write(
        "config",
        one(
          { "client-certificate-data": b64("CERT"), "client-key-data": b64("KEY") },
          { "insecure-skip-tls-verify": true, "tls-server-name": "kubernetes.default" },
        ),
      ),
    ]);
    expect(a.tls).toEqual({
      cert: Buffer.from("CERT"),
      key: Buffer.from("KEY"),
      servername: "kubernetes.default",
      rejectUnauthorized: false,
    });
  });

  it("re-reads a tokenFile (relative to the kubeconfig) as it rotates, and prefers it to token", async () => {
    writeFileSync(path.join(dir, "sa.token"), "first\n");
    const a = loadKubeconfigFiles([write("config", one({ tokenFile: "sa.token", token: "inline" }))], {
      tokenMaxAgeMs: 0,
    });
    expect(await auth(a)).toBe("Bearer first");
    writeFileSync(path.join(dir, "sa.token"), "second\n");
    expect(await auth(a)).toBe("Bearer second");
    rmSync(path.join(dir, "sa.token"));
    // mid-rotation the file may be gone for a moment: the last token is kept
    expect(await auth(a)).toBe("Bearer second");
  });

  it("keeps a tokenFile's token for its max age, as client-go does", async () => {
    writeFileSync(path.join(dir, "sa.token"), "first");
    const a = loadKubeconfigFiles([write("config", one({ tokenFile: "sa.token" }))]);
    writeFileSync(path.join(dir, "sa.token"), "second");
    expect(await auth(a)).toBe("Bearer first");
  });

  it("sends username and password as basic auth, and impersonation as headers", async () => {
    const a = loadKubeconfigFiles([
      write(
        "config",
        one({ username: "admin", password: "s3cret", as: "jane", "as-groups": ["ops", "dev"] }),
      ),
    ]);
    expect((await a.credentials()).headers).toEqual({
      authorization: `Basic ${b64("admin:s3cret")}`,
      "impersonate-user": "jane",
      "impersonate-group": ["ops", "dev"],
    });
  });

  it("allows a context without a user (anonymous)", async () => {
    const a = loadKubeconfigFiles([
      write("config", {
        current: "x",
        clusters: { c: { server: "http://127.0.0.1:8080" } },
        contexts: { x: { cluster: "c" } },
      }),
    ]);
    expect(a.server).toBe("http://127.0.0.1:8080");
    expect((await a.credentials()).headers).toEqual({});
  });
});

describe("$KUBECONFIG lists", () => {
  it("merge as kubectl merges them: the first file to set a name, or current-context, wins", async () => {
    const first = write("a", {
      clusters: { shared: { server: "https://first:6443" } },
      users: { u: { token: "from-a" } },
    });
    const second = write("b", {
      current: "from-b",
      clusters: { shared: { server: "https://second:6443" }, other: { server: "https://other:6443" } },
      users: { u: { token: "from-b" } },
      contexts: { "from-b": { cluster: "shared", user: "u" }, "from-c": { cluster: "other", user: "u" } },
    });
    const third = write("c", {
      current: "from-c",
      contexts: { "from-b": { cluster: "other", user: "u" } },
    });
    vi.stubEnv("KUBECONFIG", [first, path.join(dir, "missing"), "", second, third].join(path.delimiter));
    const a = loadKubeConfig();
    expect(a?.server).toBe("https://first:6443");
    expect(await auth(a as ClusterAccess)).toBe("Bearer from-a");
    expect(a?.source).toBe([first, second, third].join(path.delimiter));
  });

  it("resolves each entry's relative paths against the file that defines it", () => {
    mkdirSync(path.join(dir, "one"));
    writeFileSync(path.join(dir, "one", "ca.crt"), "CA ONE");
    const a = write("one/config", {
      clusters: { c: { server: "https://x", "certificate-authority": "ca.crt" } },
    });
    const b = write("two/config", {
      current: "ctx",
      users: { u: {} },
      contexts: { ctx: { cluster: "c", user: "u" } },
    });
    expect(loadKubeconfigFiles([b, a]).tls.ca?.toString()).toBe("CA ONE");
  });

  it("is an error when no file in the list exists", () => {
    const missing = [path.join(dir, "x"), path.join(dir, "y")];
    vi.stubEnv("KUBECONFIG", missing.join(path.delimiter));
    expect(() => loadKubeConfig()).toThrow(`${missing.join(path.delimiter)}: no kubeconfig file exists`);
  });
});

describe("precedence", () => {
  it("an explicit path beats $KUBECONFIG, which beats in-cluster; none gives undefined", () => {
    vi.stubEnv("HOME", dir); // no ~/.kube/config
    const explicit = write("explicit", one({ token: "explicit" }));
    const env = write("env", one({ token: "env" }));
    vi.stubEnv("KUBERNETES_SERVICE_HOST", "10.96.0.1");
    vi.stubEnv("KUBERNETES_SERVICE_PORT", "443");
    vi.stubEnv("KUBECONFIG", env);
    expect(loadKubeConfig(explicit)?.token).toBe("explicit");
    expect(loadKubeConfig()?.token).toBe("env");
    vi.stubEnv("KUBECONFIG", "");
    // in-cluster is chosen; outside a pod it fails for want of the service account
    let chosen: string | undefined;
    try {
      chosen = loadKubeConfig()?.source;
    } catch (e) {
      chosen = (e as Error).message.split(":")[0];
    }
    expect(chosen).toBe("in-cluster");
    vi.stubEnv("KUBERNETES_SERVICE_HOST", "");
    expect(loadKubeConfig()).toBeUndefined();
  });
});

describe("errors name the file and what is missing", () => {
  const cases: [string, () => string, RegExp | string][] = [
    ["an unreadable file", () => path.join(dir, "nope"), /^kubeconfig .*\/nope: no such file$/],
    [
      "invalid YAML",
      () => {
        writeFileSync(path.join(dir, "bad"), "clusters: [\n");
        return path.join(dir, "bad");
      },
      /\/bad: not valid YAML: /,
    ],
    [
      "no current-context",
      () => write("f", { ...one({}), current: undefined }),
      /\/f: no current-context is set \(pass --context\)$/,
    ],
    [
      "a missing context",
      () => write("f", { ...one({}), current: "gone" }),
      /\/f: current-context "gone" names no context$/,
    ],
    [
      "a context naming a missing cluster",
      () => write("f", { ...one({}), contexts: { ctx: { cluster: "gone", user: "u" } } }),
      /\/f: cluster "gone" was not found for context "ctx"$/,
    ],
    [
      "a context naming a missing user",
      () => write("f", { ...one({}), contexts: { ctx: { cluster: "c", user: "gone" } } }),
      /\/f: user "gone" was not found for context "ctx"$/,
    ],
    [
      "a cluster without a server",
      () => write("f", { ...one({}), clusters: { c: {} } }),
      /\/f: cluster "c" has no server$/,
    ],
    [
      "a missing certificate-authority file",
      () => write("f", one({}, { "certificate-authority": "ca.crt" })),
      /\/f: cluster "c": certificate-authority .*\/ca\.crt: no such file$/,
    ],
    [
      "a client certificate without a key",
      () => write("f", one({ "client-certificate-data": b64("CERT") })),
      /\/f: user "u" has a client certificate but no client-key$/,
    ],
    [
      "a missing tokenFile",
      () => write("f", one({ tokenFile: "gone.token" })),
      /\/f: user "u": tokenFile .*\/gone\.token: no such file$/,
    ],
    [
      "clusters that are not a list",
      () => {
        writeFileSync(path.join(dir, "f"), "clusters: x\n");
        return path.join(dir, "f");
      },
      /\/f: clusters: must be a list$/,
    ],
  ];
  it.each(cases)("%s", (_what, make, message) => {
    const file = make();
    expect(() => loadKubeconfigFiles([file])).toThrow(message);
    try {
      loadKubeconfigFiles([file]);
    } catch (e) {
      expect((e as Error).message).not.toContain("\n");
    }
  });
});

describe("pure parsing and merging", () => {
  it("makes paths absolute against the file's directory and keeps the first of a duplicated name", () => {
    const doc = parseKubeconfig(
      toYaml({
        clusters: [
          { name: "c", cluster: { server: "https://a", "certificate-authority": "ca.crt" } },
          { name: "c", cluster: { server: "https://b" } },
        ],
        users: [
          { name: "u", user: { exec: { command: "./bin/plugin", args: [] } } },
          { name: "v", user: { exec: { command: "gke-gcloud-auth-plugin" } } },
        ],
      }),
      "/etc/kube/config",
    );
    expect(doc.clusters.get("c")?.fields).toEqual({
      server: "https://a",
      "certificate-authority": "/etc/kube/ca.crt",
    });
    expect(doc.users.get("u")?.fields.exec).toEqual({ command: "/etc/kube/bin/plugin", args: [] });
    // a bare command is looked up on $PATH, not next to the file
    expect(doc.users.get("v")?.fields.exec).toEqual({ command: "gke-gcloud-auth-plugin" });
  });

  it("an empty file is an empty kubeconfig", () => {
    const merged = mergeKubeconfigs([parseKubeconfig("", "/a")]);
    expect(() => selectCurrentContext(merged)).toThrow("/a: no current-context is set");
  });
});

describe("in-cluster", () => {
  const sa = (): string => {
    const d = path.join(dir, "sa");
    mkdirSync(d);
    writeFileSync(path.join(d, "ca.crt"), "CLUSTER CA");
    writeFileSync(path.join(d, "token"), "sa-token-1\n");
    return d;
  };

  it("talks to $KUBERNETES_SERVICE_HOST:PORT with the service account's CA and re-read token", async () => {
    const d = sa();
    const a = inClusterAccess({
      serviceAccountDir: d,
      env: { KUBERNETES_SERVICE_HOST: "10.96.0.1", KUBERNETES_SERVICE_PORT: "443" },
      tokenMaxAgeMs: 0,
    });
    expect(a.server).toBe("https://10.96.0.1:443");
    expect(a.tls).toEqual({ ca: Buffer.from("CLUSTER CA"), rejectUnauthorized: true });
    expect(await auth(a)).toBe("Bearer sa-token-1");
    writeFileSync(path.join(d, "token"), "sa-token-2\n");
    expect(await auth(a)).toBe("Bearer sa-token-2");
  });

  it("brackets an IPv6 service host", () => {
    const a = inClusterAccess({
      serviceAccountDir: sa(),
      env: { KUBERNETES_SERVICE_HOST: "fd00:10:96::1", KUBERNETES_SERVICE_PORT: "443" },
    });
    expect(a.server).toBe("https://[fd00:10:96::1]:443");
    expect(new URL(a.server).hostname).toBe("[fd00:10:96::1]");
  });

  it("says what is missing when the service account is not mounted", () => {
    expect(() =>
      inClusterAccess({
        serviceAccountDir: path.join(dir, "none"),
        env: { KUBERNETES_SERVICE_HOST: "10.96.0.1", KUBERNETES_SERVICE_PORT: "443" },
      }),
    ).toThrow(/^in-cluster: service account CA .*\/none\/ca\.crt: no such file$/);
    expect(() =>
      inClusterAccess({ serviceAccountDir: sa(), env: { KUBERNETES_SERVICE_HOST: "10.96.0.1" } }),
    ).toThrow("in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must both be set");
  });
});

describe("exec plugins", () => {
  it("are run through client-node, with a relative command resolved against the kubeconfig", async () => {
    mkdirSync(path.join(dir, "bin"));
    const plugin = path.join(dir, "bin", "plugin.sh");
    writeFileSync(
      plugin,
      `#!/bin/sh\necho '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"from-plugin"}}'\n`,
    );
    chmodSync(plugin, 0o755);
    const a = loadKubeconfigFiles([
      write(
        "config",
        one({
          exec: {
            apiVersion: "client.authentication.k8s.io/v1",
            command: "./bin/plugin.sh",
            interactiveMode: "Never",
          },
          as: "jane",
        }),
      ),
    ]);
    expect((await a.credentials()).headers).toEqual({
      authorization: "Bearer from-plugin",
      "impersonate-user": "jane",
    });
  });
});

describe("kubeClient", () => {
  it("sends the credentials read for each request", async () => {
    const seen: (string | undefined)[] = [];
    const server = http.createServer((req, res) => {
      seen.push(req.headers.authorization);
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    try {
      writeFileSync(path.join(dir, "t"), "one");
      const file = write(
        "config",
        one({ tokenFile: "t" }, { server: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }),
      );
      const kube = kubeClient(loadKubeconfigFiles([file], { tokenMaxAgeMs: 0 }));
      await kube.json("GET", "/version");
      writeFileSync(path.join(dir, "t"), "two");
      await kube.json("GET", "/version");
      expect(seen).toEqual(["Bearer one", "Bearer two"]);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});
