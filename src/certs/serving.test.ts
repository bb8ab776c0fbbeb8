import { X509Certificate } from "node:crypto";
import { describe, expect, it } from "vitest";
import { describeCertificate, isIssuedBy, keyMatchesCertificate } from "./pki.js";
import { issueServing, newServingMaterial, servingNames } from "./serving.js";

const DAY = 24 * 60 * 60 * 1000;
const now = new Date("2026-01-01T00:00:00Z");

describe("servingNames", () => {
  it("covers every name a Service answers to, then the extra names and IPs, without duplicates", () => {
    expect(
      servingNames({
        service: "edge",
        namespace: "ops",
        dnsNames: ["edge.local", "edge"],
        ips: ["127.0.0.1", "::1"],
      }),
    ).toEqual({
      dnsNames: ["edge", "edge.ops", "edge.ops.svc", "edge.ops.svc.cluster.local", "edge.local"],
      ips: ["127.0.0.1", "::1"],
    });
  });

  it.each([
    [{ service: "edge" }, "a service name needs a namespace"],
    [{ service: "Edge", namespace: "ops" }, 'service "Edge" is not a DNS-1123 label'],
    [{ dnsNames: ["bad_name"] }, 'DNS name "bad_name" is not a lowercase DNS-1123 subdomain'],
    [{ ips: ["300.1.1.1"] }, '"300.1.1.1" is not an IP address'],
    [{}, "no names"],
  ])("refuses %j with a clear reason", (id, message) => {
    expect(() => servingNames(id)).toThrow(message);
  });
});

// Key generation is CPU-bound; on a busy machine a few keys take seconds.
describe("newServingMaterial", { timeout: 30_000 }, () => {
  const m = newServingMaterial({ service: "edge", namespace: "ops", ips: ["127.0.0.1"] }, now);

  it("makes a 10-year CA and a 1-year serving certificate it signed", () => {
    const ca = describeCertificate(m.ca.cert);
    const leaf = describeCertificate(m.serving.cert);
    expect(ca.isCa).toBe(true);
    expect(leaf.isCa).toBe(false);
    expect(ca.notAfter.getTime() - now.getTime()).toBe(3650 * DAY);
    expect(leaf.notAfter.getTime() - now.getTime()).toBe(365 * DAY);
    expect(leaf.notBefore.getTime()).toBeLessThanOrEqual(now.getTime());
    expect(isIssuedBy(m.ca.cert, m.serving.cert)).toBe(true);
    expect(keyMatchesCertificate(m.serving.cert, m.serving.key)).toBe(true);
    expect(keyMatchesCertificate(m.serving.cert, m.ca.key)).toBe(false);
    expect(m.caBundle).toBe(m.ca.cert);
  });

  it("puts the SANs where a TLS client (Node's own X509 parser) finds them", () => {
    const x = new X509Certificate(m.serving.cert);
    expect(x.subjectAltName).toBe(
      "DNS:edge, DNS:edge.ops, DNS:edge.ops.svc, DNS:edge.ops.svc.cluster.local, IP Address:127.0.0.1",
    );
    expect(x.checkHost("edge.ops.svc")).toBe("edge.ops.svc");
    expect(x.checkIP("127.0.0.1")).toBe("127.0.0.1");
    expect(x.checkHost("other.ops.svc")).toBeUndefined();
    expect(x.verify(new X509Certificate(m.ca.cert).publicKey)).toBe(true);
  });

  it("gives every certificate a distinct positive serial", () => {
    const serials = new Set<string>([
      describeCertificate(m.ca.cert).serial,
      describeCertificate(m.serving.cert).serial,
    ]);
    for (let i = 0; i < 8; i++)
      serials.add(describeCertificate(issueServing(m.ca, { dnsNames: ["a.example"] }, now).cert).serial);
    expect(serials.size).toBe(10);
    for (const s of serials) expect(Number.parseInt(s.slice(0, 2), 16)).toBeLessThan(0x80);
  });
});
