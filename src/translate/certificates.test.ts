import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { certificateCovers, certificateNotAfter, checkCertificate } from "./certificates.js";
import type { TlsSecret } from "./tls-secrets.js";

const FIXTURES = join(import.meta.dirname, "../../test/fixtures/tls");
const pem = (file: string) => readFileSync(join(FIXTURES, file), "utf8");
const pair = (name: string): TlsSecret => ({
  certificate: pem(`${name}.crt`),
  privateKey: pem(`${name}.key`),
});
const NOW = new Date("2026-01-01T00:00:00Z");

/** Every run of base64 or PEM body in a key, as it could leak: its lines and the whole body. */
function keyPieces(key: string): string[] {
  const body = key.replace(/-----[A-Z ]+-----/g, "").replace(/\s+/g, "");
  const lines = key.split("\n").filter((l) => l.length > 16 && !l.startsWith("-----"));
  return [body, ...lines, body.slice(0, 24)];
}

describe("checkCertificate", () => {
  it("serves the hosts a good pair names", () => {
    expect(checkCertificate(pair("shop"), ["shop.example.com"], NOW)).toEqual({
      notAfter: new Date("2124-12-08T00:00:00.000Z"),
      problems: [],
    });
    expect(
      checkCertificate(pair("multi"), ["a.example.com", "x.c.example.com", "*.c.example.com"], NOW).problems,
    ).toEqual([]);
  });

  it("says which hosts a certificate does not name", () => {
    expect(
      checkCertificate(
        pair("multi"),
        ["c.example.com", "y.x.c.example.com", "*.example.com", "a.example.com"],
        NOW,
      ).problems,
    ).toEqual([
      { hostname: "c.example.com", message: "the certificate does not name c.example.com" },
      { hostname: "y.x.c.example.com", message: "the certificate does not name y.x.c.example.com" },
      { hostname: "*.example.com", message: "the certificate does not name *.example.com" },
    ]);
  });

  it("refuses an expired certificate and one not valid yet", () => {
    expect(checkCertificate(pair("expired"), ["shop.example.com"], NOW).problems).toEqual([
      { hostname: "shop.example.com", message: "the certificate expired at 2020-12-31T00:00:00.000Z" },
    ]);
    expect(
      checkCertificate(pair("shop"), ["shop.example.com"], new Date("2024-06-01T00:00:00Z")).problems,
    ).toEqual([
      {
        hostname: "shop.example.com",
        message: "the certificate is not valid before 2024-12-31T23:55:00.000Z",
      },
    ]);
  });

  it("refuses a key that is not the certificate's, and what does not parse", () => {
    const problem = (s: TlsSecret) => checkCertificate(s, ["shop.example.com"], NOW).problems[0]?.message;
    expect(problem({ certificate: pem("shop.crt"), privateKey: pem("other.key") })).toBe(
      "tls.key is not the key of the certificate in tls.crt",
    );
    expect(problem({ certificate: "garbage", privateKey: pem("shop.key") })).toBe(
      "tls.crt is not a PEM certificate",
    );
    expect(problem({ certificate: pem("shop.crt"), privateKey: "garbage" })).toBe(
      "tls.key is not an unencrypted PEM private key",
    );
    // A public key where the private one should be.
    const cert = pem("shop.crt");
    expect(problem({ certificate: cert, privateKey: cert })).toBe(
      "tls.key is not an unencrypted PEM private key",
    );
  });

  it("never puts key or certificate material in a message, whatever the input", () => {
    const key = pem("shop.key");
    const cert = pem("shop.crt");
    const truncated = key.slice(0, key.length / 2);
    const cases: TlsSecret[] = [
      { certificate: cert, privateKey: truncated },
      { certificate: cert, privateKey: key.replace("PRIVATE KEY-----\n", "PRIVATE KEY-----\n!!") },
      { certificate: cert.slice(0, 200), privateKey: key },
      { certificate: key, privateKey: cert },
      { certificate: cert, privateKey: pem("other.key") },
      { certificate: Buffer.from(key).toString("base64"), privateKey: Buffer.from(key).toString("base64") },
      {
        certificate: "\u0000\u00ff".repeat(1000),
        privateKey: "-----BEGIN PRIVATE KEY-----\n" + "A".repeat(5000),
      },
    ];
    for (const s of cases) {
      const out = JSON.stringify(checkCertificate(s, ["shop.example.com"], NOW));
      for (const piece of [
        ...keyPieces(key),
        ...keyPieces(s.privateKey),
        ...keyPieces(s.certificate).slice(0, 1),
      ])
        if (piece.length >= 16) expect(out).not.toContain(piece);
      expect(out).not.toMatch(/BEGIN|error:|asn1|PEM routines/i);
    }
  });

  it("answers the certificate's notAfter for the expiry metric", () => {
    expect(certificateNotAfter(pem("expired.crt"))?.toISOString()).toBe("2020-12-31T00:00:00.000Z");
    expect(certificateNotAfter("nope")).toBeUndefined();
  });
});

describe("certificateCovers (RFC 6125)", () => {
  it("matches exact names and one label under a wildcard, and a wildcard host only by the same wildcard", () => {
    const names = ["shop.example.com", "*.apps.example.com"];
    expect(certificateCovers(names, "SHOP.example.com")).toBe(true);
    expect(certificateCovers(names, "a.apps.example.com")).toBe(true);
    expect(certificateCovers(names, "apps.example.com")).toBe(false);
    expect(certificateCovers(names, "a.b.apps.example.com")).toBe(false);
    expect(certificateCovers(names, "*.apps.example.com")).toBe(true);
    expect(certificateCovers(["*.example.com"], "*.apps.example.com")).toBe(false);
    expect(certificateCovers(["shop.example.com"], "*.example.com")).toBe(false);
  });
});
