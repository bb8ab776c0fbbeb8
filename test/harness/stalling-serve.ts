// `edge-operator serve` with a stall injected between a snapshot reconcile's
// reads and its push: the window in which a newer reconcile on another replica
// can push and release finalizers. The fault suite runs servers through this
// entry (stalling-serve-main.ts); the shipped command has no such hook.

import path from "node:path";
import { REPO_ROOT } from "../../tools/testenv/testbin.js";

/** The stall in milliseconds, read by the entry from its environment. */
export const STALL_ENV = "EDGE_TEST_STALL_BEFORE_PUSH_MS";
/** Logged at each stall: the fault suite reads it to know a reconcile is in the window. */
export const STALL_LINE = "fault stall: a snapshot reconcile read its inputs and waits before its push";
/** The compiled entry: pass it as the server's `cli`, with STALL_ENV in its environment. */
export const STALLING_SERVE = path.join(REPO_ROOT, "dist/test/harness/stalling-serve-main.js");

export function stallMs(text: string | undefined): number {
  if (text === undefined || text === "") return 0;
  const ms = Number(text);
  if (!Number.isInteger(ms) || ms < 0 || ms > 600_000)
    throw new Error(
      `${STALL_ENV}: must be a whole number of milliseconds from 0 to 600000, got ${JSON.stringify(text)}`,
    );
  return ms;
}
