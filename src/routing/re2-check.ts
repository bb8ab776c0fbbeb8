// Whether a regular expression can be programmed: Envoy and gRPC's client both
// match with RE2, and Envoy refuses (NACKs) a pattern RE2 does not parse or
// whose compiled program exceeds re2.max_program_size.error_level (100 by
// default). Judged by re2js, a port of RE2, never by JavaScript's RegExp, whose
// syntax differs (lookaround, backreferences).

import { RE2JS } from "re2js";
import { LIMITS } from "../api/schema.js";

// Many routes share a few patterns; the bound keeps odd input from growing it.
const verdicts = new Map<string, string | undefined>();
const CACHE_LIMIT = 4096;

/** Why RE2 (as Envoy runs it) refuses the pattern; undefined when it takes it. */
export function re2Problem(pattern: string): string | undefined {
  if (verdicts.has(pattern)) return verdicts.get(pattern);
  const problem = judge(pattern);
  if (verdicts.size >= CACHE_LIMIT) verdicts.clear();
  verdicts.set(pattern, problem);
  return problem;
}

function judge(pattern: string): string | undefined {
  let size: number;
  try {
    size = RE2JS.compile(pattern).programSize();
  } catch (err) {
    const reason = err instanceof Error ? err.message.replace(/^error parsing regexp: /, "") : String(err);
    return `must be a regular expression in RE2 syntax: ${reason}`;
  }
  return size > LIMITS.maxRegexProgramSize
    ? `its RE2 program size is ${size}, more than Envoy's limit of ${LIMITS.maxRegexProgramSize}: simplify it (fewer or smaller repetitions)`
    : undefined;
}
