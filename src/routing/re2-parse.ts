// C++ RE2's parser (re2/parse.cc at release 2022-06-01, Debian 12's
// libre2-dev, which the oracle test runs), modelled for the program size
// check: the same stack machine, so that literals merge into strings, classes
// turn into literals and alternations factor exactly as they do in RE2,
// because each of those changes the size of the compiled program. Later
// releases differ in two ways that matter here: from 2023-09 RE2 takes
// (?<name>...), refused here as by 2022-06-01; from 2023-12 a folded literal
// merged into a class adds all its cases (see ParseOptions). Errors follow
// RE2's codes; the caller runs re2js first, for the messages users see.
//
// Two things are not modelled and are reported as Unsupported instead:
// Unicode classes (\p{L}, \pN: RE2's tables) and case folding of non-ASCII
// characters under (?i) (RE2's fold orbits). The caller refuses both.

import {
  charClass,
  Flag,
  literal,
  literalString,
  node,
  Re2ModelError,
  regexpEqual,
  RUNE_MAX,
  RuneSet,
  sub0,
  type Op,
  type Regexp,
  type RuneRange,
} from "./re2-regexp.js";

/** RE2's RegexpStatusCode texts (re2/regexp.cc kErrorStrings). */
export type Re2ErrorCode =
  | "invalid escape sequence"
  | "invalid character class range"
  | "missing ]"
  | "missing )"
  | "unexpected )"
  | "trailing \\"
  | "no argument for repetition operator"
  | "invalid repetition size"
  | "bad repetition operator"
  | "invalid perl operator"
  | "invalid named capture group";

export class Re2SyntaxError extends Error {
  constructor(
    readonly code: Re2ErrorCode,
    readonly arg: string,
  ) {
    super(`${code}: ${arg}`);
  }
}

export type UnsupportedKind = "unicode-class" | "non-ascii-fold" | "non-ascii-group-name";

/** A construct whose size this model does not compute; the caller refuses it. */
export class Unsupported extends Error {
  constructor(readonly kind: UnsupportedKind) {
    super(kind);
  }
}

export interface ParseOptions {
  /**
   * RE2 from 2023-12 on (commit 9d0b5bf) adds a folded literal's cases to a
   * class merged from an alternation even when the class already holds the
   * literal; 2022-06-01 stops early. The caller runs both when they differ.
   */
  readonly foldMergeFixed: boolean;
}

export interface Parsed {
  readonly re: Regexp;
  /** Whether the other foldMergeFixed would have built another class. */
  readonly foldMergeDiffers: boolean;
}

const MAX_REPEAT = 1000;

/** Regexp::Parse with Envoy's flags. */
export function parseRe2(pattern: string, flags: number, options: ParseOptions): Parsed {
  const ps = new ParseState(flags, pattern, options);
  return { re: ps.parse(), foldMergeDiffers: ps.foldMergeDiffers };
}

// ---- case folding: ASCII only (unicode_casefold.cc's entries up to 'z', and
// the two non-ASCII runes that fold to ASCII letters: U+017F and U+212A). ----

const KELVIN = 0x212a;
const LONG_S = 0x17f;

/** CycleFoldRune for ASCII, U+017F and U+212A; anything else non-ASCII is not modelled. */
function cycleFold(r: number): number {
  if (r === 0x6b) return KELVIN;
  if (r === 0x73) return LONG_S;
  if (r === KELVIN) return 0x4b;
  if (r === LONG_S) return 0x53;
  if (r >= 0x41 && r <= 0x5a) return r + 32;
  if (r >= 0x61 && r <= 0x7a) return r - 32;
  if (r < 0x80) return r;
  throw new Unsupported("non-ascii-fold");
}

/** AddFoldedRange, with its early stop when lo-hi is already in the class. */
function addFoldedRange(cc: RuneSet, lo: number, hi: number, depth: number): void {
  if (depth > 10) throw new Re2ModelError("fold recursion");
  if (hi >= 0x80 && !(lo === hi && (lo === KELVIN || lo === LONG_S))) throw new Unsupported("non-ascii-fold");
  if (!cc.add(lo, hi)) return;
  // Each rune of lo-hi that folds, folded as a run (the table's entries are runs).
  let r = lo;
  while (r <= hi) {
    const f = cycleFold(r);
    if (f === r) {
      r++;
      continue;
    }
    // A run of runes that fold by the same delta: A-Z, a-j, l-r, t-z; k, s, U+017F and U+212A alone.
    let end = r;
    while (end + 1 <= hi && cycleFold(end + 1) - (end + 1) === f - r && runOf(end + 1) === runOf(r)) end++;
    addFoldedRange(cc, f, f + (end - r), depth + 1);
    r = end + 1;
  }
}

