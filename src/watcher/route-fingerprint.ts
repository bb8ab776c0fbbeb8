// Which route events call for a reconcile. A status-only write (the
// reconciler's own) must not come back as work, so the watcher compares a
// fingerprint of each route with the last one it saw. `generation` is not
// enough: it moves only with the stored object's spec, and a v1 object's
// `net.10xdev.io/v2-spec` annotation changes the v2 rules without moving it.
// The watcher reads routes as v2, so the spec it sees is what the route means
// whatever was edited; the fingerprint is that spec, the deletion and the
// finalizers.

import { createHash } from "node:crypto";
import type { Watched } from "../api/object-key.js";

/** JSON with object keys sorted, so that equal values give equal text whatever the key order. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v ?? null)).join(",")}]`;
  if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** A short digest of what the route means: kept per route, so a hash rather than the spec itself. */
export function routeFingerprint(obj: Watched): string {
  const m = (obj.metadata ?? {}) as { deletionTimestamp?: unknown; finalizers?: unknown };
  const finalizers = Array.isArray(m.finalizers) ? m.finalizers : [];
  return createHash("sha256")
    .update(canonicalJson([m.deletionTimestamp ? "deleting" : "live", finalizers, obj.spec ?? null]))
    .digest("base64url");
}
