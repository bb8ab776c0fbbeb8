import { mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { X509Certificate } from "node:crypto";
import { describe, expect, it } from "vitest";
import { isIssuedBy } from "../certs/pki.js";
import { parseCertsArgs, writeCerts, type CertsOptions } from "./certs.js";

const opts = (argv: string[]): CertsOptions => {
  const o = parseCertsArgs(argv);
  if (o === "help") throw new Error("help");
  return o;
};

describe("edge-operator certs", { timeout: 30_000 }, () => {
  it("writes a CA and a serving pair for the names asked, keys readable by the owner only", () => {
    const out = mkdtempSync(path.join(os.tmpdir(), "certs-"));
    const r = writeCerts(
      opts([
        "--dns",
        "localhost",
        "--ip",
        "127.0.0.1",
        "--service",
        "edge",
        "--namespace",
        "ops",
        "--out",
        out,
      ]),
    );
    expect(r.caReused).toBe(false);
    const cert = new X509Certificate(readFileSync(r.files.cert));
    expect(cert.subjectAltName).toBe(
      "DNS:edge, DNS:edge.ops, DNS:edge.ops.svc, DNS:edge.ops.svc.cluster.local, DNS:localhost, IP Address:127.0.0.1",
    );
    expect(isIssuedBy(readFileSync(r.files.ca, "utf8"), readFileSync(r.files.cert, "utf8"))).toBe(true);
    expect(statSync(r.files.key).mode & 0o077).toBe(0);
    expect(statSync(r.files.caKey).mode & 0o077).toBe(0);
  });

  it("reuses a valid CA to reissue the serving certificate, and replaces it only with --force", () => {
    const out = mkdtempSync(path.join(os.tmpdir(), "certs-"));
    const first = writeCerts(opts(["--dns", "localhost", "--out", out]));
    const ca1 = readFileSync(first.files.ca, "utf8");
    const leaf1 = readFileSync(first.files.cert, "utf8");
    const second = writeCerts(opts(["--dns", "localhost", "--ip", "10.0.0.1", "--out", out]));
    expect(second.caReused).toBe(true);
    expect(readFileSync(second.files.ca, "utf8")).toBe(ca1);
    expect(readFileSync(second.files.cert, "utf8")).not.toBe(leaf1);
    expect(isIssuedBy(ca1, readFileSync(second.files.cert, "utf8"))).toBe(true);
    const forced = writeCerts(opts(["--dns", "localhost", "--out", out, "--force"]));
    expect(forced.caReused).toBe(false);
    expect(readFileSync(forced.files.ca, "utf8")).not.toBe(ca1);
  });

  it("refuses to replace a CA it cannot use unless --force", () => {
    const out = mkdtempSync(path.join(os.tmpdir(), "certs-"));
    const first = writeCerts(opts(["--dns", "localhost", "--out", out]));
    const other = mkdtempSync(path.join(os.tmpdir(), "certs-"));
    const stranger = writeCerts(opts(["--dns", "localhost", "--out", other]));
    writeFileSync(first.files.caKey, readFileSync(stranger.files.caKey));
    expect(() => writeCerts(opts(["--dns", "localhost", "--out", out]))).toThrow(
      `${first.files.caKey} does not match ${first.files.ca}; pass --force to replace the CA`,
    );
    expect(writeCerts(opts(["--dns", "localhost", "--out", out, "--force"])).caReused).toBe(false);
  });

  it.each([
    [[], "no names"],
    [["--service", "edge"], "--service needs --namespace"],
    [["--dns", "Not_A_Name"], 'DNS name "Not_A_Name" is not a lowercase DNS-1123 subdomain'],
    [["--ip", "1.2.3"], '"1.2.3" is not an IP address'],
  ])("refuses %j with a one-line reason", (argv, message) => {
    expect(() => parseCertsArgs(argv)).toThrow(message);
  });
});
