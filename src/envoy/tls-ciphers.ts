// TLS 1.2's cipher suites wherever this project terminates TLS: the ADS and
// HTTPS ports (OpenSSL names, src/dataplane/xds/ads-tls.ts) and the edge's
// HTTPS listener (BoringSSL takes the same names in Envoy's cipher_suites).
// ECDHE key exchange (forward secrecy) with AEAD ciphers only, Mozilla's
// "intermediate" list without DHE. TLS 1.3's suites are set apart by both
// libraries, so they stay their defaults.

export const TLS12_CIPHER_SUITES: readonly string[] = [
  "ECDHE-ECDSA-AES128-GCM-SHA256",
  "ECDHE-RSA-AES128-GCM-SHA256",
  "ECDHE-ECDSA-AES256-GCM-SHA384",
  "ECDHE-RSA-AES256-GCM-SHA384",
  "ECDHE-ECDSA-CHACHA20-POLY1305",
  "ECDHE-RSA-CHACHA20-POLY1305",
];
