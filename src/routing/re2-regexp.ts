// The parsed form of a regular expression as C++ RE2 holds it (re2/regexp.h):
// the same operators, parse flags and character classes, so that the program
// size model (re2-program-size.ts) compiles exactly what RE2 compiles.

/** RE2's Regexp::ParseFlags (re2/regexp.h), the bits this model uses. */
export const Flag = {
  FoldCase: 1 << 0,
  ClassNL: 1 << 2,
  DotNL: 1 << 3,
  OneLine: 1 << 4,
  NonGreedy: 1 << 6,
  PerlClasses: 1 << 7,
  PerlB: 1 << 8,
  PerlX: 1 << 9,
  UnicodeGroups: 1 << 10,
  WasDollar: 1 << 13,
} as const;

/** RE2::Options' defaults as Envoy leaves them: RE2::Options::ParseFlags() gives LikePerl. */
export const ENVOY_PARSE_FLAGS =
  Flag.ClassNL | Flag.OneLine | Flag.PerlClasses | Flag.PerlB | Flag.PerlX | Flag.UnicodeGroups;

export const RUNE_MAX = 0x10ffff;

export type Op =
  | "NoMatch"
  | "EmptyMatch"
  | "Literal"
  | "LiteralString"
  | "Concat"
  | "Alternate"
  | "Star"
  | "Plus"
  | "Quest"
  | "Repeat"
  | "Capture"
  | "AnyChar"
  | "AnyByte"
  | "BeginLine"
  | "EndLine"
  | "WordBoundary"
  | "NoWordBoundary"
  | "BeginText"
  | "EndText"
  | "CharClass"
  // Markers that live only on the parser's stack.
  | "LeftParen"
  | "VerticalBar";

export interface RuneRange {
  lo: number;
  hi: number;
}

/**
 * One node. Mutable on purpose: RE2's parser edits nodes in place (merging
 * literals into strings, factoring alternations), and the model follows it.
 */
export interface Regexp {
  op: Op;
  flags: number;
  subs: Regexp[];
  /** Literal. */
  rune: number;
  /** LiteralString. */
  runes: number[];
  /** Repeat; max -1 is unbounded. */
  min: number;
  max: number;
  /** Capture (and LeftParen): the group's number, -1 for (?:...). */
  cap: number;
  /** CharClass: sorted, disjoint, never adjacent. */
  ranges: RuneRange[];
  /** CharClass still a CharClassBuilder (RE2's ccb_): the parser may yet turn it into a literal. */
  building: boolean;
}

export function node(op: Op, flags: number, subs: Regexp[] = []): Regexp {
  return { op, flags, subs, rune: 0, runes: [], min: 0, max: 0, cap: 0, ranges: [], building: false };
}

export function literal(rune: number, flags: number): Regexp {
  const re = node("Literal", flags);
  re.rune = rune;
  return re;
}

/** Regexp::LiteralString: empty match, one literal, or a string. */
export function literalString(runes: readonly number[], flags: number): Regexp {
  if (runes.length === 0) return node("EmptyMatch", flags);
  if (runes.length === 1) return literal(runes[0] as number, flags);
  const re = node("LiteralString", flags);
  re.runes = [...runes];
  return re;
}

export function charClass(set: RuneSet, flags: number, building: boolean): Regexp {
  const re = node("CharClass", flags);
  re.ranges = set.ranges;
  re.building = building;
  return re;
}

export function sub0(re: Regexp): Regexp {
  const s = re.subs[0];
  if (s === undefined) throw new Re2ModelError(`${re.op} without a subexpression`);
  return s;
}

/** A state the model should never reach: the caller refuses rather than guess. */
export class Re2ModelError extends Error {}

/** RE2's CharClassBuilder: a set of runes kept as merged ranges. */
export class RuneSet {
  ranges: RuneRange[] = [];

  static of(ranges: readonly RuneRange[]): RuneSet {
    const s = new RuneSet();
    s.ranges = ranges.map((r) => ({ lo: r.lo, hi: r.hi }));
    return s;
  }

  /** Adds lo-hi; whether the set grew (false when lo-hi was already in it). */
  add(lo: number, hi: number): boolean {
    if (hi < lo) return false;
    if (this.ranges.some((r) => r.lo <= lo && hi <= r.hi)) return false;
    let nlo = lo;
    let nhi = hi;
    const kept: RuneRange[] = [];
    for (const r of this.ranges) {
      if (r.hi + 1 < nlo || nhi + 1 < r.lo) kept.push(r);
      else {
        nlo = Math.min(nlo, r.lo);
        nhi = Math.max(nhi, r.hi);
      }
    }
    kept.push({ lo: nlo, hi: nhi });
    kept.sort((a, b) => a.lo - b.lo);
    this.ranges = kept;
    return true;
  }

  addSet(other: RuneSet): void {
    for (const r of other.ranges) this.add(r.lo, r.hi);
  }

  contains(r: number): boolean {
    return this.ranges.some((x) => x.lo <= r && r <= x.hi);
  }

  /** The number of runes (CharClassBuilder::size()). */
  size(): number {
    return runeCount(this.ranges);
  }

  negate(): void {
    const out: RuneRange[] = [];
    let next = 0;
    for (const r of this.ranges) {
      if (r.lo > next) out.push({ lo: next, hi: r.lo - 1 });
      next = r.hi + 1;
    }
    if (next <= RUNE_MAX) out.push({ lo: next, hi: RUNE_MAX });
    this.ranges = out;
  }
}

export function runeCount(ranges: readonly RuneRange[]): number {
  return ranges.reduce((n, r) => n + r.hi - r.lo + 1, 0);
}

/** CharClass::FoldsASCII: the class holds a letter in A-Z exactly when it holds its lower case. */
export function foldsAscii(ranges: readonly RuneRange[]): boolean {
  for (let c = 0x41; c <= 0x5a; c++) {
    const upper = ranges.some((r) => r.lo <= c && c <= r.hi);
    const lower = ranges.some((r) => r.lo <= c + 32 && c + 32 <= r.hi);
    if (upper !== lower) return false;
  }
  return true;
}

/** Regexp::Equal: structural equality, with TopEqual's choice of which flags count. */
export function regexpEqual(a: Regexp | undefined, b: Regexp | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  if (!topEqual(a, b)) return false;
  if (a.subs.length !== b.subs.length) return false;
  return a.subs.every((s, i) => regexpEqual(s, b.subs[i]));
}

function topEqual(a: Regexp, b: Regexp): boolean {
  if (a.op !== b.op) return false;
  const differ = (bit: number): boolean => ((a.flags ^ b.flags) & bit) !== 0;
  switch (a.op) {
    case "EndText":
      return !differ(Flag.WasDollar);
    case "Literal":
      return a.rune === b.rune && !differ(Flag.FoldCase);
    case "LiteralString":
      return (
        !differ(Flag.FoldCase) &&
        a.runes.length === b.runes.length &&
        a.runes.every((r, i) => r === b.runes[i])
      );
    case "Alternate":
    case "Concat":
      return a.subs.length === b.subs.length;
    case "Star":
    case "Plus":
    case "Quest":
      return !differ(Flag.NonGreedy);
    case "Repeat":
      return !differ(Flag.NonGreedy) && a.min === b.min && a.max === b.max;
    case "Capture":
      return a.cap === b.cap;
    case "CharClass":
      return (
        a.ranges.length === b.ranges.length &&
        a.ranges.every((r, i) => r.lo === b.ranges[i]?.lo && r.hi === b.ranges[i]?.hi)
      );
    default:
      return true;
  }
}
