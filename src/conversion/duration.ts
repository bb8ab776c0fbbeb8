// Gateway API durations (GEP-2257: `1h`, `15s`, `1m30s`, `500ms`) as v1 sees them:
// a whole number of seconds.

import { DURATION_PATTERN, LIMITS } from "../api/schema.js";

const DURATION = new RegExp(DURATION_PATTERN);
const SECONDS = /^(\d{1,5})s$/;
const PART = /(\d+)(ms|h|m|s)/g;
const UNIT_MS: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1 };

/** Milliseconds, or undefined when the text is not a Gateway API duration. */
export function durationMs(text: string): number | undefined {
  // Whole seconds, what v1 → v2 writes, is by far the most common form.
  const whole = SECONDS.exec(text);
  if (whole) return Number(whole[1]) * 1000;
  if (!DURATION.test(text)) return undefined;
  let ms = 0;
  for (const m of text.matchAll(PART)) ms += Number(m[1]) * (UNIT_MS[m[2] ?? ""] ?? 0);
  return ms;
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
