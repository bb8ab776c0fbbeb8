// The test control plane itself: a real kube-apiserver and etcd, real kubectl
// and helm, at the pinned versions.

import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CustomObjectsApi, VersionApi } from "@kubernetes/client-node";
import { stringify as toYaml } from "yaml";
import { startControlPlane } from "../harness/control-plane.js";
import type { ControlPlane } from "../../tools/testenv/control-plane.js";
import { REPO_ROOT } from "../../tools/testenv/testbin.js";

function pinnedKubernetesVersion(): string {
  const gomod = readFileSync(path.join(REPO_ROOT, "hack/testbin/kubernetes/go.mod"), "utf8");
  const m = /^require k8s\.io\/kubernetes (v\S+)/m.exec(gomod);
  if (!m?.[1]) throw new Error("hack/testbin/kubernetes/go.mod pins no k8s.io/kubernetes version");
  return m[1];
}

const widgetCrd = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: "widgets.smoke.example.com" },
  spec: {
    group: "smoke.example.com",
    scope: "Namespaced",
    names: { plural: "widgets", singular: "widget", kind: "Widget", listKind: "WidgetList" },
    versions: [
      {
        name: "v1",
        served: true,
        storage: true,
        schema: {
          openAPIV3Schema: {
            type: "object",
            properties: { spec: { type: "object", properties: { size: { type: "integer", minimum: 1 } } } },
          },
        },
      },
    ],
  },
};

describe("test control plane", () => {
  let cp: ControlPlane;

  beforeAll(async () => {
    cp = await startControlPlane();
  });
  afterAll(async () => {
    await cp?.stop();
  });

  it("reports the pinned Kubernetes version on /version", async () => {
    const v = await cp.kubeConfig().makeApiClient(VersionApi).getCode();
    expect(v.gitVersion).toBe(pinnedKubernetesVersion());
    const kubectl = await cp.kubectl(["version", "-o", "json"]);
    expect(kubectl.code, kubectl.stderr).toBe(0);
    const both = JSON.parse(kubectl.stdout) as {
      clientVersion: { gitVersion: string };
      serverVersion: { gitVersion: string };
    };
    expect(both.clientVersion.gitVersion).toBe(pinnedKubernetesVersion());
    expect(both.serverVersion.gitVersion).toBe(pinnedKubernetesVersion());
  });

  it("applies a CRD with kubectl and waits for it to be Established", async () => {
    const apply = await cp.kubectl(["apply", "-f", "-"], { input: toYaml(widgetCrd) });
    expect(apply.code, apply.stderr).toBe(0);
    expect(apply.stdout).toContain(
      "customresourcedefinition.apiextensions.k8s.io/widgets.smoke.example.com created",
    );
    const wait = await cp.kubectl([
      "wait",
      "--for=condition=Established",
      "crd/widgets.smoke.example.com",
      "--timeout=60s",
    ]);
    expect(wait.code, wait.stderr).toBe(0);
  });

  it("creates and reads a custom object with @kubernetes/client-node, and the schema is enforced", async () => {
    const api = cp.kubeConfig().makeApiClient(CustomObjectsApi);
    const target = { group: "smoke.example.com", version: "v1", namespace: "default", plural: "widgets" };
    await api.createNamespacedCustomObject({
      ...target,
      body: {
        apiVersion: "smoke.example.com/v1",
        kind: "Widget",
        metadata: { name: "w1" },
        spec: { size: 3 },
      },
    });
    const got = (await api.getNamespacedCustomObject({ ...target, name: "w1" })) as {
      spec: { size: number };
    };
    expect(got.spec.size).toBe(3);
    await expect(
      api.createNamespacedCustomObject({
        ...target,
        body: {
          apiVersion: "smoke.example.com/v1",
          kind: "Widget",
          metadata: { name: "w2" },
          spec: { size: 0 },
        },
      }),
    ).rejects.toThrow(/spec.size/);
  });

  it("runs helm against the apiserver", async () => {
    const version = await cp.helm(["version", "--short"]);
    expect(version.code, version.stderr).toBe(0);
    expect(version.stdout).toMatch(/^v3\.\d+\.\d+/);
    const list = await cp.helm(["list", "--all-namespaces", "-o", "json"]);
    expect(list.code, list.stderr).toBe(0);
    expect(JSON.parse(list.stdout)).toEqual([]);
  });

  it("gives a restricted identity only what its Role allows", async () => {
    await cp.kubectl(["create", "namespace", "limited"]);
    const kc = await cp.restrictedKubeconfig(
      "reader",
      [{ apiGroups: [""], resources: ["configmaps"], verbs: ["get", "list"] }],
      "limited",
    );
    const allowed = await cp.kubectl(["get", "configmaps", "-n", "limited"], { kubeconfig: kc });
    expect(allowed.code, allowed.stderr).toBe(0);
    const denied = await cp.kubectl(["create", "configmap", "x", "-n", "limited"], { kubeconfig: kc });
    expect(denied.code).toBe(1);
    expect(denied.stderr).toContain('User "reader" cannot create resource "configmaps"');
    const elsewhere = await cp.kubectl(["get", "configmaps", "-n", "default"], { kubeconfig: kc });
    expect(elsewhere.code).toBe(1);
    expect(elsewhere.stderr).toMatch(/forbidden/);
  });
});
