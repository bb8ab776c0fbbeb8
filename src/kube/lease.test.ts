import { describe, expect, it } from "vitest";
import { decideLease, microTime } from "./lease.js";

describe("microTime", () => {
  it("writes six fractional digits, as metav1.MicroTime wants", () => {
    expect(microTime(Date.UTC(2025, 0, 2, 3, 4, 5, 678))).toBe("2025-01-02T03:04:05.678000Z");
  });
});

describe("decideLease", () => {
  const now = 100_000;

  it("creates a lease no one holds, with no transition counted", () => {
    const d = decideLease(undefined, "me", 0, now, 15);
    expect(d).toEqual({
      ok: true,
      spec: {
        holderIdentity: "me",
        leaseDurationSeconds: 15,
        acquireTime: microTime(now),
        renewTime: microTime(now),
        leaseTransitions: 0,
      },
    });
  });

  it("leaves a lease another holder renewed within its duration, by our own clock", () => {
    const held = {
      holderIdentity: "other",
      leaseDurationSeconds: 15,
      renewTime: "2000-01-01T00:00:00.000000Z",
    };
    // The record's renewTime is ancient, but we saw it change 14.9 s ago: still valid.
    expect(decideLease(held, "me", now - 14_900, now, 15)).toEqual({ ok: false, heldBy: "other" });
  });

  it("takes a lease whose holder went silent for its duration, counting a transition", () => {
    const held = { holderIdentity: "other", leaseDurationSeconds: 15, leaseTransitions: 3 };
    const d = decideLease(held, "me", now - 15_001, now, 15);
    expect(d.ok && d.spec.holderIdentity).toBe("me");
    expect(d.ok && d.spec.leaseTransitions).toBe(4);
  });

  it("uses the holder's own duration, not ours", () => {
    const held = { holderIdentity: "other", leaseDurationSeconds: 60 };
    expect(decideLease(held, "me", now - 20_000, now, 15).ok).toBe(false);
  });

  it("takes a released lease (empty holder) at once", () => {
    const released = { leaseDurationSeconds: 1, leaseTransitions: 2, renewTime: microTime(now) };
    const d = decideLease(released, "me", now, now, 15);
    expect(d.ok && d.spec).toMatchObject({ holderIdentity: "me", leaseTransitions: 3 });
  });

  it("renews its own lease, keeping acquireTime and transitions", () => {
    const mine = { holderIdentity: "me", leaseDurationSeconds: 15, acquireTime: "t0", leaseTransitions: 5 };
    const d = decideLease(mine, "me", now, now, 15);
    expect(d).toEqual({ ok: true, spec: { ...mine, renewTime: microTime(now) } });
  });
});
