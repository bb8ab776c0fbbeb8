// Whether a TLS Secret can serve a host: the certificate (the first of the
// chain) and the key parse, the key is the certificate's, the certificate
// names the host, and it is valid now. Pure but for node:crypto's parsers.
//
// Messages say what is wrong in words of their own: never a byte of the
// input, and never a crypto error's text (OpenSSL's messages may quote what
// they could not parse).

import { createPrivateKey, X509Certificate, type KeyObject } from "node:crypto";
import type { TlsSecret } from "./tls-secrets.js";

/** What the pair itself comes to, whatever host it is asked about. */
type Parsed =
  | { readonly ok: false; readonly message: string }
  | {
      readonly ok: true;
      readonly dnsNames: readonly string[];
      readonly notBefore: Date;
      readonly notAfter: Date;
    };

/** What a Secret comes to for the hosts asked about. */
export interface CertificateCheck {
  /** The first certificate's notAfter, when it parses (for the expiry metric and event). */
  readonly notAfter?: Date;
  /** The hosts asked about that it cannot serve, with why, in the order asked. */
  readonly problems: readonly { readonly hostname: string; readonly message: string }[];
}

// Parsing is the costly part and a Secret's contents are one object from build
// to build: parsed once per object.
const parsed = new WeakMap<TlsSecret, Parsed>();

function certificateOf(pem: string): X509Certificate | undefined {
  if (!pem.includes("-----BEGIN CERTIFICATE-----")) return undefined;
  try {
    return new X509Certificate(pem);
  } catch {
    return undefined;
  }
}

function keyOf(pem: string): KeyObject | undefined {
  if (!pem.includes("-----BEGIN ")) return undefined;
  try {
    return createPrivateKey({ key: pem, format: "pem" });
  } catch {
    return undefined;
  }
}

/**
 * The certificate's DNS names from its subjectAltName, lower case. Node writes
 * a name that needs quoting as a JSON string: such a name is no host name, so
 * it is left out. The subject's CN is not read: browsers have ignored it since
 * 2017 (RFC 6125 §6.4.4 allows it only without a SAN).
 */
function dnsNamesOf(cert: X509Certificate): string[] {
  const san = cert.subjectAltName;
  if (san === undefined) return [];
  return san
    .split(", ")
    .filter((e) => e.startsWith("DNS:") && !e.startsWith('DNS:"'))
    .map((e) => e.slice(4).toLowerCase());
}

function parse(secret: TlsSecret): Parsed {
  let p = parsed.get(secret);
  if (p !== undefined) return p;
  p = parsePair(secret);
  parsed.set(secret, p);
  return p;
}

function parsePair(secret: TlsSecret): Parsed {
  const cert = certificateOf(secret.certificate);
  if (cert === undefined) return { ok: false, message: "tls.crt is not a PEM certificate" };
  const key = keyOf(secret.privateKey);
  if (key === undefined || key.type !== "private")
    return { ok: false, message: "tls.key is not an unencrypted PEM private key" };
  let matches = false;
  try {
    matches = cert.checkPrivateKey(key);
  } catch {
    matches = false;
  }
  if (!matches) return { ok: false, message: "tls.key is not the key of the certificate in tls.crt" };
  return {
    ok: true,
    dnsNames: dnsNamesOf(cert),
    notBefore: new Date(cert.validFrom),
    notAfter: new Date(cert.validTo),
  };
}

/**
 * Whether a certificate naming `names` covers `hostname`: the same name (case
 * aside), or a name `*.SUFFIX` and a host of one more label (RFC 6125 §6.4.3:
 * the wildcard is the whole leftmost label and stands for exactly one). A
 * wildcard host `*.SUFFIX` is covered only by a certificate naming `*.SUFFIX`:
 * it stands for every name one label under SUFFIX, which only that covers.
 */
export function certificateCovers(names: readonly string[], hostname: string): boolean {
  const host = hostname.toLowerCase();
  for (const name of names) {
    if (name === host) return true;
    if (host.startsWith("*.") || !name.startsWith("*.")) continue;
    const dot = host.indexOf(".");
    if (dot > 0 && host.slice(dot) === name.slice(1)) return true;
  }
  return false;
}

/** The certificate's notAfter, if tls.crt parses: for the expiry metric and event. */
export function certificateNotAfter(certificatePem: string): Date | undefined {
  const cert = certificateOf(certificatePem);
  return cert === undefined ? undefined : new Date(cert.validTo);
}

/** Which of `hostnames` the Secret cannot serve at `now`, and why. */
export function checkCertificate(
  secret: TlsSecret,
  hostnames: readonly string[],
  now: Date,
): CertificateCheck {
  const p = parse(secret);
  if (!p.ok) {
    const notAfter = certificateNotAfter(secret.certificate);
    return {
      ...(notAfter !== undefined ? { notAfter } : {}),
      problems: hostnames.map((hostname) => ({ hostname, message: p.message })),
    };
  }
  const t = now.getTime();
  const when =
    t > p.notAfter.getTime()
      ? `the certificate expired at ${p.notAfter.toISOString()}`
      : t < p.notBefore.getTime()
        ? `the certificate is not valid before ${p.notBefore.toISOString()}`
        : undefined;
  const problems: { hostname: string; message: string }[] = [];
  for (const hostname of hostnames) {
    if (when !== undefined) problems.push({ hostname, message: when });
    else if (!certificateCovers(p.dnsNames, hostname))
      problems.push({ hostname, message: `the certificate does not name ${hostname}` });
  }
  return { notAfter: p.notAfter, problems };
}
