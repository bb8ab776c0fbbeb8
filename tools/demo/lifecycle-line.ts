// The lab's output format: one line per lifecycle step, a padded label and
// `key=value` fields. Each step states the fields it expects; the observed
// values are printed in the same order, so a reader sees at once which did
// not hold.

import type { EdgeRouteV2 } from "../../src/api/types.js";

/** The label column: the longest label of the lab ("reconcile (finalizer cleanup):") and a space. */
export const LABEL_WIDTH = 31;

export type Fields = readonly (readonly [key: string, value: string])[];

export function renderLine(label: string, fields: Fields): string {
  return `${`${label}:`.padEnd(LABEL_WIDTH)}${fields.map(([k, v]) => `${k}=${v}`).join(" ")}`;
}

/** The expected fields, in order, with the values observed for them (`?` when not observed). */
export function observedFields(expected: Fields, observed: Readonly<Record<string, string>>): Fields {
  return expected.map(([k]) => [k, observed[k] ?? "?"] as const);
}

/** `key: expected X, observed Y` for each field that differs; empty when the step holds. */
export function mismatches(expected: Fields, observed: Readonly<Record<string, string>>): string[] {
  return expected
    .filter(([k, v]) => observed[k] !== v)
    .map(([k, v]) => `${k}: expected ${v}, observed ${observed[k] ?? "nothing"}`);
}

/** A condition as the lab prints it: `true(Valid)` with the reason, `true` without; `none` when absent. */
export function conditionValue(
  route: Pick<EdgeRouteV2, "status"> | undefined,
  type: string,
  withReason: boolean,
): string {
  const c = route?.status?.conditions?.find((x) => x.type === type);
  if (!c) return "none";
  const status = c.status.toLowerCase();
  return withReason ? `${status}(${c.reason})` : status;
}

/** What the Terminating step shows about a route that may be gone. */
export function deletionFields(
  route: Pick<EdgeRouteV2, "metadata"> | undefined,
  finalizer: string,
): Record<string, string> {
  if (!route) return { exists: "false" };
  return {
    exists: "true",
    deletionTimestamp: route.metadata.deletionTimestamp ? "set" : "unset",
    finalizer: route.metadata.finalizers?.includes(finalizer) ? finalizer : "none",
  };
}
