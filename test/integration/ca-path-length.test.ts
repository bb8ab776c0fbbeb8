// The built-in CA signs leaves only (pathLenConstraint 0), as the apiserver's
// own verifier (Go's crypto/x509) sees it: two admission webhooks trust the
// same CA (a caBundle from src/certs/serving.ts), one served with a leaf the
// CA signed, one with a leaf behind an intermediate CA signed with the CA's
// key, which is what whoever steals that key could hand out. The apiserver
// must call the first and refuse the second's certificate.

import { randomUUID } from "node:crypto";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify as toYaml } from "yaml";
import { issueCertificate, type KeyPair } from "../../src/certs/pki.js";
import { newServingMaterial } from "../../src/certs/serving.js";
import { intermediateCa } from "../fixtures/rogue-ca.js";
import { startControlPlane } from "../harness/control-plane.js";
import type { ControlPlane } from "../../tools/testenv/control-plane.js";
import { must, waitFor } from "../../tools/testenv/process.js";

let cp: ControlPlane;
const servers: https.Server[] = [];

interface Webhook {
  readonly url: string;
  /** AdmissionReviews it answered. */
  calls: number;
}

/** An admission webhook on loopback that allows everything, served with `chain`. */
async function webhook(chain: KeyPair): Promise<Webhook> {
  const hook: Webhook = { url: "", calls: 0 };
  const server = https.createServer({ cert: chain.cert, key: chain.key }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      hook.calls++;
      const review = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { request: { uid: string } };
      res.writeHead(200, { "content-type": "application/json" }).end(
        JSON.stringify({
          apiVersion: "admission.k8s.io/v1",
          kind: "AdmissionReview",
          response: { uid: review.request.uid, allowed: true },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  servers.push(server);
  return Object.assign(hook, { url: `https://127.0.0.1:${(server.address() as AddressInfo).port}/` });
}

/** A ValidatingWebhookConfiguration for ConfigMaps in namespace `ns`, calling `url`, trusting `caPem`. */
function registration(ns: string, url: string, caPem: string): Record<string, unknown> {
  return {
    apiVersion: "admissionregistration.k8s.io/v1",
    kind: "ValidatingWebhookConfiguration",
    metadata: { name: `ca-path-length-${ns}` },
    webhooks: [
      {
        name: `${ns}.ca-path-length.test`,
        clientConfig: { url, caBundle: Buffer.from(caPem).toString("base64") },
        rules: [{ apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["configmaps"] }],
        namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": ns } },
        failurePolicy: "Fail",
        sideEffects: "None",
        admissionReviewVersions: ["v1"],
        timeoutSeconds: 5,
      },
    ],
  };
}

const createConfigMap = (ns: string) =>
  cp.kubectl(["create", "configmap", `cm-${randomUUID().slice(0, 8)}`, "-n", ns]);

beforeAll(async () => {
  cp = await startControlPlane();
});

afterAll(async () => {
  for (const s of servers) s.close();
  await cp?.stop();
});

describe("the built-in CA, as the apiserver verifies it", () => {
  it("is trusted for a leaf it signed, not for one behind an intermediate CA signed with its key", async () => {
    // The built-in material, as serve --cert-secret makes it, for the address the apiserver dials.
    const material = newServingMaterial({ ips: ["127.0.0.1"] });
    const rogue = intermediateCa(material.ca);
    const rogueLeaf = issueCertificate(rogue, {
      commonName: "127.0.0.1",
      ips: ["127.0.0.1"],
      usage: "server",
    });
    const direct = await webhook(material.serving);
    const behind = await webhook({ cert: rogueLeaf.cert + rogue.cert, key: rogueLeaf.key });
    for (const ns of ["direct", "behind"]) await must(`create ns ${ns}`, cp.kubectl(["create", "ns", ns]));
    await must(
      "register the webhooks",
      cp.kubectl(["apply", "-f", "-"], {
        input: [
          registration("direct", direct.url, material.caBundle),
          registration("behind", behind.url, material.caBundle),
        ]
          .map((r) => toYaml(r))
          .join("---\n"),
      }),
    );

    // The apiserver takes registrations in a moment after they are made: until it calls the webhook.
    await waitFor("the apiserver calling the directly signed webhook", async () => {
      await must("create a ConfigMap", createConfigMap("direct"));
      return direct.calls > 0 ? true : undefined;
    });

    // Refused at the handshake (Go: "x509: too many intermediates for path length constraint"),
    // so, failurePolicy Fail, the create is. Before the registration is taken the create goes
    // through without a call; once the webhook has been called, the apiserver trusted the chain.
    const refusal = await waitFor(
      "the create in the namespace behind the intermediate refused",
      async () => {
        const r = await createConfigMap("behind");
        if (r.code !== 0) return r.stderr;
        if (behind.calls > 0) return `the apiserver trusted the chain: ${behind.calls} call(s)`;
        return undefined;
      },
      30_000,
      250,
    );
    expect(refusal).toContain("failed calling webhook");
    expect(refusal).toMatch(/x509: .*path length/);
    expect(behind.calls).toBe(0);
  });
});
