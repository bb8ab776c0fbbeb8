// Whether a regular expression can be programmed: Envoy and gRPC's client both
// match with RE2, and Envoy refuses (NACKs) a pattern C++ RE2 does not parse or
// whose compiled program exceeds re2.max_program_size.error_level (100 by
// default; source/common/common/regex.cc). Because a proxy takes or refuses an
// update whole, one tenant's refused regex would freeze every tenant's routes,
// so a pattern is admitted only when C++ RE2 would take it.
//
// Two judges: re2js (a port of RE2, never JavaScript's RegExp, whose syntax
// differs: lookaround, backreferences) for the syntax and its messages, then
// re2-program-size.ts for the size C++ RE2 reports. re2js cannot tell the
// size: it compiles to runes, C++ RE2 to UTF-8 bytes (/\p{L}+ is 5 in re2js,
// 1199 in C++ RE2).

import { RE2JS } from "re2js";
import { LIMITS } from "../api/schema.js";
import { INSTRUCTION_BUDGET, re2ProgramSize } from "./re2-program-size.js";

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

const LIMIT = LIMITS.maxRegexProgramSize;

function judge(pattern: string): string | undefined {
  try {
    RE2JS.compile(pattern);
  } catch (err) {
    const reason = err instanceof Error ? err.message.replace(/^error parsing regexp: /, "") : String(err);
    return `must be a regular expression in RE2 syntax: ${reason}`;
  }
  const measured = re2ProgramSize(pattern);
  switch (measured.kind) {
    case "size":
      return measured.size > LIMIT
        ? `its RE2 program size is ${measured.size}, more than Envoy's limit of ${LIMIT}: simplify it (${sizeHint(pattern)})`
        : undefined;
    case "syntax":
      // re2js took it, C++ RE2 does not (e.g. (?<name>...) before RE2 2023-07).
      return `must be a regular expression in RE2 syntax: ${measured.reason}${
        measured.reason.startsWith("invalid perl operator: (?<") ? " (name a group as (?P<name>...))" : ""
      }`;
    case "unsupported":
      switch (measured.what) {
        case "unicode-class":
          return `Unicode classes such as \\p{L} are refused: C++ RE2 compiles them to UTF-8 byte ranges, most of them to far more than Envoy's limit of ${LIMIT} RE2 instructions (\\p{L}+ alone is 1199); use an ASCII class such as [A-Za-z] or [0-9]`;
        case "non-ascii-fold":
          return `case-insensitive matching ((?i)) of non-ASCII characters is refused: C++ RE2 adds every case variant of each, which this check does not measure against Envoy's limit of ${LIMIT} RE2 instructions; write the variants out, such as [éÉ], outside (?i) (for example (?i:abc)[éÉ])`;
        case "non-ascii-group-name":
          return "a group name with non-ASCII characters is refused: name it with ASCII letters, digits and _";
      }
      break;
    case "too-large":
      // The model stopped counting; what it had compiled already is a lower bound.
      return measured.atLeast > LIMIT
        ? `its RE2 program size is at least ${measured.atLeast}, more than Envoy's limit of ${LIMIT}: simplify it (${sizeHint(pattern)})`
        : `it compiles to more than ${INSTRUCTION_BUDGET} RE2 instructions before RE2 optimizes the program, far more than Envoy's limit of ${LIMIT}: use fewer or smaller repetitions`;
    case "unknown":
      return `its RE2 program size could not be checked against Envoy's limit of ${LIMIT} (${
        measured.reason.includes("call stack") ? "it nests too deeply" : measured.reason
      }): simplify it`;
  }
  return `its RE2 program size could not be checked against Envoy's limit of ${LIMIT}: simplify it`;
}

/** What in the pattern costs the most, as advice. */
function sizeHint(pattern: string): string {
  const hints: string[] = [];
  if (/\{\d/.test(pattern)) hints.push("fewer or smaller counted repetitions: x{n,m} copies x m times");
  if (/(^|[^\\])\.|\\[SWD]|\[\^/.test(pattern))
    hints.push(
      "fewer ., \\S, \\W, \\D or negated classes such as [^/]: each matches any UTF-8 character at about 10 instructions, an ASCII class such as [a-z0-9-] at one to three",
    );
  if (hints.length === 0) hints.push("fewer or smaller repetitions, alternatives and groups");
  return hints.join("; ");
}
