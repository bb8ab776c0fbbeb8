// When to renew: a pure decision over what is stored and what is wanted, so
// every replica that looks at the same Secret decides the same thing.

import { describeCertificate, isIssuedBy, keyMatchesCertificate, splitPemBundle } from "./pki.js";
import {
  issueServing,
  newCa,
  servingNames,
  SERVING_DAYS,
  type ServingIdentity,
  type ServingMaterial,
} from "./serving.js";

export const RENEW_BEFORE_DAYS = 90;
const DAY_MS = 24 * 60 * 60 * 1000;

export type RenewalDecision =
  | { renew: false; servingExpires: Date }
  /** "ca": a new CA and a new serving pair; "serving": a new serving pair from the same CA. */
  | { renew: true; what: "ca" | "serving"; reason: string };

export interface RenewalPolicy {
  now: Date;
  /** Renew the serving certificate when fewer days than this remain. */
  renewBeforeDays?: number;
}

function describeOrUndefined(pem: string): ReturnType<typeof describeCertificate> | undefined {
  try {
    return describeCertificate(pem);
  } catch {
    return undefined;
  }
}

export function renewalDecision(
  current: ServingMaterial | undefined,
  want: ServingIdentity,
  policy: RenewalPolicy,
): RenewalDecision {
  const now = policy.now.getTime();
  const before = (policy.renewBeforeDays ?? RENEW_BEFORE_DAYS) * DAY_MS;
  if (!current) return { renew: true, what: "ca", reason: "no certificates stored" };
  const ca = describeOrUndefined(current.ca.cert);
  if (!ca || !ca.isCa || !keyMatchesCertificate(current.ca.cert, current.ca.key)) {
    return { renew: true, what: "ca", reason: "the stored CA is unreadable or does not match its key" };
  }
  // A serving certificate must never outlive its CA: rotate the CA while a
  // whole serving lifetime plus the renewal margin still fits in it.
  if (ca.notAfter.getTime() - now < SERVING_DAYS * DAY_MS + before || ca.notBefore.getTime() > now) {
    return { renew: true, what: "ca", reason: `the CA expires on ${ca.notAfter.toISOString()}` };
  }
  const leaf = describeOrUndefined(current.serving.cert);
  if (!leaf) return { renew: true, what: "serving", reason: "the serving certificate is unreadable" };
  if (!isIssuedBy(current.ca.cert, current.serving.cert)) {
    return {
      renew: true,
      what: "serving",
      reason: "the serving certificate was not issued by the stored CA",
    };
  }
  if (!keyMatchesCertificate(current.serving.cert, current.serving.key)) {
    return { renew: true, what: "serving", reason: "the serving key does not match its certificate" };
  }
  if (leaf.notAfter.getTime() - now < before || leaf.notBefore.getTime() > now) {
    return {
      renew: true,
      what: "serving",
      reason: `the serving certificate expires on ${leaf.notAfter.toISOString()}`,
    };
  }
  const names = servingNames(want);
  const missing = [
    ...names.dnsNames.filter((n) => !leaf.dnsNames.includes(n)),
    ...names.ips.filter((ip) => !leaf.ips.includes(ip)),
  ];
  if (missing.length > 0)
    return { renew: true, what: "serving", reason: `the serving certificate lacks ${missing.join(", ")}` };
  return { renew: false, servingExpires: leaf.notAfter };
}

/** The material after a renewal. A new CA keeps the old one in the bundle while it is valid, so servers
 * still presenting a certificate from it stay trusted until they reload. */
export function renewedMaterial(
  current: ServingMaterial | undefined,
  decision: Extract<RenewalDecision, { renew: true }>,
  want: ServingIdentity,
  now: Date,
): ServingMaterial {
  if (decision.what === "serving" && current) {
    return { ...current, serving: issueServing(current.ca, want, now) };
  }
  const ca = newCa(now);
  const older = current
    ? splitPemBundle(current.caBundle).filter((pem) => {
        const info = describeOrUndefined(pem);
        return info !== undefined && info.notAfter.getTime() > now.getTime();
      })
    : [];
  return { ca, caBundle: [ca.cert, ...older].join(""), serving: issueServing(ca, want, now) };
}
