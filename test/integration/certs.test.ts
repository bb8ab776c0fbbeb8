// Certificates in the cluster, on the real apiserver: replicas racing to create
// and to renew the Secret agree on one CA; the CA bundle lands in the webhook
// configurations and the CRD; `serve --cert-secret` renews and hot-reloads its
// certificate with no restart and no failed request.

import https from "node:https";
import tls from "node:tls";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AdmissionregistrationV1Api,
  ApiextensionsV1Api,
  CoreV1Api,
  KubeConfig,
  type V1CustomResourceDefinition,
  type V1MutatingWebhookConfiguration,
  type V1ValidatingWebhookConfiguration,
} from "@kubernetes/client-node";
import { buildCrd } from "../../src/api/crd.js";
import { injectCaBundle } from "../../src/certs/ca-injector.js";
import { startManagedCerts } from "../../src/certs/managed-serving.js";
import { ensureClientSecret } from "../../src/certs/client-secret.js";
import { describeCertificate, isIssuedBy, issueCertificate, splitPemBundle } from "../../src/certs/pki.js";
import { renewedMaterial } from "../../src/certs/renewal.js";
import { ensureCertSecret, materialFromSecret, secretFromMaterial } from "../../src/certs/secret-store.js";
import { mutatingWebhookConfiguration, validatingWebhookConfiguration } from "../harness/registration.js";
import { startControlPlane } from "../harness/control-plane.js";
import type { ControlPlane } from "../../tools/testenv/control-plane.js";
import { startCli, httpsStatus } from "../../tools/testenv/operator.js";
import { freePort, waitFor } from "../../tools/testenv/process.js";

const NS = "edge-system";
const DAY = 24 * 60 * 60 * 1000;
let cp: ControlPlane;

/** The product's client: a separate one per caller, as separate replicas would have. */
const kube = () => cp.kube();

/** The test's own checks read through client-node's generated client. */
const core = (): CoreV1Api => {
  const kc = new KubeConfig();
  kc.loadFromFile(cp.kubeconfig);
  return kc.makeApiClient(CoreV1Api);
};

beforeAll(async () => {
  cp = await startControlPlane();
  await core().createNamespace({ body: { metadata: { name: NS } } });
});

afterAll(async () => {
  await cp?.stop();
});

describe("the certificate Secret", () => {
  const identity = { service: "edge-operator", namespace: NS };

  it("is created once when several replicas bootstrap at the same time, and all end with the same CA", async () => {
    const secret = { namespace: NS, name: "race-tls" };
    const results = await Promise.all(
      Array.from({ length: 6 }, () => ensureCertSecret(kube(), { secret, identity })),
    );
    expect(results.filter((r) => r.action === "created")).toHaveLength(1);
    expect(results.filter((r) => r.action === "loaded")).toHaveLength(5);
    expect(new Set(results.map((r) => r.material.ca.cert)).size).toBe(1);
    expect(new Set(results.map((r) => r.material.serving.cert)).size).toBe(1);
    const list = await core().listNamespacedSecret({
      namespace: NS,
      fieldSelector: "metadata.name=race-tls",
    });
    expect(list.items).toHaveLength(1);
    expect(list.items[0]?.type).toBe("kubernetes.io/tls");
    expect(materialFromSecret(list.items[0] ?? {})?.ca.cert).toBe(results[0]?.material.ca.cert);
  });

  it("is renewed once when several replicas find it due, with the CA kept", async () => {
    const secret = { namespace: NS, name: "race-tls" };
    const before = await ensureCertSecret(kube(), { secret, identity });
    const later = () => new Date(Date.now() + 300 * DAY); // 65 days left: inside the 90-day margin
    const results = await Promise.all(
      Array.from({ length: 5 }, () => ensureCertSecret(kube(), { secret, identity, now: later })),
    );
    expect(results.filter((r) => r.action === "renewed")).toHaveLength(1);
    expect(new Set(results.map((r) => r.material.serving.cert)).size).toBe(1);
    expect(results[0]?.material.serving.cert).not.toBe(before.material.serving.cert);
    expect(new Set(results.map((r) => r.material.ca.cert))).toEqual(new Set([before.material.ca.cert]));
  });
});

