// What admission refuses in a v2 rule's timeouts and retry policy beyond their
// schema: durations that are not Gateway API durations or exceed an hour, a
// per-try timeout longer than the request it is part of, two request timeouts
// that disagree, a zero backoff (Envoy requires a base interval above 0), and a
// retry condition or code named twice.

import { parseGatewayDuration } from "../api/duration.js";
import { fieldError, type FieldError, type FieldPath } from "../api/field-error.js";
import { isRecord } from "../api/is-record.js";
import { FILTER_MESSAGES, LIMITS } from "../api/schema.js";

export const MAX_TIMEOUT_MS = LIMITS.maxTimeoutSeconds * 1000;

/** Why a Gateway API duration cannot be a timeout; empty when it can. */
export function timeoutProblems(text: string): string[] {
  const ms = parseGatewayDuration(text);
  if (ms === undefined) return ["must be a duration such as 15s, 1m30s or 500ms (units h, m, s, ms)"];
  return ms > MAX_TIMEOUT_MS ? ["must be at most 1h"] : [];
}

/** The duration in ms when the value is a valid timeout; undefined otherwise (it has its own error). */
function validMs(v: unknown): number | undefined {
  if (typeof v !== "string" || timeoutProblems(v).length > 0) return undefined;
  return parseGatewayDuration(v);
}

function durationCheck(out: FieldError[], at: FieldPath, v: unknown, extra: (ms: number) => string[]): void {
  if (typeof v !== "string") return;
  const problems = timeoutProblems(v);
  const ms = parseGatewayDuration(v);
  if (problems.length === 0 && ms !== undefined) problems.push(...extra(ms));
  if (problems.length > 0) out.push(fieldError(at, "Invalid value", problems.join("; "), v));
}

function noDuplicates(out: FieldError[], at: FieldPath, list: unknown): void {
  if (!Array.isArray(list)) return;
  const first = new Map<unknown, number>();
  list.forEach((v, i) => {
    const seen = first.get(v);
    if (seen !== undefined)
      out.push(fieldError(at.index(i), "Duplicate value", `same as ${at.index(seen)}`, v));
    else first.set(v, i);
  });
}

/** Every problem of a rule's timeout, timeouts and retry; rp is the rule's path. */
export function timeoutErrors(rule: Record<string, unknown>, rp: FieldPath): FieldError[] {
  const out: FieldError[] = [];
  durationCheck(out, rp.child("timeout"), rule.timeout, () => []);
  const timeout = validMs(rule.timeout);
  if (isRecord(rule.timeouts)) {
    const tp = rp.child("timeouts");
    const request = validMs(rule.timeouts.request);
    durationCheck(out, tp.child("request"), rule.timeouts.request, (ms) =>
      timeout !== undefined && ms !== timeout ? [FILTER_MESSAGES.timeoutTwice] : [],
    );
    // As in Gateway API, 0s turns a request timeout off: then nothing bounds an attempt.
    durationCheck(out, tp.child("backendRequest"), rule.timeouts.backendRequest, (ms) => [
      ...(request !== undefined && request > 0 && ms > request
        ? [FILTER_MESSAGES.backendRequestOverRequest]
        : []),
      ...(timeout !== undefined && timeout > 0 && ms > timeout
        ? [FILTER_MESSAGES.backendRequestOverTimeout]
        : []),
    ]);
  }
  if (isRecord(rule.retry)) {
    const rt = rp.child("retry");
    durationCheck(out, rt.child("backoff"), rule.retry.backoff, (ms) =>
      ms === 0 ? ["must be more than 0s: Envoy needs a base interval between attempts"] : [],
    );
    noDuplicates(out, rt.child("codes"), rule.retry.codes);
    noDuplicates(out, rt.child("conditions"), rule.retry.conditions);
  }
  return out;
}