/** Which entry of RE2's fold table a rune belongs to (runs fold together). */
function runOf(r: number): number {
  if (r >= 0x41 && r <= 0x5a) return 1;
  if (r >= 0x61 && r <= 0x6a) return 2;
  if (r >= 0x6c && r <= 0x72) return 3;
  if (r >= 0x74 && r <= 0x7a) return 4;
  return r + 100;
}

/** CharClassBuilder::AddRangeFlags (ClassNL is always on in Envoy: no newline cutting). */
function addRangeFlags(cc: RuneSet, lo: number, hi: number, flags: number): void {
  if (flags & Flag.FoldCase) addFoldedRange(cc, lo, hi, 0);
  else cc.add(lo, hi);
}

// ---- Perl and POSIX groups (re2/perl_groups.cc) ----

type Group = readonly (readonly [number, number])[];
const PERL_GROUPS: Readonly<Record<string, Group>> = {
  d: [[0x30, 0x39]],
  s: [
    [0x9, 0xa],
    [0xc, 0xd],
    [0x20, 0x20],
  ],
  w: [
    [0x30, 0x39],
    [0x41, 0x5a],
    [0x5f, 0x5f],
    [0x61, 0x7a],
  ],
};
const POSIX_GROUPS: Readonly<Record<string, Group>> = {
  alnum: [
    [0x30, 0x39],
    [0x41, 0x5a],
    [0x61, 0x7a],
  ],
  alpha: [
    [0x41, 0x5a],
    [0x61, 0x7a],
  ],
  ascii: [[0x0, 0x7f]],
  blank: [
    [0x9, 0x9],
    [0x20, 0x20],
  ],
  cntrl: [
    [0x0, 0x1f],
    [0x7f, 0x7f],
  ],
  digit: [[0x30, 0x39]],
  graph: [[0x21, 0x7e]],
  lower: [[0x61, 0x7a]],
  print: [[0x20, 0x7e]],
  punct: [
    [0x21, 0x2f],
    [0x3a, 0x40],
    [0x5b, 0x60],
    [0x7b, 0x7e],
  ],
  space: [
    [0x9, 0xd],
    [0x20, 0x20],
  ],
  upper: [[0x41, 0x5a]],
  word: [
    [0x30, 0x39],
    [0x41, 0x5a],
    [0x5f, 0x5f],
    [0x61, 0x7a],
  ],
  xdigit: [
    [0x30, 0x39],
    [0x41, 0x46],
    [0x61, 0x66],
  ],
};

/** AddUGroup. */
function addGroup(cc: RuneSet, g: Group, positive: boolean, flags: number): void {
  if (positive) {
    for (const [lo, hi] of g) addRangeFlags(cc, lo, hi, flags);
    return;
  }
  if (flags & Flag.FoldCase) {
    // The negation of the folded group, built apart and merged (as RE2 does).
    const pos = new RuneSet();
    addGroup(pos, g, true, flags);
    pos.negate();
    cc.addSet(pos);
    return;
  }
  let next = 0;
  for (const [lo, hi] of g) {
    if (next < lo) addRangeFlags(cc, next, lo - 1, flags);
    next = hi + 1;
  }
  if (next <= RUNE_MAX) addRangeFlags(cc, next, RUNE_MAX, flags);
}

// ---- the parser ----

const isDigit = (c: number | undefined): boolean => c !== undefined && c >= 0x30 && c <= 0x39;
const isHex = (c: number | undefined): boolean =>
  c !== undefined && ((c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66));