describe("the proxies' client pair Secret", () => {
  const identity = { service: "edge-operator", namespace: NS };

  it("is created once by racing replicas, renewed once when the CA rotates, and holds no CA key", async () => {
    const serving = await ensureCertSecret(kube(), {
      secret: { namespace: NS, name: "client-race-tls" },
      identity,
    });
    const secret = { namespace: NS, name: "client-race-envoy" };
    const ensure = (ca: typeof serving.material) =>
      ensureClientSecret(kube(), { secret, ca: ca.ca, caBundle: ca.caBundle });
    const first = await Promise.all(Array.from({ length: 6 }, () => ensure(serving.material)));
    expect(first.filter((r) => r.action === "created")).toHaveLength(1);
    expect(new Set(first.map((r) => r.material.pair.cert)).size).toBe(1);
    const stored = await core().readNamespacedSecret({ namespace: NS, name: secret.name });
    expect(stored.type).toBe("kubernetes.io/tls");
    expect(Object.keys(stored.data ?? {}).sort()).toEqual(["ca.crt", "tls.crt", "tls.key"]);
    const cert = first[0]?.material.pair.cert ?? "";
    expect(describeCertificate(cert).commonName).toBe("envoy");
    expect(isIssuedBy(serving.material.ca.cert, cert)).toBe(true);

    // A CA rotation (the serving Secret's, as renewal.ts makes it): one replica reissues, all agree.
    const rotated = renewedMaterial(
      serving.material,
      { renew: true, what: "ca", reason: "test" },
      identity,
      new Date(),
    );
    const second = await Promise.all(Array.from({ length: 5 }, () => ensure(rotated)));
    expect(second.filter((r) => r.action === "renewed")).toHaveLength(1);
    expect(second.find((r) => r.action === "renewed")?.reason).toBe(
      "the client certificate was not issued by the current CA",
    );
    expect(new Set(second.map((r) => r.material.pair.cert)).size).toBe(1);
    const renewed = second[0]?.material ?? { pair: { cert: "" }, caBundle: "" };
    expect(isIssuedBy(rotated.ca.cert, renewed.pair.cert)).toBe(true);
    // ca.crt holds both CAs while the old one is valid: the proxy trusts servers not yet reloaded.
    expect(renewed.caBundle).toBe(rotated.caBundle);
    expect(splitPemBundle(renewed.caBundle)).toHaveLength(2);
  });
});

