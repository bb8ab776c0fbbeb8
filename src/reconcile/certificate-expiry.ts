// Certificates that are about to expire are reported before they do: expired
// certificates are the outage edge routers' users most often write about.
// Each referenced Secret with a certificate that parses gets a gauge of its
// notAfter, and each route that references one within the warning window
// gets a Warning event `CertificateExpiring` (again at most once per
// `repeatMs` while it stays so, and the recorder's correlator limits it
// further, as client-go's does).
//
// Only the certificate is read here (its notAfter); the key is never touched,
// and nothing about either but the Secret's name and that date is written.

import { X509Certificate } from "node:crypto";
import type { Registry } from "prom-client";
import { Gauge } from "prom-client";
import type { EdgeRouteV2 } from "../api/types.js";
import { objectKeyOf } from "../api/object-key.js";
import type { Logger } from "../observability/logger.js";
import type { TlsSecrets } from "../translate/tls-secrets.js";
import type { EventRecorder } from "./events.js";
import { tlsSecretKeyOf } from "./tls-secret-refs.js";

/** cert-manager renews 30 days before a 90-day certificate ends: two weeks ahead means that renewal failed. */
export const DEFAULT_EXPIRY_WARNING_MS = 14 * 24 * 3_600_000;
/** How often the same warning is recorded again on the same route while it stands. */
const DEFAULT_REPEAT_MS = 3_600_000;

/** The notAfter of the first certificate in `pem`, in milliseconds; undefined when it does not parse. */
export function certificateNotAfterMs(pem: string): number | undefined {
  if (!pem.includes("-----BEGIN CERTIFICATE-----")) return undefined;
  try {
    const ms = Date.parse(new X509Certificate(pem).validTo);
    return Number.isFinite(ms) ? ms : undefined;
  } catch {
    return undefined;
  }
}

export interface CertificateExpiryOptions {
  events: EventRecorder;
  log: Logger;
  /** Where the gauge goes (absent: none). */
  registry?: Registry;
  /** Warn when notAfter is closer than this (default 14 days). */
  warnWithinMs?: number;
  repeatMs?: number;
  now?: () => number;
}

/** How a route is told: when, and how far off. */
export function expiringMessage(secretKey: string, notAfterMs: number, nowMs: number): string {
  const at = new Date(notAfterMs).toISOString();
  const days = Math.floor(Math.abs(notAfterMs - nowMs) / 86_400_000);
  const hours = Math.floor((Math.abs(notAfterMs - nowMs) % 86_400_000) / 3_600_000);
  const left = days > 0 ? `${days}d${hours}h` : `${hours}h`;
  return notAfterMs <= nowMs
    ? `the certificate in Secret ${secretKey} expired at ${at} (${left} ago); HTTPS clients refuse it`
    : `the certificate in Secret ${secretKey} expires at ${at} (in ${left}); renew it before then`;
}

export class CertificateExpiry {
  private readonly gauge: Gauge<"namespace" | "secret"> | undefined;
  /** route key -> what it was last warned about, and when. */
  private readonly warned = new Map<string, { readonly about: string; readonly at: number }>();

  constructor(private readonly opts: CertificateExpiryOptions) {
    this.gauge = opts.registry
      ? new Gauge({
          name: "edge_operator_tls_certificate_expiry_timestamp_seconds",
          help: "notAfter (unix seconds) of the certificate in each TLS Secret a live route references, when it parses.",
          labelNames: ["namespace", "secret"],
          registers: [opts.registry],
        })
      : undefined;
  }

  /** The gauge, again from `secrets`; an event on each route whose certificate expires within the window. */
  async check(routes: readonly EdgeRouteV2[], secrets: TlsSecrets): Promise<void> {
    const now = (this.opts.now ?? Date.now)();
    const notAfter = new Map<string, number>();
    this.gauge?.reset();
    for (const [key, secret] of secrets) {
      const ms = certificateNotAfterMs(secret.certificate);
      if (ms === undefined) continue;
      notAfter.set(key, ms);
      const slash = key.indexOf("/");
      this.gauge?.set(
        { namespace: key.slice(0, slash), secret: key.slice(slash + 1) },
        Math.floor(ms / 1000),
      );
    }
    const window = this.opts.warnWithinMs ?? DEFAULT_EXPIRY_WARNING_MS;
    const repeat = this.opts.repeatMs ?? DEFAULT_REPEAT_MS;
    const still = new Set<string>();
    for (const route of routes) {
      const secretKey = tlsSecretKeyOf(route);
      const ms = secretKey === undefined ? undefined : notAfter.get(secretKey);
      if (secretKey === undefined || ms === undefined || ms - now > window) continue;
      const routeKey = objectKeyOf(route);
      still.add(routeKey);
      const about = `${secretKey}@${ms}`;
      const last = this.warned.get(routeKey);
      if (last && last.about === about && now - last.at < repeat) continue;
      this.warned.set(routeKey, { about, at: now });
      await this.opts.events.record(
        route,
        "Warning",
        "CertificateExpiring",
        expiringMessage(secretKey, ms, now),
      );
    }
    // A renewed (or unreferenced) certificate is warned about afresh should it near its end again.
    for (const key of [...this.warned.keys()]) if (!still.has(key)) this.warned.delete(key);
  }
}
