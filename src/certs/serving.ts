// The serving identity of the HTTPS server and the material that backs it: a
// CA (10 years) and a serving certificate (1 year) whose SANs are every name
// the apiserver or the watcher may dial for the Service, plus extra names/IPs.

import { isIP } from "node:net";
import { createCa, issueCertificate, type KeyPair } from "./pki.js";

export const CA_DAYS = 3650;
export const SERVING_DAYS = 365;

export interface ServingIdentity {
  /** The Service in front of the server; adds SVC, SVC.NS, SVC.NS.svc, SVC.NS.svc.cluster.local. */
  service?: string;
  namespace?: string;
  dnsNames?: readonly string[];
  ips?: readonly string[];
}

/** What a Secret (or certs/) holds: the CA with its key, and the serving pair. */
export interface ServingMaterial {
  ca: KeyPair;
  /** The CA certificates clients should trust, current CA first (during a CA rotation the old one follows). */
  caBundle: string;
  serving: KeyPair;
}

const DNS1123_SUBDOMAIN = /^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** The SANs for an identity, in a stable order without duplicates; throws a one-line reason on a bad name. */
export function servingNames(id: ServingIdentity): { dnsNames: string[]; ips: string[] } {
  const dns: string[] = [];
  if (id.service !== undefined || id.namespace !== undefined) {
    if (!id.service || !id.namespace)
      throw new Error("a service name needs a namespace, and a namespace a service");
    for (const [what, v] of [
      ["service", id.service],
      ["namespace", id.namespace],
    ] as const) {
      if (v.length > 63 || !DNS1123_LABEL.test(v))
        throw new Error(`${what} ${JSON.stringify(v)} is not a DNS-1123 label`);
    }
    const s = id.service;
    const ns = id.namespace;
    dns.push(s, `${s}.${ns}`, `${s}.${ns}.svc`, `${s}.${ns}.svc.cluster.local`);
  }
  for (const name of id.dnsNames ?? []) {
    if (name.length > 253 || !DNS1123_SUBDOMAIN.test(name)) {
      throw new Error(`DNS name ${JSON.stringify(name)} is not a lowercase DNS-1123 subdomain`);
    }
    dns.push(name);
  }
  for (const ip of id.ips ?? [])
    if (isIP(ip) === 0) throw new Error(`${JSON.stringify(ip)} is not an IP address`);
  const ips = [...new Set(id.ips ?? [])];
  if (dns.length === 0 && ips.length === 0)
    throw new Error("no names: give a service and namespace, DNS names or IPs");
  return { dnsNames: [...new Set(dns)], ips };
}

export function issueServing(ca: KeyPair, id: ServingIdentity, now = new Date()): KeyPair {
  const { dnsNames, ips } = servingNames(id);
  const commonName = dnsNames[0] ?? ips[0] ?? "edge-operator";
  return issueCertificate(ca, { commonName, dnsNames, ips, usage: "server", days: SERVING_DAYS, now });
}

export function newCa(now = new Date()): KeyPair {
  return createCa({ commonName: "edge-operator-ca", days: CA_DAYS, now });
}

/** A fresh CA and a serving pair it signed. */
export function newServingMaterial(id: ServingIdentity, now = new Date()): ServingMaterial {
  const ca = newCa(now);
  return { ca, caBundle: ca.cert, serving: issueServing(ca, id, now) };
}
