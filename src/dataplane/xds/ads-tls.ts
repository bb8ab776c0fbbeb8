// TLS for the ADS port, reloadable: the operator's serving certificate is
// renewed in place (src/certs/renewal.ts) and the HTTPS server swaps its
// secure context then (src/server/https.ts); the ADS port must follow, or
// Envoy meets an expired certificate on its next reconnect. grpc-js lets a
// ServerCredentials tell every bound port about a new secure context (the
// watcher each listener registers), which is all reload() does. Streams open
// at a swap keep their session; new handshakes get the new pair. With mutual
// TLS the client CA is reloaded the same way: by default it is the operator's
// own CA bundle (serve.ts), which a CA rotation changes.

import * as grpc from "@grpc/grpc-js";
import type { SecureContextOptions } from "node:tls";
import { TLS12_CIPHER_SUITES } from "../../envoy/tls-ciphers.js";

export interface AdsTls {
  readonly cert: Buffer | string;
  readonly key: Buffer | string;
  /**
   * PEM CA bundle that signs the proxies' client certificates: mutual TLS.
   * A client without a certificate it signed is refused in the handshake.
   */
  readonly clientCa?: Buffer | string;
}

/**
 * TLS 1.2's cipher suites (src/envoy/tls-ciphers.ts), on this port and the
 * HTTPS one, as OpenSSL takes them. Every context built must carry it: a
 * context without `ciphers` (a reload) falls back to Node's defaults, static
 * RSA and CBC-SHA1 among them.
 */
export const TLS12_CIPHERS = TLS12_CIPHER_SUITES.join(":");

function contextOptions(tls: AdsTls): SecureContextOptions {
  return {
    cert: tls.cert,
    key: tls.key,
    minVersion: "TLSv1.2",
    ciphers: TLS12_CIPHERS,
    ...(tls.clientCa !== undefined ? { ca: tls.clientCa } : {}),
  };
}

export class ReloadableServerCredentials extends grpc.ServerCredentials {
  private clientCa: Buffer | string | undefined;

  constructor(tls: AdsTls) {
    const mutual = tls.clientCa !== undefined;
    super({ requestCert: mutual, rejectUnauthorized: mutual }, contextOptions(tls));
    this.clientCa = tls.clientCa;
  }

  /**
   * New handshakes on every port bound with these credentials use this pair,
   * and with mutual TLS this client CA (absent: the one they had). Mutual TLS
   * itself is set at construction: a client CA given to credentials without it
   * is ignored.
   */
  reload(
    pair: { readonly cert: Buffer | string; readonly key: Buffer | string },
    clientCa?: Buffer | string,
  ): void {
    if (this.clientCa !== undefined && clientCa !== undefined) this.clientCa = clientCa;
    this.updateSecureContextOptions(
      contextOptions({ ...pair, ...(this.clientCa !== undefined ? { clientCa: this.clientCa } : {}) }),
    );
  }

  // Two bindings share a port only with the very same credentials object.
  _equals(other: grpc.ServerCredentials): boolean {
    return other === this;
  }
}
