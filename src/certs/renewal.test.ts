import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { unlimitedCa } from "../../test/fixtures/rogue-ca.js";
import { describeCertificate, isIssuedBy, splitPemBundle } from "./pki.js";
import { renewalDecision, renewedMaterial } from "./renewal.js";
import { issueServing, newServingMaterial, type ServingIdentity } from "./serving.js";

const DAY = 24 * 60 * 60 * 1000;
const issued = new Date("2026-01-01T00:00:00Z");
const id: ServingIdentity = { service: "edge", namespace: "ops" };
const material = newServingMaterial(id, issued);
const at = (days: number) => new Date(issued.getTime() + days * DAY);

describe("renewalDecision", { timeout: 30_000 }, () => {
  it("renews the serving certificate exactly when fewer than 90 days remain", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 400 * 24 }), (hours) => {
        const now = new Date(issued.getTime() + hours * 3600_000);
        const d = renewalDecision(material, id, { now });
        const remaining = describeCertificate(material.serving.cert).notAfter.getTime() - now.getTime();
        expect(d.renew).toBe(remaining < 90 * DAY);
        if (d.renew) expect(d.what).toBe("serving");
      }),
      { numRuns: 300 },
    );
  });

  it("keeps fresh material, and says until when", () => {
    const d = renewalDecision(material, id, { now: at(10) });
    expect(d).toEqual({ renew: false, servingExpires: at(365) });
  });

  it("starts over when nothing is stored", () => {
    expect(renewalDecision(undefined, id, { now: issued })).toMatchObject({ renew: true, what: "ca" });
  });

  it("reissues when a wanted name is missing", () => {
    const d = renewalDecision(material, { ...id, ips: ["10.0.0.1"] }, { now: at(1) });
    expect(d).toEqual({ renew: true, what: "serving", reason: "the serving certificate lacks 10.0.0.1" });
  });

  it("reissues a serving pair that another CA signed or whose key is not its own", () => {
    const other = newServingMaterial(id, issued);
    expect(renewalDecision({ ...material, serving: other.serving }, id, { now: at(1) })).toMatchObject({
      renew: true,
      what: "serving",
      reason: "the serving certificate was not issued by the stored CA",
    });
    const wrongKey = { ...material, serving: { cert: material.serving.cert, key: other.serving.key } };
    expect(renewalDecision(wrongKey, id, { now: at(1) })).toMatchObject({ renew: true, what: "serving" });
  });

  it("keeps a CA made before pathLenConstraint 0 until its own rotation, which brings the constraint", () => {
    // Not rotated early: Envoy reads the CA file once at start (envoy.yaml), so a CA
    // rotated by an upgrade would cut it off from the new server pods until it restarts.
    const today = new Date();
    const old = unlimitedCa();
    const stored = { ca: old, caBundle: old.cert, serving: issueServing(old, id, today) };
    expect(renewalDecision(stored, id, { now: today }).renew).toBe(false);
    const next = renewedMaterial(stored, { renew: true, what: "ca", reason: "test" }, id, today);
    expect(describeCertificate(next.ca.cert).pathLen).toBe(0);
    expect(splitPemBundle(next.caBundle)).toEqual([next.ca.cert, old.cert]);
  });

  it("rotates the CA while a whole serving lifetime still fits in it", () => {
    expect(renewalDecision(material, id, { now: at(3650 - 454) })).toMatchObject({ renew: true, what: "ca" });
    const fresh = { ...material, serving: issueServing(material.ca, id, at(3650 - 460)) };
    expect(renewalDecision(fresh, id, { now: at(3650 - 460) }).renew).toBe(false);
  });
});

describe("renewedMaterial", { timeout: 30_000 }, () => {
  it("reissues the serving pair from the same CA, with a new serial", () => {
    const d = renewalDecision(material, id, { now: at(300) });
    if (!d.renew) throw new Error("expected a renewal");
    const next = renewedMaterial(material, d, id, at(300));
    expect(next.ca).toEqual(material.ca);
    expect(next.caBundle).toBe(material.caBundle);
    expect(isIssuedBy(material.ca.cert, next.serving.cert)).toBe(true);
    expect(describeCertificate(next.serving.cert).serial).not.toBe(
      describeCertificate(material.serving.cert).serial,
    );
    expect(renewalDecision(next, id, { now: at(300) }).renew).toBe(false);
  });

  it("keeps the old CA in the bundle after a CA rotation, new CA first", () => {
    const now = at(3300);
    const next = renewedMaterial(material, { renew: true, what: "ca", reason: "test" }, id, now);
    expect(splitPemBundle(next.caBundle)).toEqual([next.ca.cert, material.ca.cert]);
    expect(isIssuedBy(next.ca.cert, next.serving.cert)).toBe(true);
    // Once the old CA has expired it drops out.
    const later = renewedMaterial(next, { renew: true, what: "ca", reason: "test" }, id, at(3651));
    expect(splitPemBundle(later.caBundle)).toEqual([later.ca.cert, next.ca.cert]);
  });
});
