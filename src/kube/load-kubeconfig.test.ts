// Which cluster a command talks to, resolved as kubectl resolves it, from real
// files in a temporary directory: --kubeconfig, $KUBECONFIG (merged),
// ~/.kube/config, in-cluster, and --context over current-context.

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { stringify as toYaml } from "yaml";
import { kubeconfigFiles, resolveClusterAccess } from "./load-kubeconfig.js";

let dir: string;
let home: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "load-kubeconfig-test-"));
  home = path.join(dir, "home");
  mkdirSync(home);
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** A kubeconfig with one context per entry of `contexts` (context → server), `current` its current-context. */
function kubeconfig(
  file: string,
  contexts: Record<string, string>,
  current?: string,
  namespace?: string,
): string {
  const full = path.join(dir, file);
  mkdirSync(path.dirname(full), { recursive: true });
  const names = Object.keys(contexts);
  writeFileSync(
    full,
    toYaml({
      apiVersion: "v1",
      kind: "Config",
      clusters: names.map((n) => ({ name: n, cluster: { server: contexts[n] } })),
      users: names.map((n) => ({ name: n, user: { token: `token-${n}` } })),
      contexts: names.map((n) => ({
        name: n,
        context: { cluster: n, user: n, ...(namespace ? { namespace } : {}) },
      })),
      ...(current ? { "current-context": current } : {}),
    }),
  );
  return full;
}

/** A service-account directory as the kubelet mounts it. */
function serviceAccount(namespace: string): string {
  const sa = path.join(dir, "sa");
  mkdirSync(sa);
  writeFileSync(path.join(sa, "ca.crt"), "CA");
  writeFileSync(path.join(sa, "token"), "pod-token\n");
  writeFileSync(path.join(sa, "namespace"), namespace);
  return sa;
}

const IN_CLUSTER = { KUBERNETES_SERVICE_HOST: "10.96.0.1", KUBERNETES_SERVICE_PORT: "443" };

describe("kubeconfigFiles", () => {
  it("--kubeconfig alone, else $KUBECONFIG's list (duplicates once), else ~/.kube/config", () => {
    expect(kubeconfigFiles({ kubeconfig: "/x", env: { KUBECONFIG: "/a:/b" }, home })).toEqual({
      files: ["/x"],
      mustExist: true,
    });
    expect(kubeconfigFiles({ env: { KUBECONFIG: "/a::/b:/a" }, home })).toEqual({
      files: ["/a", "/b"],
      mustExist: false,
    });
    expect(kubeconfigFiles({ env: {}, home })).toEqual({
      files: [path.join(home, ".kube", "config")],
      mustExist: false,
    });
  });
});

describe("resolveClusterAccess", () => {
  it("reads ~/.kube/config when KUBECONFIG is not set, before in-cluster", () => {
    kubeconfig("home/.kube/config", { laptop: "https://laptop:6443" }, "laptop", "team-a");
    const a = resolveClusterAccess({ env: { ...IN_CLUSTER }, home });
    expect(a?.server).toBe("https://laptop:6443");
    expect(a?.source).toBe(path.join(home, ".kube", "config"));
    expect(a?.namespace).toBe("team-a");
  });

  it("merges $KUBECONFIG's files, the first to name an entry winning, and skips missing ones", () => {
    const first = kubeconfig("a", { shared: "https://from-a:6443" }, "shared");
    const second = kubeconfig("b", { shared: "https://from-b:6443", only: "https://only-b:6443" }, "only");
    const env = { KUBECONFIG: [path.join(dir, "missing"), first, second].join(path.delimiter) };
    const a = resolveClusterAccess({ env, home });
    // current-context from the first file that sets one; the cluster "shared" from the first that defines it
    expect(a?.server).toBe("https://from-a:6443");
    expect(a?.source).toBe([first, second].join(path.delimiter));
    // ~/.kube/config is not read when KUBECONFIG is set
    kubeconfig("home/.kube/config", { shared: "https://home:6443" }, "shared");
    expect(resolveClusterAccess({ env, home })?.server).toBe("https://from-a:6443");
  });

  it("--context picks another context of the merged files; an unknown one is named", () => {
    const first = kubeconfig("a", { one: "https://one:6443" }, "one");
    const second = kubeconfig("b", { two: "https://two:6443" }, undefined, "ns-two");
    const env = { KUBECONFIG: [first, second].join(path.delimiter) };
    const a = resolveClusterAccess({ env, home, context: "two" });
    expect(a?.server).toBe("https://two:6443");
    expect(a?.namespace).toBe("ns-two");
    expect(() => resolveClusterAccess({ env, home, context: "three" })).toThrow(
      `${[first, second].join(path.delimiter)}: no context named "three"`,
    );
  });

  it("--kubeconfig overrides KUBECONFIG and ~/.kube/config, and must exist", () => {
    const explicit = kubeconfig("explicit", { e: "https://explicit:6443" }, "e");
    const env = { KUBECONFIG: kubeconfig("env", { v: "https://env:6443" }, "v") };
    kubeconfig("home/.kube/config", { h: "https://home:6443" }, "h");
    expect(resolveClusterAccess({ kubeconfig: explicit, env, home })?.server).toBe("https://explicit:6443");
    expect(() => resolveClusterAccess({ kubeconfig: path.join(dir, "nope"), env, home })).toThrow(
      `kubeconfig ${path.join(dir, "nope")}: no such file`,
    );
  });

  it("falls back to the in-cluster service account when no kubeconfig file exists", () => {
    const sa = serviceAccount("edge-system");
    const a = resolveClusterAccess({ env: { ...IN_CLUSTER }, home, serviceAccountDir: sa });
    expect(a?.source).toBe("in-cluster");
    expect(a?.server).toBe("https://10.96.0.1:443");
    expect(a?.namespace).toBe("edge-system");
    // as kubectl does, also when KUBECONFIG names only files that are not there
    const env = { ...IN_CLUSTER, KUBECONFIG: path.join(dir, "missing") };
    expect(resolveClusterAccess({ env, home, serviceAccountDir: sa })?.source).toBe("in-cluster");
  });

  it("none at all: undefined, or a reason when KUBECONFIG or --context asked for something", () => {
    expect(resolveClusterAccess({ env: {}, home })).toBeUndefined();
    const missing = path.join(dir, "missing");
    expect(() => resolveClusterAccess({ env: { KUBECONFIG: missing }, home })).toThrow(
      `${missing}: no kubeconfig file exists`,
    );
    expect(() => resolveClusterAccess({ env: {}, home, context: "prod" })).toThrow(
      /^--context prod: no kubeconfig to find it in/,
    );
  });
});
