import { describe, expect, it } from "vitest";
import { clientPairDecision, issueClientPair } from "./client-secret.js";
import { createCa, describeCertificate, isIssuedBy } from "./pki.js";

const DAY = 24 * 60 * 60 * 1000;
const issued = new Date("2026-01-01T00:00:00Z");
const at = (days: number) => new Date(issued.getTime() + days * DAY);
const ca = createCa({ now: issued });
const want = { ca, caBundle: ca.cert, commonName: "envoy" };
const pair = issueClientPair(ca, "envoy", issued);

describe("the proxies' client pair", () => {
  it("is a client certificate for envoy from the CA, as long-lived as a serving one", () => {
    const info = describeCertificate(pair.cert);
    expect(info.commonName).toBe("envoy");
    expect(info.isCa).toBe(false);
    expect(isIssuedBy(ca.cert, pair.cert)).toBe(true);
    expect(info.notAfter.getTime()).toBe(at(365).getTime());
  });

  it("is kept while fresh, issued when missing, due or from another CA, and only re-bundled when the bundle moved", () => {
    const stored = { pair, caBundle: ca.cert };
    expect(clientPairDecision(stored, want, { now: at(10) })).toEqual({ action: "keep" });
    expect(clientPairDecision(undefined, want, { now: at(10) })).toMatchObject({ action: "issue" });
    // Fewer than 90 days left.
    expect(clientPairDecision(stored, want, { now: at(300) })).toMatchObject({
      action: "issue",
      reason: expect.stringContaining("expires") as unknown,
    });
    // The CA rotated: the pair is reissued from the new one.
    const next = createCa({ now: issued });
    expect(
      clientPairDecision(
        stored,
        { ca: next, caBundle: next.cert + ca.cert, commonName: "envoy" },
        { now: at(10) },
      ),
    ).toEqual({ action: "issue", reason: "the client certificate was not issued by the current CA" });
    // Unless every replica may not yet take the new CA: a pair from the old one, still in the bundle, is kept a while.
    const rotated = { ca: next, caBundle: next.cert + ca.cert, commonName: "envoy" };
    const grace = { now: new Date(issued.getTime() + 60 * 60_000), rotationGraceMs: 2 * 60 * 60_000 };
    expect(clientPairDecision(stored, rotated, grace)).toEqual({ action: "bundle" });
    expect(clientPairDecision(stored, rotated, { ...grace, now: at(1) })).toMatchObject({ action: "issue" });
    expect(clientPairDecision(stored, { ...rotated, caBundle: next.cert }, grace)).toMatchObject({
      action: "issue",
    });
    expect(clientPairDecision(stored, { ...want, caBundle: ca.cert + next.cert }, { now: at(10) })).toEqual({
      action: "bundle",
    });
    expect(
      clientPairDecision(
        { ...stored, pair: { ...pair, key: issueClientPair(ca, "envoy", issued).key } },
        want,
        {
          now: at(10),
        },
      ),
    ).toMatchObject({ action: "issue" });
    expect(clientPairDecision(stored, { ...want, commonName: "gateway" }, { now: at(10) })).toMatchObject({
      action: "issue",
    });
  });
});