describe("CA injection", () => {
  it("writes the bundle into both webhook configurations and the CRD's conversion webhook, once", async () => {
    const kc = cp.kubeConfig();
    const adm = kc.makeApiClient(AdmissionregistrationV1Api);
    const ext = kc.makeApiClient(ApiextensionsV1Api);
    // Registered without a caBundle, the way the chart renders them in the cluster.
    const client = { service: { name: "edge-operator", namespace: NS, port: 443 } };
    await adm.createMutatingWebhookConfiguration({
      body: mutatingWebhookConfiguration({ client }) as V1MutatingWebhookConfiguration,
    });
    await adm.createValidatingWebhookConfiguration({
      body: validatingWebhookConfiguration({ client }) as V1ValidatingWebhookConfiguration,
    });
    await ext.createCustomResourceDefinition({
      body: buildCrd({
        conversion: { service: { name: "edge-operator", namespace: NS, path: "/convert", port: 443 } },
      }) as V1CustomResourceDefinition,
    });
    const stored = await ensureCertSecret(kube(), {
      secret: { namespace: NS, name: "inject-tls" },
      identity: { service: "edge-operator", namespace: NS },
    });
    const bundle = Buffer.from(stored.material.caBundle).toString("base64");
    const targets = {
      mutatingWebhookConfigurations: ["edge-operator-mutate"],
      validatingWebhookConfigurations: ["edge-operator-validate", "not-there"],
      customResourceDefinitions: ["edgeroutes.net.10xdev.io"],
    };
    const first = await injectCaBundle(kube(), bundle, targets);
    expect(first.map((r) => `${r.name}:${r.outcome}`)).toEqual([
      "edge-operator-mutate:patched",
      "edge-operator-validate:patched",
      "not-there:missing",
      "edgeroutes.net.10xdev.io:patched",
    ]);
    const m = await adm.readMutatingWebhookConfiguration({ name: "edge-operator-mutate" });
    const v = await adm.readValidatingWebhookConfiguration({ name: "edge-operator-validate" });
    const crd = await ext.readCustomResourceDefinition({ name: "edgeroutes.net.10xdev.io" });
    expect(m.webhooks?.[0]?.clientConfig.caBundle).toBe(bundle);
    expect(v.webhooks?.[0]?.clientConfig.caBundle).toBe(bundle);
    expect(crd.spec.conversion?.webhook?.clientConfig?.caBundle).toBe(bundle);
    // Idempotent: nothing is written when the bundle is already in place.
    const second = await injectCaBundle(kube(), bundle, targets);
    expect(second.map((r) => r.outcome)).toEqual(["unchanged", "unchanged", "missing", "unchanged"]);
    const again = await adm.readMutatingWebhookConfiguration({ name: "edge-operator-mutate" });
    expect(again.metadata?.resourceVersion).toBe(m.metadata?.resourceVersion);
  });
});

describe("CA injection into a registration that does not exist yet", () => {
  it("retries within seconds, not at the hourly check", async () => {
    const adm = cp.kubeConfig().makeApiClient(AdmissionregistrationV1Api);
    const name = "late-edge-operator";
    const managed = await startManagedCerts(kube(), {
      secret: { namespace: NS, name: "late-tls" },
      identity: { service: "edge-operator", namespace: NS },
      inject: { validatingWebhookConfigurations: [`${name}-validate`] },
      renewBeforeDays: 90,
      checkIntervalMs: 3_600_000,
      retryMinMs: 200,
      retryMaxMs: 2_000,
    });
    const errors: unknown[] = [];
    managed.start(
      () => undefined,
      (e) => errors.push(e),
    );
    try {
      // helm creates the registration after the server started.
      await new Promise((r) => setTimeout(r, 1500));
      const client = { service: { name: "edge-operator", namespace: NS, port: 443 } };
      await adm.createValidatingWebhookConfiguration({
        body: validatingWebhookConfiguration({ client, name }) as V1ValidatingWebhookConfiguration,
      });
      const bundle = Buffer.from(managed.caBundle).toString("base64");
      const started = Date.now();
      await waitFor(
        "the CA bundle in the late registration",
        async () => {
          const v = await adm.readValidatingWebhookConfiguration({ name: `${name}-validate` });
          return v.webhooks?.[0]?.clientConfig.caBundle === bundle ? true : undefined;
        },
        15_000,
        100,
      );
      expect(Date.now() - started).toBeLessThan(15_000);
      expect(errors).toEqual([]);
    } finally {
      managed.stop();
    }
  });
});

describe("CA injection by replicas at the same time", () => {
  it("patches each target once; the others fail the resourceVersion test, read again and find it in place", async () => {
    const adm = cp.kubeConfig().makeApiClient(AdmissionregistrationV1Api);
    const client = { service: { name: "edge-operator", namespace: NS, port: 443 } };
    await adm.createMutatingWebhookConfiguration({
      body: mutatingWebhookConfiguration({ client, name: "race" }) as V1MutatingWebhookConfiguration,
    });
    await adm.createValidatingWebhookConfiguration({
      body: validatingWebhookConfiguration({ client, name: "race" }) as V1ValidatingWebhookConfiguration,
    });
    const bundle = Buffer.from("-----BEGIN CERTIFICATE-----\nrace\n-----END CERTIFICATE-----\n").toString(
      "base64",
    );
    const targets = {
      mutatingWebhookConfigurations: ["race-mutate"],
      validatingWebhookConfigurations: ["race-validate"],
    };
    const results = await Promise.all(
      Array.from({ length: 6 }, () => injectCaBundle(kube(), bundle, targets)),
    );
    for (const i of [0, 1]) {
      const outcomes = results.map((r) => r[i]?.outcome);
      expect(outcomes.filter((o) => o === "patched")).toHaveLength(1);
      expect(outcomes.filter((o) => o === "unchanged")).toHaveLength(5);
    }
    const m = await adm.readMutatingWebhookConfiguration({ name: "race-mutate" });
    const v = await adm.readValidatingWebhookConfiguration({ name: "race-validate" });
    expect(m.webhooks?.map((w) => w.clientConfig.caBundle)).toEqual([bundle, bundle]);
    expect(v.webhooks?.map((w) => w.clientConfig.caBundle)).toEqual([bundle, bundle]);
  });
});

