// With mutual TLS on the ADS port, a proxy's node id is bound to its client
// certificate: the id it is known by (in status, ACK records, /debug/xds) is
// `NAME/ID`, NAME being the certificate's subject CN (else its first DNS or
// URI SAN), unless the id it sent already is NAME or begins with `NAME/`. So
// `envoy` pods sharing one certificate stay apart (`envoy/edge-envoy-7d9f`),
// and a client cannot stand in for another proxy (its NACKs under that
// proxy's id) or hide behind one: whatever id it sends, it carries its own
// certificate's name. Without a certificate (the plaintext port) a node id
// is what the client says it is.

import type { PeerCertificate } from "node:tls";

/** The name a verified client certificate speaks for; undefined without one. */
export function certName(cert: PeerCertificate | undefined): string | undefined {
  if (cert === undefined || !cert.raw) return undefined;
  const cn = cert.subject?.CN;
  const first = Array.isArray(cn) ? cn[0] : cn;
  if (first) return first;
  // "DNS:a, URI:spiffe://..., IP Address:..." as Node spells subjectaltname.
  for (const part of (cert.subjectaltname ?? "").split(", ")) {
    const m = /^(?:DNS|URI):(.+)$/.exec(part);
    if (m?.[1]) return m[1];
  }
  return undefined;
}

/** The id a client with a certificate named `name` is known by, for the node id it sent. */
export function boundNodeId(name: string, nodeId: string): string {
  if (nodeId === "") return name;
  return nodeId === name || nodeId.startsWith(`${name}/`) ? nodeId : `${name}/${nodeId}`;
}
