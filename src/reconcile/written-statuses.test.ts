// The overlay of this process's own status writes: only on the version the
// write was made on, and never kept past the route's next version or its end.

import { describe, expect, it } from "vitest";
import type { EdgeRouteV2 } from "../api/types.js";
import { WrittenStatuses } from "./written-statuses.js";

const at = (name: string, rv: string, status: EdgeRouteV2["status"] = {}): EdgeRouteV2 => ({
  apiVersion: "net.10xdev.io/v2",
  kind: "EdgeRoute",
  metadata: { namespace: "shop", name, resourceVersion: rv },
  spec: { rules: [] },
  status,
});
const written = { observedGeneration: 1, conditions: [] };

describe("WrittenStatuses", () => {
  it("reads the version a write was made on as the write left it, and lets go once the read moves on", () => {
    const w = new WrittenStatuses();
    w.record(at("a", "5"), written, "6");
    expect(w.overlay(at("a", "5"))).toMatchObject({ metadata: { resourceVersion: "6" }, status: written });
    expect(w.overlay(at("a", "5")).status).toBe(written);
    // The cache shows the write (or anything newer): the read wins, and the record goes.
    const newer = at("a", "8", { observedGeneration: 2 });
    expect(w.overlay(newer)).toBe(newer);
    expect(w.size()).toBe(0);
    expect(w.overlay(at("a", "5")).metadata.resourceVersion).toBe("5");
  });

  it("drops the records of routes a full read no longer holds", () => {
    const w = new WrittenStatuses();
    w.record(at("a", "5"), written, "6");
    w.record(at("b", "7"), written, "9");
    const out = w.overlayAll([at("b", "7")]);
    expect(out.map((r) => r.metadata.resourceVersion)).toEqual(["9"]);
    expect(w.size()).toBe(1);
  });

  it("gives a full read back as it is when nothing is written, and overlays by namespace and name", () => {
    const w = new WrittenStatuses();
    const read = [at("a", "5"), at("b", "7")];
    expect(w.overlayAll(read)).toBe(read);
    w.record(at("a", "5"), written, "6");
    const elsewhere = { ...at("a", "5"), metadata: { namespace: "other", name: "a", resourceVersion: "5" } };
    const out = w.overlayAll([elsewhere, ...read]);
    expect(out[0]).toBe(elsewhere);
    expect(out[1]).toMatchObject({ metadata: { namespace: "shop", resourceVersion: "6" }, status: written });
    expect(out[2]).toBe(read[1]);
    expect(read[0]?.metadata.resourceVersion).toBe("5");
  });

  it("records nothing when the write's answer carries no new resourceVersion", () => {
    const w = new WrittenStatuses();
    w.record(at("a", "5"), written, undefined);
    w.record(at("a", "5"), written, "5");
    expect(w.size()).toBe(0);
  });
});