describe("serve --cert-secret without the right to read Secrets", () => {
  it("exits at once with the apiserver's one-line reason", async () => {
    const kubeconfig = await cp.restrictedKubeconfig(
      "no-secrets",
      [{ apiGroups: [""], resources: ["configmaps"], verbs: ["get"] }],
      NS,
    );
    const port = await freePort();
    const proc = startCli(
      "serve-denied",
      [
        "serve",
        "--listen",
        `127.0.0.1:${port}`,
        "--cert-secret",
        `${NS}/denied-tls`,
        "--cert-dns",
        "localhost",
      ],
      { KUBECONFIG: kubeconfig },
    );
    try {
      expect(await proc.exited).toBe(1);
      expect(proc.output()).toContain(
        `edge-operator serve: GET /api/v1/namespaces/${NS}/secrets/denied-tls: 403 secrets "denied-tls" is forbidden: User "no-secrets" cannot get resource "secrets" in API group "" in the namespace "${NS}"`,
      );
    } finally {
      await proc.stop();
    }
  });
});

/** The serial of the certificate a TLS server presents. */
function servedSerial(port: number, caPem: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host: "127.0.0.1", port, ca: caPem, servername: "localhost" }, () => {
      const serial = s.getPeerCertificate().serialNumber;
      s.end();
      resolve(serial.toLowerCase().replace(/^0+/, ""));
    });
    s.on("error", reject);
  });
}

/** POSTs an AdmissionReview for a valid v2 route to /validate; resolves with whether it was answered and allowed. */
function admitted(port: number, caPem: string, n: number): Promise<boolean> {
  const body = JSON.stringify({
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    request: {
      uid: `uid-${n}`,
      kind: { group: "net.10xdev.io", version: "v2", kind: "EdgeRoute" },
      resource: { group: "net.10xdev.io", version: "v2", resource: "edgeroutes" },
      operation: "CREATE",
      name: `load-${n}`,
      namespace: "default",
      object: {
        apiVersion: "net.10xdev.io/v2",
        kind: "EdgeRoute",
        metadata: { name: `load-${n}`, namespace: "default" },
        spec: {
          rules: [
            { matches: [{ path: { value: `/load/${n}` } }], backends: [{ name: "checkout", port: 8080 }] },
          ],
        },
      },
    },
  });
  return new Promise((resolve) => {
    const req = https.request(
      {
        host: "127.0.0.1",
        port,
        path: "/validate",
        method: "POST",
        ca: caPem,
        servername: "localhost",
        headers: { "content-type": "application/json" },
        timeout: 5000,
      },
      (res) => {
        let text = "";
        res.on("data", (c: Buffer) => (text += c.toString()));
        res.on("end", () => {
          try {
            resolve(
              res.statusCode === 200 &&
                (JSON.parse(text) as { response?: { allowed?: boolean } }).response?.allowed === true,
            );
          } catch {
            resolve(false);
          }
        });
      },
    );
    req.on("error", () => resolve(false));
    req.on("timeout", () => req.destroy());
    req.end(body);
  });
}

