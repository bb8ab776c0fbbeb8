// The expiry gauge and the CertificateExpiring warning: from real certificates
// (node-forge, read back by node:crypto), about the routes that reference them.

import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import type { EdgeRouteV2 } from "../api/types.js";
import { createCa, issueCertificate, type KeyPair } from "../certs/pki.js";
import { silentLogger } from "../observability/logger.js";
import type { EventRecorder } from "./events.js";
import { CertificateExpiry, certificateNotAfterMs } from "./certificate-expiry.js";

const DAY = 86_400_000;
const ca = createCa();
const leaf = (days: number): KeyPair =>
  issueCertificate(ca, {
    commonName: "shop.example.com",
    dnsNames: ["shop.example.com"],
    usage: "server",
    days,
  });

function route(name: string, secretName: string): EdgeRouteV2 {
  return {
    apiVersion: "net.10xdev.io/v2",
    kind: "EdgeRoute",
    metadata: { namespace: "shop", name, uid: `uid-${name}` },
    spec: {
      hostnames: ["shop.example.com"],
      rules: [{ matches: [{ path: { value: "/" } }], backends: [{ name: "shop", port: 80 }] }],
      tls: { secretName },
    },
  };
}

function recorder(): EventRecorder & {
  events: { route: string; type: string; reason: string; message: string }[];
} {
  const events: { route: string; type: string; reason: string; message: string }[] = [];
  return {
    events,
    record: (r, type, reason, message) => {
      events.push({ route: r.metadata.name ?? "", type, reason, message });
      return Promise.resolve();
    },
    recordOn: () => Promise.resolve(),
  };
}

describe("certificate expiry", () => {
  it("reads notAfter from the first certificate of a PEM, and nothing from what is not one", () => {
    const soon = leaf(10);
    const ms = certificateNotAfterMs(soon.cert + ca.cert);
    expect(ms).toBeGreaterThan(Date.now() + 9 * DAY);
    expect(ms).toBeLessThan(Date.now() + 11 * DAY);
    expect(certificateNotAfterMs("not a certificate")).toBeUndefined();
    expect(
      certificateNotAfterMs("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"),
    ).toBeUndefined();
  });

  it("sets the gauge for each parseable certificate and warns each route referencing one that expires within the window", async () => {
    const registry = new Registry();
    const events = recorder();
    const soon = leaf(10);
    const later = leaf(90);
    const expiry = new CertificateExpiry({ events, log: silentLogger(), registry, warnWithinMs: 14 * DAY });
    const secrets = new Map([
      ["shop/soon", { certificate: soon.cert, privateKey: soon.key }],
      ["shop/later", { certificate: later.cert, privateKey: later.key }],
      ["shop/broken", { certificate: "garbage", privateKey: "garbage" }],
    ]);
    const routes = [route("a", "soon"), route("b", "soon"), route("c", "later"), route("d", "broken")];
    await expiry.check(routes, secrets);

    const metric = await registry.getSingleMetricAsString(
      "edge_operator_tls_certificate_expiry_timestamp_seconds",
    );
    const soonSeconds = Math.floor((certificateNotAfterMs(soon.cert) ?? 0) / 1000);
    expect(metric).toContain(`{namespace="shop",secret="soon"} ${soonSeconds}`);
    expect(metric).toContain(`secret="later"`);
    expect(metric).not.toContain(`secret="broken"`);

    expect(events.events.map((e) => `${e.route} ${e.type} ${e.reason}`)).toEqual([
      "a Warning CertificateExpiring",
      "b Warning CertificateExpiring",
    ]);
    expect(events.events[0]?.message).toMatch(
      /^the certificate in Secret shop\/soon expires at \S+ \(in 9d2\dh\); renew it/,
    );
    for (const e of events.events) {
      expect(e.message).not.toContain("PRIVATE KEY");
      expect(e.message).not.toContain(soon.key.slice(40, 80));
    }

    // Again at once: not recorded again; renewed: nothing more; the gauge follows.
    await expiry.check(routes, secrets);
    expect(events.events).toHaveLength(2);
    const renewed = new Map(secrets).set("shop/soon", { certificate: later.cert, privateKey: later.key });
    await expiry.check(routes, renewed);
    expect(events.events).toHaveLength(2);
    const after = await registry.getSingleMetricAsString(
      "edge_operator_tls_certificate_expiry_timestamp_seconds",
    );
    expect(after).not.toContain(`secret="soon"} ${soonSeconds}`);
  });

  it("says an expired certificate expired, and warns again after the repeat interval", async () => {
    const events = recorder();
    let now = Date.now() + 20 * DAY;
    const soon = leaf(10);
    const expiry = new CertificateExpiry({
      events,
      log: silentLogger(),
      now: () => now,
      repeatMs: 3_600_000,
    });
    const secrets = new Map([["shop/soon", { certificate: soon.cert, privateKey: soon.key }]]);
    await expiry.check([route("a", "soon")], secrets);
    expect(events.events[0]?.message).toMatch(/expired at .* ago\); HTTPS clients refuse it$/);
    now += 3_600_001;
    await expiry.check([route("a", "soon")], secrets);
    expect(events.events).toHaveLength(2);
  });
});
