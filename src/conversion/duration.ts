// Gateway API durations (GEP-2257: `1h`, `15s`, `1m30s`, `500ms`) as v1 sees them:
// a whole number of seconds.

import { parseGatewayDuration } from "../api/duration.js";
import { LIMITS } from "../api/schema.js";

const SECONDS = /^(\d{1,5})s$/;

/** Milliseconds, or undefined when the text is not a Gateway API duration. */
export function durationMs(text: string): number | undefined {
  // Whole seconds, what v1 → v2 writes, is by far the most common form.
  const whole = SECONDS.exec(text);
  if (whole) return Number(whole[1]) * 1000;
  return parseGatewayDuration(text);
}

/**
 * The v1 `timeoutSeconds` closest to a v2 timeout: rounded up so that a
 * sub-second timeout never becomes "no timeout", and clamped to v1's range.
 * `0s` (Gateway API: timeout disabled) and unparseable text have no v1 form.
 */
export function timeoutSecondsOf(timeout: string): number | undefined {
  const ms = durationMs(timeout);
  if (ms === undefined || ms === 0) return undefined;
  return Math.min(LIMITS.maxTimeoutSeconds, Math.ceil(ms / 1000));
}

/** The v2 form of a v1 timeout. */
export function timeoutOf(seconds: number): string {
  return `${seconds}s`;
}