describe("serve --cert-secret", () => {
  it("bootstraps from the Secret, then renews and reloads its certificate with no restart and no failed request", async () => {
    const port = await freePort();
    const proc = startCli(
      "serve",
      [
        "serve",
        "--listen",
        `127.0.0.1:${port}`,
        "--cert-secret",
        `${NS}/serve-tls`,
        "--cert-dns",
        "localhost",
        "--cert-ip",
        "127.0.0.1",
        "--cert-check-interval",
        "1",
        "--inject-ca",
        "--webhook-config-name",
        "edge-operator",
      ],
      { KUBECONFIG: cp.kubeconfig },
    );
    try {
      const api = core();
      const secret = await waitFor(
        "the Secret",
        async () => {
          try {
            return await api.readNamespacedSecret({ name: "serve-tls", namespace: NS });
          } catch {
            return undefined;
          }
        },
        30_000,
        100,
      ).catch((e: Error) => {
        throw new Error(`${e.message}\n${proc.output()}`);
      });
      const material = materialFromSecret(secret);
      if (!material) throw new Error("the Secret holds no material");
      const url = `https://127.0.0.1:${port}/readyz`;
      await waitFor(
        "readyz",
        async () => ((await httpsStatus(url, material.caBundle)) === 200 ? true : undefined),
        30_000,
        100,
      );
      const first = await servedSerial(port, material.caBundle);
      expect(first).toBe(describeCertificate(material.serving.cert).serial.toLowerCase().replace(/^0+/, ""));

      // The bundle was injected into the webhook configurations (created by the test above).
      const adm = cp.kubeConfig().makeApiClient(AdmissionregistrationV1Api);
      await waitFor(
        "injection",
        async () => {
          const m = await adm.readMutatingWebhookConfiguration({ name: "edge-operator-mutate" });
          return m.webhooks?.[0]?.clientConfig.caBundle === Buffer.from(material.caBundle).toString("base64")
            ? true
            : undefined;
        },
        15_000,
        200,
      );

      // Make the stored certificate nearly expired: the next check renews it from the same CA.
      const short = issueCertificate(material.ca, {
        commonName: "localhost",
        dnsNames: ["localhost"],
        ips: ["127.0.0.1"],
        usage: "server",
        days: 10,
      });
      await api.replaceNamespacedSecret({
        name: "serve-tls",
        namespace: NS,
        body: secretFromMaterial(
          { namespace: NS, name: "serve-tls" },
          { ...material, serving: short },
          {},
          secret.metadata?.resourceVersion,
        ),
      });

      // A load generator sends admission reviews through the whole rotation.
      let failures = 0;
      let requests = 0;
      let admissions = 0;
      let denied = 0;
      let loading = true;
      const load = (async () => {
        while (loading) {
          admissions++;
          if (!(await admitted(port, material.caBundle, admissions))) denied++;
        }
      })();
      const renewed = await waitFor(
        "a renewed certificate",
        async () => {
          requests++;
          if ((await httpsStatus(url, material.caBundle)) !== 200) failures++;
          const serial = await servedSerial(port, material.caBundle);
          const shortSerial = describeCertificate(short.cert).serial.toLowerCase().replace(/^0+/, "");
          return serial !== first && serial !== shortSerial ? serial : undefined;
        },
        30_000,
        50,
      );
      const now = materialFromSecret(await api.readNamespacedSecret({ name: "serve-tls", namespace: NS }));
      expect(renewed).toBe(
        describeCertificate(now?.serving.cert ?? "")
          .serial.toLowerCase()
          .replace(/^0+/, ""),
      );
      expect(now?.ca.cert).toBe(material.ca.cert);
      // Keep the load on for a moment after the switch, then stop it.
      await new Promise((r) => setTimeout(r, 500));
      loading = false;
      await load;
      expect(requests).toBeGreaterThan(1);
      expect(failures).toBe(0);
      expect(admissions).toBeGreaterThan(10);
      expect(denied).toBe(0);
      expect(proc.child.exitCode).toBeNull();
    } finally {
      await proc.stop();
    }
  });
});
