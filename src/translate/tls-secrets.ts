// The translation's view of TLS Secrets: only the contents of the Secrets that
// routes reference, read by the cluster side (a metadata-only watch of
// `kubernetes.io/tls` Secrets, then a GET of each referenced one), keyed
// `namespace/name`. A referenced Secret absent from the map does not exist (or
// is not of type `kubernetes.io/tls`).
//
// Key material: `privateKey` goes into exactly one place, the SDS Secret
// resource served to authenticated proxies. Never into a log line, an event,
// a status message, a metric, a debug route or an error message.

/** A `kubernetes.io/tls` Secret's `tls.crt` and `tls.key`, decoded from base64 (PEM text, unchecked). */
export interface TlsSecret {
  readonly certificate: string;
  readonly privateKey: string;
}

/** By `namespace/name`. */
export type TlsSecrets = ReadonlyMap<string, TlsSecret>;

export const NO_SECRETS: TlsSecrets = new Map();

/** ResolvedRefs, as Gateway API reports it: why a route's Secret cannot be used. */
export type RefsReason = "SecretNotFound" | "InvalidCertificate";

/** What a route's TLS came to: the condition ResolvedRefs, and which TLS hosts are served over HTTPS. */
export interface TlsOutcome {
  readonly refs:
    | { readonly resolved: true }
    | { readonly resolved: false; readonly reason: RefsReason; readonly message: string };
  /** TLS hosts this route serves over HTTPS, sorted. */
  readonly served: readonly string[];
  /** TLS hosts it does not, with why (a bad certificate for that host, an older route's claim). */
  readonly notServed: readonly { readonly hostname: string; readonly message: string }[];
}
