// Admission pressure: calls of the last second, slot by slot, so a burst
// counts as busy while it lasts and stops counting a second after it ends.

import { describe, expect, it } from "vitest";
import { AdmissionPressure, answersAdmissionReview } from "./admission-pressure.js";
import { errorReply } from "./json-handler.js";

describe("AdmissionPressure", () => {
  it("counts the calls of the last second and forgets older ones", () => {
    let now = 10_000;
    const p = new AdmissionPressure(5, () => now);
    for (let i = 0; i < 4; i++) p.mark();
    expect(p.perSecond()).toBe(4);
    expect(p.busy()).toBe(false);
    now += 450;
    p.mark();
    expect(p.perSecond()).toBe(5);
    expect(p.busy()).toBe(true);
    // The first four fall out of the window; the fifth, 450 ms later, a little after.
    now += 600;
    expect(p.perSecond()).toBe(1);
    expect(p.busy()).toBe(false);
    now += 500;
    expect(p.perSecond()).toBe(0);
  });

  it("after a long quiet spell starts from nothing", () => {
    let now = 0;
    const p = new AdmissionPressure(1, () => now);
    for (let i = 0; i < 100; i++) p.mark();
    now += 60_000;
    expect(p.perSecond()).toBe(0);
    p.mark();
    expect(p.perSecond()).toBe(1);
  });
});

describe("answersAdmissionReview", () => {
  const admission = (response: Record<string, unknown>) => ({
    status: 200,
    body: { apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", response },
  });
  const conversion = (result: Record<string, unknown>) => ({
    status: 200,
    body: {
      apiVersion: "apiextensions.k8s.io/v1",
      kind: "ConversionReview",
      response: { uid: "u", convertedObjects: [], result },
    },
  });

  it("counts a verdict on an admission review", () => {
    expect(answersAdmissionReview(admission({ uid: "u", allowed: true }))).toBe(true);
    const invalid = { uid: "u", allowed: false, status: { code: 422, reason: "Invalid", message: "..." } };
    expect(answersAdmissionReview(admission(invalid))).toBe(true);
  });

  it("does not count an error Status, a review refused as not its own, a conversion (done or failed), or no uid", () => {
    expect(answersAdmissionReview(errorReply(400, "BadRequest", "expected an AdmissionReview object"))).toBe(
      false,
    );
    const notOurs = { uid: "u", allowed: false, status: { code: 400, reason: "BadRequest", message: "..." } };
    expect(answersAdmissionReview(admission(notOurs))).toBe(false);
    expect(answersAdmissionReview(admission({ uid: "", allowed: true }))).toBe(false);
    expect(answersAdmissionReview(conversion({ status: "Failed", message: "..." }))).toBe(false);
    // The apiserver converts for its own watch caches on every write (kubernetes/kubernetes#129979).
    expect(answersAdmissionReview(conversion({ status: "Success" }))).toBe(false);
    expect(answersAdmissionReview({ status: 200, body: { kind: "Status" } })).toBe(false);
  });
});
