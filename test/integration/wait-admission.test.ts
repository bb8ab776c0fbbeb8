// `edge-operator wait-admission` on the real control plane, as the chart's
// post-install hook runs it: the CRD, the webhooks and the finalizer policy
// created together (a fresh install), then the command, then a user's create.
// Until the apiserver's policy plugin has read the new CRD's schema (a 5 s
// poll) every create is refused with 503 "Resource kind ... not found"; the
// create after the command must pass whenever the command says so.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify as toYaml } from "yaml";
import { buildCrd } from "../../src/api/crd.js";
import { FINALIZER, GROUP, PLURAL } from "../../src/api/types.js";
import { startControlPlane } from "../harness/control-plane.js";
import {
  finalizerPolicy,
  mutatingWebhookConfiguration,
  validatingWebhookConfiguration,
} from "../harness/registration.js";
import type { ControlPlane, RunResult } from "../../tools/testenv/control-plane.js";
import { CLI, startServe, type ServeProcess } from "../../tools/testenv/operator.js";
import { run } from "../../tools/testenv/process.js";
import { NS, v2 } from "./admission-routes.js";

let cp: ControlPlane;
let serve: ServeProcess;

function waitAdmission(args: string[]): Promise<RunResult> {
  return run(process.execPath, [CLI, "wait-admission", "--kubeconfig", cp.kubeconfig, ...args], {
    timeoutMs: 120_000,
  });
}

beforeAll(async () => {
  cp = await startControlPlane();
  serve = await startServe({ args: ["--kubeconfig", cp.kubeconfig] });
  const ns = await cp.kubectl(["create", "namespace", NS]);
  expect(ns.code, ns.stderr).toBe(0);
}, 120_000);

afterAll(async () => {
  await serve?.stop();
  await cp?.stop();
});

describe("edge-operator wait-admission", () => {
  it("returns once a create is admitted with the finalizer, on a CRD and a finalizer policy made a moment ago", async () => {
    const client = { url: serve.url, caBundle: serve.caBundle };
    const objects = [
      buildCrd({ conversion: { url: `${serve.url}/convert`, caBundle: serve.caBundle } }),
      mutatingWebhookConfiguration({ client, finalizerPolicy: true }),
      validatingWebhookConfiguration({ client }),
      ...finalizerPolicy({ client }),
    ];
    const applied = await cp.kubectl(["apply", "-f", "-"], {
      input: objects.map((o) => toYaml(o)).join("---\n"),
    });
    expect(applied.code, applied.stderr).toBe(0);
    const established = await cp.kubectl([
      "wait",
      "--for=condition=Established",
      `crd/${PLURAL}.${GROUP}`,
      "--timeout=60s",
    ]);
    expect(established.code, established.stderr).toBe(0);

    const waited = await waitAdmission(["--namespace", NS, "--timeout", "90s"]);
    // What it waited through, for the log: the policy plugin's 503, webhooks not yet called.
    process.stderr.write(`wait-admission: ${waited.stderr}${waited.stdout}`);
    expect(waited.code, waited.stderr).toBe(0);
    expect(waited.stdout).toMatch(/^admission ready: a dry-run EdgeRoute create in admission was admitted/);

    // The user's create, at once: admitted, and the finalizer is there.
    const created = await cp.kubectl(["create", "-f", "-", "-o", "jsonpath={.metadata.finalizers}"], {
      input: toYaml(v2("first")),
    });
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toBe(`["${FINALIZER}"]`);
    // The probes were dry runs: nothing else is stored.
    const names = await cp.kubectl(["get", `${PLURAL}.${GROUP}`, "-n", NS, "-o", "name"]);
    expect(names.stdout.trim().split("\n")).toEqual([`edgeroute.${GROUP}/first`]);
  });

  it("gives up after --timeout with the apiserver's last answer, exit 1", async () => {
    const started = Date.now();
    const waited = await waitAdmission(["--namespace", "not-there", "--timeout", "3s"]);
    expect(waited.code).toBe(1);
    expect(waited.stderr).toContain('namespaces "not-there" not found');
    expect(waited.stderr).toMatch(
      /edge-operator wait-admission: not admitted after [0-9.]+ s \(\d+ probe\(s\)\)/,
    );
    expect(Date.now() - started).toBeLessThan(30_000);
  });

  it("refuses a bad --timeout before it calls anything, exit 2", async () => {
    const waited = await waitAdmission(["--timeout", "soon"]);
    expect(waited.code).toBe(2);
    expect(waited.stderr).toContain("--timeout");
  });
});