const isAlpha = (c: number): boolean => (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
const unHex = (c: number): number => (c <= 0x39 ? c - 0x30 : (c | 0x20) - 0x61 + 10);
const ch = (s: string): number => s.charCodeAt(0);

/** The pattern as code points; a lone surrogate is U+FFFD, as it is once encoded to UTF-8 for Envoy. */
function codePoints(pattern: string): number[] {
  const out: number[] = [];
  for (const c of pattern) {
    const cp = c.codePointAt(0) ?? 0xfffd;
    out.push(cp >= 0xd800 && cp <= 0xdfff ? 0xfffd : cp);
  }
  return out;
}

class ParseState {
  private readonly stack: Regexp[] = [];
  private ncap = 0;
  private readonly t: number[];
  private pos = 0;
  foldMergeDiffers = false;

  constructor(
    private flags: number,
    private readonly pattern: string,
    private readonly options: ParseOptions,
  ) {
    this.t = codePoints(pattern);
  }

  private peek(k = 0): number | undefined {
    return this.t[this.pos + k];
  }

  private text(from: number, to = this.pos): string {
    return String.fromCodePoint(...this.t.slice(from, to));
  }

  private fail(code: Re2ErrorCode, arg: string): never {
    throw new Re2SyntaxError(code, arg);
  }

  private top(): Regexp | undefined {
    return this.stack[this.stack.length - 1];
  }

  private below(k: number): Regexp | undefined {
    return this.stack[this.stack.length - 1 - k];
  }

  parse(): Regexp {
    let lastUnary = -1;
    while (this.pos < this.t.length) {
      let isUnary = -1;
      const c = this.peek() as number;
      const start = this.pos;
      switch (c) {
        case ch("("):
          if (this.flags & Flag.PerlX && this.peek(1) === ch("?")) {
            this.parsePerlFlags();
            break;
          }
          this.doLeftParen(1);
          this.pos++;
          break;
        case ch("|"):
          this.doVerticalBar();
          this.pos++;
          break;
        case ch(")"):
          this.doRightParen();
          this.pos++;
          break;
        case ch("^"):
          this.pushSimple(this.flags & Flag.OneLine ? "BeginText" : "BeginLine");
          this.pos++;
          break;
        case ch("$"):
          if (this.flags & Flag.OneLine) {
            // Marks \z written as $ (TopEqual tells them apart).
            const saved = this.flags;
            this.flags |= Flag.WasDollar;
            this.pushSimple("EndText");
            this.flags = saved;
          } else this.pushSimple("EndLine");
          this.pos++;
          break;
        case ch("."):
          this.pushDot();
          this.pos++;
          break;
        case ch("["):
          this.pushRegexp(this.parseCharClass());
          break;
        case ch("*"):
        case ch("+"):
        case ch("?"): {
          const op: Op = c === ch("*") ? "Star" : c === ch("+") ? "Plus" : "Quest";
          this.pos++;
          let nongreedy = false;
          if (this.flags & Flag.PerlX) {
            if (this.peek() === ch("?")) {
              nongreedy = true;
              this.pos++;
            }
            if (lastUnary >= 0) this.fail("bad repetition operator", this.text(lastUnary));
          }
          this.pushRepeatOp(op, this.text(start), nongreedy);
          isUnary = start;
          break;
        }
        case ch("{"): {
          const rep = this.maybeRepetition();
          if (rep === undefined) {
            this.pushLiteral(c);
            this.pos++;
            break;
          }
          let nongreedy = false;
          if (this.flags & Flag.PerlX) {
            if (this.peek() === ch("?")) {
              nongreedy = true;
              this.pos++;
            }
            if (lastUnary >= 0) this.fail("bad repetition operator", this.text(lastUnary));
          }
          this.pushRepetition(rep[0], rep[1], this.text(start), nongreedy);
          isUnary = start;
          break;
        }
        case ch("\\"):
          this.parseBackslash();
          break;
        default:
          this.pushLiteral(c);
          this.pos++;
      }
      lastUnary = isUnary;
    }
    return this.doFinish();
  }

  private parseBackslash(): void {
    const c1 = this.peek(1);
    if (this.flags & Flag.PerlB && (c1 === ch("b") || c1 === ch("B"))) {
      this.pushSimple(c1 === ch("b") ? "WordBoundary" : "NoWordBoundary");
      this.pos += 2;
      return;
    }
    if (this.flags & Flag.PerlX && c1 !== undefined) {
      if (c1 === ch("A") || c1 === ch("z") || c1 === ch("C")) {
        this.pushSimple(c1 === ch("A") ? "BeginText" : c1 === ch("z") ? "EndText" : "AnyByte");
        this.pos += 2;
        return;
      }
      if (c1 === ch("Q")) {
        this.pos += 2;
        while (this.pos < this.t.length) {
          if (this.peek() === ch("\\") && this.peek(1) === ch("E")) {
            this.pos += 2;
            break;
          }
          this.pushLiteral(this.peek() as number);
          this.pos++;
        }
        return;
      }
    }
    if (c1 === ch("p") || c1 === ch("P")) throw new Unsupported("unicode-class");
    const perl = this.maybePerlGroup();
    if (perl !== undefined) {
      const cc = new RuneSet();
      addGroup(cc, perl.group, perl.positive, this.flags);
      this.pushRegexp(charClass(cc, this.flags & ~Flag.FoldCase, true));
      return;
    }
    this.pushLiteral(this.parseEscape());
  }

  /** MaybeParsePerlCCEscape: \d \s \w \D \S \W. */
  private maybePerlGroup(): { group: Group; positive: boolean } | undefined {
    if (!(this.flags & Flag.PerlClasses) || this.peek() !== ch("\\")) return undefined;
    const c = this.peek(1);
    if (c === undefined) return undefined;
    const name = String.fromCodePoint(c);
    const group = PERL_GROUPS[name.toLowerCase()];
    if (group === undefined || !/^[dswDSW]$/.test(name)) return undefined;
    this.pos += 2;
    return { group, positive: name === name.toLowerCase() };
  }

  /** ParseEscape: the rune a backslash sequence names. */
  private parseEscape(): number {
    const begin = this.pos;
    if (this.pos + 1 >= this.t.length) this.fail("trailing \\", "");
    this.pos++;
    const bad = (): never => this.fail("invalid escape sequence", this.text(begin));
    let c = this.peek() as number;
    this.pos++;
    if (c >= ch("1") && c <= ch("7")) {
      // A single non-zero digit is a backreference, which RE2 does not support.
      const n = this.peek();
      if (n === undefined || n < ch("0") || n > ch("7")) bad();
    }
    if (c >= ch("0") && c <= ch("7")) {
      let code = c - ch("0");
      for (let k = 0; k < 2; k++) {
        const d = this.peek();
        if (d === undefined || d < ch("0") || d > ch("7")) break;
        code = code * 8 + d - ch("0");
        this.pos++;
      }
      return code;
    }
    switch (c) {
      case ch("x"): {
        if (this.pos >= this.t.length) bad();
        c = this.peek() as number;
        this.pos++;
        if (c === ch("{")) {
          let nhex = 0;
          let code = 0;
          c = this.peek() ?? -1;
          if (c < 0) bad();
          this.pos++;
          while (isHex(c)) {
            nhex++;
            code = code * 16 + unHex(c);
            if (code > RUNE_MAX) bad();
            if (this.pos >= this.t.length) bad();
            c = this.peek() as number;
            this.pos++;
          }
          if (c !== ch("}") || nhex === 0) bad();
          return code;
        }
        const c2 = this.peek();
        if (c2 === undefined) bad();
        this.pos++;
        if (!isHex(c) || !isHex(c2)) bad();
        return unHex(c) * 16 + unHex(c2 as number);
      }
      case ch("n"):
        return 0x0a;
      case ch("r"):
        return 0x0d;
      case ch("t"):
        return 0x09;
      case ch("a"):
        return 0x07;
      case ch("f"):
        return 0x0c;
      case ch("v"):
        return 0x0b;
    }
    // Escaped punctuation is itself; escaped letters and digits are errors (\q, \8).
    if (c < 0x80 && !isAlpha(c) && !isDigit(c)) return c;
    return bad();
  }

  /** MaybeParseRepetition: {n}, {n,}, {n,m}; undefined leaves '{' a literal. */
  private maybeRepetition(): [number, number] | undefined {
    let p = this.pos + 1;
    const int = (): number | undefined => {
      if (!isDigit(this.t[p])) return undefined;
      if (this.t[p] === ch("0") && isDigit(this.t[p + 1])) return undefined;
      let n = 0;
      while (isDigit(this.t[p])) {
        if (n >= 100_000_000) return undefined;
        n = n * 10 + (this.t[p] as number) - ch("0");
        p++;
      }
      return n;
    };
    const lo = int();
    if (lo === undefined || p >= this.t.length) return undefined;
    let hi = lo;
    if (this.t[p] === ch(",")) {
      p++;
      if (p >= this.t.length) return undefined;
      if (this.t[p] === ch("}")) hi = -1;
      else {
        const h = int();
        if (h === undefined) return undefined;
        hi = h;
      }
    }
    if (this.t[p] !== ch("}")) return undefined;
    this.pos = p + 1;
    return [lo, hi];
  }

  /** ParsePerlFlags: (?i) (?-s) (?i:...) (?P<name>...). */
  private parsePerlFlags(): void {
    const begin = this.pos;
    let p = this.pos + 2;
    const badPerl = (): never => this.fail("invalid perl operator", this.text(begin, p));
    if (this.t[p] === ch("P") && this.t[p + 1] === ch("<") && p + 2 < this.t.length) {
      let end = p + 2;
      while (end < this.t.length && this.t[end] !== ch(">")) end++;
      if (end >= this.t.length) this.fail("invalid named capture group", this.text(begin, this.t.length));
      const name = this.t.slice(p + 2, end);
      if (name.length === 0) this.fail("invalid named capture group", this.text(begin, end + 1));
      for (const r of name) {
        // RE2 also takes letters and digits beyond ASCII (its Unicode tables); not modelled.
        if (r >= 0x80) throw new Unsupported("non-ascii-group-name");
        if (!isAlpha(r) && !isDigit(r) && r !== ch("_"))
          this.fail("invalid named capture group", this.text(begin, end + 1));
      }
      this.doLeftParen(1);
      this.pos = end + 1;
      return;
    }
    let negated = false;
    let sawFlags = false;
    let nflags = this.flags;
    for (;;) {
      const c = this.t[p];
      if (c === undefined) badPerl();
      p++;
      if (c === ch("i") || c === ch("m") || c === ch("s") || c === ch("U")) {
        sawFlags = true;
        // m is the opposite of RE2's OneLine.
        const bit =
          c === ch("i")
            ? Flag.FoldCase
            : c === ch("m")
              ? Flag.OneLine
              : c === ch("s")
                ? Flag.DotNL
                : Flag.NonGreedy;
        const set = c === ch("m") ? negated : !negated;
        nflags = set ? nflags | bit : nflags & ~bit;
      } else if (c === ch("-")) {
        if (negated) badPerl();
        negated = true;
        sawFlags = false;
      } else if (c === ch(":")) {
        this.doLeftParen(-1);
        break;
      } else if (c === ch(")")) break;
      else badPerl();
    }
    if (negated && !sawFlags) badPerl();
    this.flags = nflags;
    this.pos = p;
  }

  /** ParseCharClass: [...] and [^...], as a class still being built. */
  private parseCharClass(): Regexp {
    const begin = this.pos;
    const whole = (): string => this.text(begin, this.t.length);
    const cc = new RuneSet();
    this.pos++;
    let negated = false;
    if (this.peek() === ch("^")) {
      this.pos++;
      negated = true;
    }
    let first = true;
    while (this.pos < this.t.length && (this.peek() !== ch("]") || first)) {
      // PerlX allows '-' anywhere in a class.
      first = false;
      if (this.peek() === ch("[") && this.peek(1) === ch(":") && this.pos + 2 < this.t.length) {
        if (this.parseClassName(cc)) continue;
      }
      if (
        this.peek() === ch("\\") &&
        (this.peek(1) === ch("p") || this.peek(1) === ch("P")) &&
        this.pos + 2 < this.t.length
      )
        throw new Unsupported("unicode-class");
      const perl = this.maybePerlGroup();
      if (perl !== undefined) {
        addGroup(cc, perl.group, perl.positive, this.flags);
        continue;
      }
      const rangeStart = this.pos;
      const lo = this.classChar(whole);
      let hi = lo;
      if (this.peek() === ch("-") && this.pos + 1 < this.t.length && this.peek(1) !== ch("]")) {
        this.pos++;
        hi = this.classChar(whole);
        if (hi < lo) this.fail("invalid character class range", this.text(rangeStart));
      }
      // An explicit range keeps \n (ClassNL): no cutting either way in Envoy.
      addRangeFlags(cc, lo, hi, this.flags | Flag.ClassNL);
    }
    if (this.pos >= this.t.length) this.fail("missing ]", whole());
    this.pos++;
    if (negated) cc.negate();
    return charClass(cc, this.flags & ~Flag.FoldCase, true);
  }

  private classChar(whole: () => string): number {
    if (this.pos >= this.t.length) this.fail("missing ]", whole());
    if (this.peek() === ch("\\")) return this.parseEscape();
    const c = this.peek() as number;
    this.pos++;
    return c;
  }

  /** ParseCCName: [:alpha:] and [:^alpha:]; false when there is no closing :] (then '[' is a character). */
  private parseClassName(cc: RuneSet): boolean {
    let q = this.pos + 2;
    while (q + 1 < this.t.length && !(this.t[q] === ch(":") && this.t[q + 1] === ch("]"))) q++;
    if (q + 1 >= this.t.length) return false;
    const full = this.text(this.pos, q + 2);
    let name = this.text(this.pos + 2, q);
    const positive = !name.startsWith("^");
    if (!positive) name = name.slice(1);
    const group = Object.hasOwn(POSIX_GROUPS, name) ? POSIX_GROUPS[name] : undefined;
    if (group === undefined) this.fail("invalid character class range", full);
    this.pos = q + 2;
    addGroup(cc, group, positive, this.flags);
    return true;
  }

  // ---- stack operations (ParseState's Push* and Do*) ----

  /** PushRegexp: a class of one rune becomes a literal, [Aa] a folded literal. */
  private pushRegexp(re: Regexp): void {
    this.maybeConcatString(-1, 0);
    let r = re;
    if (r.op === "CharClass" && r.building) {
      const set = RuneSet.of(r.ranges);
      const lo = set.ranges[0]?.lo ?? -1;
      if (set.size() === 1) r = literal(lo, this.flags);
      else if (set.size() === 2 && lo >= 0x41 && lo <= 0x5a && set.contains(lo + 32))
        r = literal(lo + 32, this.flags | Flag.FoldCase);
    }
    this.stack.push(r);
  }

  private pushLiteral(r: number): void {
    if (this.flags & Flag.FoldCase && cycleFold(r) !== r) {
      const cc = new RuneSet();
      let x = r;
      do {
        cc.add(x, x);
        x = cycleFold(x);
      } while (x !== r);
      this.pushRegexp(charClass(cc, this.flags & ~Flag.FoldCase, true));
      return;
    }
    if (this.maybeConcatString(r, this.flags)) return;
    this.pushRegexp(literal(r, this.flags));
  }

  private pushSimple(op: Op): void {
    this.pushRegexp(node(op, this.flags));
  }

  private pushDot(): void {
    if (this.flags & Flag.DotNL) {
      this.pushSimple("AnyChar");
      return;
    }
    // . is [^\n].
    this.pushRegexp(
      charClass(
        RuneSet.of([
          { lo: 0, hi: 9 },
          { lo: 11, hi: RUNE_MAX },
        ]),
        this.flags & ~Flag.FoldCase,
        true,
      ),
    );
  }

  private isMarker(re: Regexp | undefined): boolean {
    return re !== undefined && (re.op === "LeftParen" || re.op === "VerticalBar");
  }

  private pushRepeatOp(op: Op, opstr: string, nongreedy: boolean): void {
    const top = this.top();
    if (top === undefined || this.isMarker(top)) this.fail("no argument for repetition operator", opstr);
    const fl = nongreedy ? this.flags ^ Flag.NonGreedy : this.flags;
    // Squash **, ++, ?? and then *+, *?, +*, +?, ?* and ?+ to *.
    if (op === top.op && fl === top.flags) return;
    if ((top.op === "Star" || top.op === "Plus" || top.op === "Quest") && fl === top.flags) {
      top.op = "Star";
      return;
    }
    this.stack[this.stack.length - 1] = node(op, fl, [finish(top)]);
  }

  private pushRepetition(min: number, max: number, opstr: string, nongreedy: boolean): void {
    if ((max !== -1 && max < min) || min > MAX_REPEAT || max > MAX_REPEAT)
      this.fail("invalid repetition size", opstr);
    const top = this.top();
    if (top === undefined || this.isMarker(top)) this.fail("no argument for repetition operator", opstr);
    const re = node("Repeat", nongreedy ? this.flags ^ Flag.NonGreedy : this.flags, [finish(top)]);
    re.min = min;
    re.max = max;
    this.stack[this.stack.length - 1] = re;
    // RepetitionWalker: nested counts may not multiply past 1000 (integer division, as RE2 does).
    if ((min >= 2 || max >= 2) && repetitionBudget(re, MAX_REPEAT) === 0)
      this.fail("invalid repetition size", opstr);
  }

  /** A marker for ( (capture > 0) or (?: (capture < 0). */
  private doLeftParen(capture: number): void {
    const marker = node("LeftParen", this.flags);
    marker.cap = capture > 0 ? ++this.ncap : -1;
    this.pushRegexp(marker);
  }

  private doVerticalBar(): void {
    this.maybeConcatString(-1, 0);
    this.doConcatenation();
    const r1 = this.top();
    const r2 = this.below(1);
    if (r1 !== undefined && r2?.op === "VerticalBar") {
      const r3 = this.below(2);
      const n = this.stack.length;
      const small = (re: Regexp): boolean =>
        re.op === "Literal" || re.op === "CharClass" || re.op === "AnyChar";
      // AnyChar beside the bar swallows a literal, class or AnyChar on the other side.
      if (r3 !== undefined && !this.isMarker(r3) && (r1.op === "AnyChar" || r3.op === "AnyChar")) {
        if (r3.op === "AnyChar" && small(r1)) {
          this.stack.pop();
          return;
        }
        if (r1.op === "AnyChar" && small(r3)) {
          this.stack.splice(n - 3, 3, r1, r2);
          return;
        }
      }
      // Move r1 below the bar.
      this.stack.splice(n - 2, 2, r1, r2);
      return;
    }
    this.pushSimple("VerticalBar");
  }

  private doRightParen(): void {
    this.doAlternation();
    const r1 = this.top();
    const r2 = this.below(1);
    if (r1 === undefined || r2 === undefined || r2.op !== "LeftParen")
      this.fail("unexpected )", this.pattern);
    this.stack.length -= 2;
    this.flags = r2.flags;
    if (r2.cap > 0) {
      const re = node("Capture", r2.flags, [finish(r1)]);
      re.cap = r2.cap;
      this.pushRegexp(re);
    } else this.pushRegexp(r1);
  }

  private doFinish(): Regexp {
    this.doAlternation();
    const re = this.top();
    if (re === undefined || this.stack.length > 1) this.fail("missing )", this.pattern);
    return finish(re);
  }

  /** DoCollapse: what lies above the nearest marker becomes one Concat or Alternate, flattening its own kind. */
  private doCollapse(op: "Concat" | "Alternate"): void {
    let m = this.stack.length;
    while (m > 0 && !this.isMarker(this.stack[m - 1])) m--;
    if (this.stack.length - m === 1) return;
    const subs: Regexp[] = [];
    for (const re of this.stack.slice(m)) {
      if (re.op === op) subs.push(...re.subs);
      else subs.push(finish(re));
    }
    this.stack.length = m;
    this.stack.push(this.concatOrAlternate(op, subs, this.flags, true));
  }

  private doConcatenation(): void {
    const top = this.top();
    if (top === undefined || this.isMarker(top)) this.pushRegexp(node("EmptyMatch", this.flags));
    this.doCollapse("Concat");
  }

  private doAlternation(): void {
    this.doVerticalBar();
    this.stack.pop();
    this.doCollapse("Alternate");
  }

  /** MaybeConcatString: the top two literals on the stack become one string; r >= 0 reuses the top for it. */
  private maybeConcatString(r: number, flags: number): boolean {
    const re1 = this.top();
    const re2 = this.below(1);
    if (re1 === undefined || re2 === undefined) return false;
    const lit = (re: Regexp): boolean => re.op === "Literal" || re.op === "LiteralString";
    if (!lit(re1) || !lit(re2)) return false;
    if ((re1.flags & Flag.FoldCase) !== (re2.flags & Flag.FoldCase)) return false;
    if (re2.op === "Literal") {
      re2.op = "LiteralString";
      re2.runes = [re2.rune];
    }
    re2.runes.push(...(re1.op === "Literal" ? [re1.rune] : re1.runes));
    if (r >= 0) {
      re1.op = "Literal";
      re1.rune = r;
      re1.runes = [];
      re1.flags = flags;
      return true;
    }
    this.stack.pop();
    return false;
  }

  /** Regexp::ConcatOrAlternate. */
  concatOrAlternate(op: "Concat" | "Alternate", subs: Regexp[], flags: number, canFactor: boolean): Regexp {
    if (subs.length === 1) return subs[0] as Regexp;
    if (subs.length === 0) return node(op === "Alternate" ? "NoMatch" : "EmptyMatch", flags);
    let s = subs;
    if (op === "Alternate" && canFactor) {
      s = this.factorAlternation(subs, flags);
      if (s.length === 1) return s[0] as Regexp;
    }
    return node(op, flags, s);
  }

  // ---- FactorAlternation: three rounds, each recursing into what it factored ----

  private factorAlternation(input: Regexp[], flags: number): Regexp[] {
    let sub = input;
    for (const round of [1, 2, 3] as const) {
      const splices =
        round === 1 ? this.round1(sub) : round === 2 ? this.round2(sub) : this.round3(sub, flags);
      if (splices.length === 0) continue;
      const out: Regexp[] = [];
      let i = 0;
      for (const sp of splices) {
        while (i < sp.start) out.push(sub[i++] as Regexp);
        if (round === 3) out.push(sp.prefix);
        else {
          const suffixes = this.factorAlternation(sub.slice(sp.start, sp.start + sp.n), flags);
          const alt = this.concatOrAlternate("Alternate", suffixes, flags, false);
          out.push(this.concatOrAlternate("Concat", [sp.prefix, alt], flags, false));
        }
        i = sp.start + sp.n;
      }
      while (i < sub.length) out.push(sub[i++] as Regexp);
      sub = out;
    }
    return sub;
  }

  /** Round 1: common leading literal strings. */
  private round1(sub: Regexp[]): Splice[] {
    const splices: Splice[] = [];
    let start = 0;
    let rune: number[] = [];
    let nrune = 0;
    let runeflags = 0;
    for (let i = 0; i <= sub.length; i++) {
      let lead: Leading = { runes: [], flags: 0 };
      if (i < sub.length) {
        lead = leadingString(sub[i] as Regexp);
        if (lead.flags === runeflags) {
          let same = 0;
          while (same < nrune && same < lead.runes.length && rune[same] === lead.runes[same]) same++;
          if (same > 0) {
            nrune = same;
            continue;
          }
        }
      }
      if (i - start >= 2) {
        const prefix = literalString(rune.slice(0, nrune), runeflags);
        for (let j = start; j < i; j++) removeLeadingString(sub[j] as Regexp, nrune);
        splices.push({ prefix, start, n: i - start });
      }
      if (i < sub.length) {
        start = i;
        rune = lead.runes;
        nrune = lead.runes.length;
        runeflags = lead.flags;
      }
    }
    return splices;
  }

  /** Round 2: a common first piece, when it is simple (empty-width, a class, a fixed repeat of one). */
  private round2(sub: Regexp[]): Splice[] {
    const splices: Splice[] = [];
    let start = 0;
    let first: Regexp | undefined;
    for (let i = 0; i <= sub.length; i++) {
      let firstI: Regexp | undefined;
      if (i < sub.length) {
        firstI = leadingRegexp(sub[i] as Regexp);
        if (first !== undefined && factorable(first) && regexpEqual(first, firstI)) continue;
      }
      if (i - start >= 2 && first !== undefined) {
        for (let j = start; j < i; j++) sub[j] = removeLeadingRegexp(sub[j] as Regexp);
        splices.push({ prefix: first, start, n: i - start });
      }
      if (i < sub.length) {
        start = i;
        first = firstI;
      }
    }
    return splices;
  }

  /** Round 3: runs of literals and classes become one class. */
  private round3(sub: Regexp[], flags: number): Splice[] {
    const splices: Splice[] = [];
    let start = 0;
    let first: Regexp | undefined;
    const merges = (re: Regexp | undefined): boolean => re?.op === "Literal" || re?.op === "CharClass";
    for (let i = 0; i <= sub.length; i++) {
      let firstI: Regexp | undefined;
      if (i < sub.length) {
        firstI = sub[i];
        if (first !== undefined && merges(first) && merges(firstI)) continue;
      }
      if (i - start >= 2) {
        const old = new RuneSet();
        const fixed = new RuneSet();
        for (let j = start; j < i; j++) {
          const re = sub[j] as Regexp;
          if (re.op === "CharClass") {
            for (const r of re.ranges) {
              old.add(r.lo, r.hi);
              fixed.add(r.lo, r.hi);
            }
          } else {
            addRangeFlags(old, re.rune, re.rune, re.flags);
            const tmp = new RuneSet();
            addRangeFlags(tmp, re.rune, re.rune, re.flags);
            fixed.addSet(tmp);
          }
        }
        if (!sameRanges(old.ranges, fixed.ranges)) this.foldMergeDiffers = true;
        const set = this.options.foldMergeFixed ? fixed : old;
        splices.push({ prefix: charClass(set, flags, false), start, n: i - start });
      }
      if (i < sub.length) {
        start = i;
        first = firstI;
      }
    }
    return splices;
  }
}

interface Splice {
  readonly prefix: Regexp;
  readonly start: number;
  readonly n: number;
}

interface Leading {
  readonly runes: number[];
  readonly flags: number;
}

function sameRanges(a: readonly RuneRange[], b: readonly RuneRange[]): boolean {
  return a.length === b.length && a.every((r, i) => r.lo === b[i]?.lo && r.hi === b[i]?.hi);
}

/** FinishRegexp: a class is no longer being built. */
function finish(re: Regexp): Regexp {
  re.building = false;
  return re;
}

/** RepetitionWalker: what is left of the budget after dividing by each nested count. */
function repetitionBudget(re: Regexp, budget: number): number {
  let arg = budget;
  if (re.op === "Repeat") {
    const m = re.max < 0 ? re.min : re.max;
    if (m > 0) arg = Math.trunc(arg / m);
  }
  let least = arg;
  for (const s of re.subs) least = Math.min(least, repetitionBudget(s, arg));
  return least;
}

function factorable(first: Regexp): boolean {
  switch (first.op) {
    case "BeginLine":
    case "EndLine":
    case "WordBoundary":
    case "NoWordBoundary":
    case "BeginText":
    case "EndText":
    case "CharClass":
    case "AnyChar":
    case "AnyByte":
      return true;
    case "Repeat": {
      const s = sub0(first).op;
      return (
        first.min === first.max &&
        (s === "Literal" || s === "CharClass" || s === "AnyChar" || s === "AnyByte")
      );
    }
    default:
      return false;
  }
}

/** Regexp::LeadingString. */
function leadingString(input: Regexp): Leading {
  let re = input;
  while (re.op === "Concat" && re.subs.length > 0) re = sub0(re);
  const flags = re.flags & Flag.FoldCase;
  if (re.op === "Literal") return { runes: [re.rune], flags };
  if (re.op === "LiteralString") return { runes: re.runes, flags };
  return { runes: [], flags };
}

/** Regexp::RemoveLeadingString: edits re in place. */
function removeLeadingString(input: Regexp, n: number): void {
  const stk: Regexp[] = [];
  let re = input;
  while (re.op === "Concat") {
    if (stk.length < 4) stk.push(re);
    re = sub0(re);
  }
  if (re.op === "Literal") {
    re.rune = 0;
    re.op = "EmptyMatch";
  } else if (re.op === "LiteralString") {
    if (n >= re.runes.length) {
      re.runes = [];
      re.op = "EmptyMatch";
    } else if (n === re.runes.length - 1) {
      re.rune = re.runes[re.runes.length - 1] as number;
      re.runes = [];
      re.op = "Literal";
    } else re.runes = re.runes.slice(n);
  }
  while (stk.length > 0) {
    const c = stk.pop() as Regexp;
    if (sub0(c).op !== "EmptyMatch") continue;
    if (c.subs.length === 2) {
      // Regexp::Swap: the concat becomes its second part, in place.
      Object.assign(c, c.subs[1] as Regexp);
    } else if (c.subs.length > 2) c.subs = c.subs.slice(1);
    else throw new Re2ModelError("concat of one");
  }
}

/** Regexp::LeadingRegexp. */
function leadingRegexp(re: Regexp): Regexp | undefined {
  if (re.op === "EmptyMatch") return undefined;
  if (re.op === "Concat" && re.subs.length >= 2) return sub0(re).op === "EmptyMatch" ? undefined : sub0(re);
  return re;
}

/** Regexp::RemoveLeadingRegexp. */
function removeLeadingRegexp(re: Regexp): Regexp {
  if (re.op === "EmptyMatch") return re;
  if (re.op === "Concat" && re.subs.length >= 2) {
    if (sub0(re).op === "EmptyMatch") return re;
    if (re.subs.length === 2) return re.subs[1] as Regexp;
    re.subs = re.subs.slice(1);
    return re;
  }
  return node("EmptyMatch", re.flags);
}
