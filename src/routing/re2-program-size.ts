// The size of the program C++ RE2 compiles for a pattern, RE2::ProgramSize(),
// which Envoy compares with re2.max_program_size.error_level (100 by default;
// source/common/common/regex.cc). Modelled on RE2's own steps, because the
// JavaScript ports compile to runes while C++ RE2 compiles to UTF-8 bytes:
//  1. parse (re2-parse.ts), with RE2's literal strings and factoring;
//  2. RE2::Init takes a required literal prefix off ^abc... (RequiredPrefix)
//     and compiles only the rest;
//  3. simplify (re2-simplify.ts): counted repetition becomes copies;
//  4. compile (re2/compile.cc): UTF-8 byte ranges for classes, with its
//     suffix cache and trie; Alt for | * + ?; two Capture instructions per
//     group; the unanchored .*? prefix; Match and Fail;
//  5. Prog::Optimize and Prog::Flatten (re2/prog.cc): the size RE2 reports is
//     that of the flattened program, without Alt and Nop instructions.
// compile.cc and prog.cc build the same programs from RE2 2022-06-01 (Debian
// 12's, which the oracle test runs) to RE2's head of 2026-01. The oracle test
// (re2-check.oracle.test.ts) runs C++ RE2 itself and checks that this is
// never below what RE2 reports.

import { parseRe2, Re2SyntaxError, Unsupported, type UnsupportedKind } from "./re2-parse.js";
import {
  ENVOY_PARSE_FLAGS,
  Flag,
  foldsAscii,
  literalString,
  node,
  Re2ModelError,
  sub0,
  type Regexp,
} from "./re2-regexp.js";
import { simplify } from "./re2-simplify.js";

export type ProgramSize =
  | { readonly kind: "size"; readonly size: number }
  | { readonly kind: "syntax"; readonly reason: string }
  | { readonly kind: "unsupported"; readonly what: UnsupportedKind }
  /**
   * More instructions than the model compiles (INSTRUCTION_BUDGET); atLeast
   * is a lower bound of RE2's size, from what was compiled by then.
   */
  | { readonly kind: "too-large"; readonly atLeast: number }
  | { readonly kind: "unknown"; readonly reason: string };

/**
 * Compiled instructions (before Flatten drops Alt and Nop) past which the
 * model stops and the pattern is refused: ten times Envoy's limit, so only a
 * pattern that compiles mostly to dead code could flatten under 100 past it,
 * and a hostile pattern costs admission a millisecond or two, not forty.
 */
export const INSTRUCTION_BUDGET = 1000;

/** RE2::ProgramSize() for the pattern as Envoy builds it (RE2(pattern, RE2::Quiet)). */
export function re2ProgramSize(pattern: string): ProgramSize {
  try {
    const first = sizeWith(pattern, false);
    if (!first.foldMergeDiffers) return { kind: "size", size: first.size };
    // RE2 releases differ in one corner of factoring: take the larger.
    return { kind: "size", size: Math.max(first.size, sizeWith(pattern, true).size) };
  } catch (err) {
    if (err instanceof Re2SyntaxError) return { kind: "syntax", reason: err.message };
    if (err instanceof Unsupported) return { kind: "unsupported", what: err.kind };
    if (err instanceof OverBudget) return { kind: "too-large", atLeast: err.atLeast };
    // A pattern nested deeper than the stack (RangeError), a state the model
    // never expects (Re2ModelError), or a bug: refused, never admitted.
    return { kind: "unknown", reason: err instanceof Error ? err.message : String(err) };
  }
}

function sizeWith(pattern: string, foldMergeFixed: boolean): { size: number; foldMergeDiffers: boolean } {
  const parsed = parseRe2(pattern, ENVOY_PARSE_FLAGS, { foldMergeFixed });
  return { size: compileSize(requiredPrefixSuffix(parsed.re)), foldMergeDiffers: parsed.foldMergeDiffers };
}

/** Regexp::RequiredPrefix: for ^literal... RE2 matches the literal itself and compiles only what follows. */
function requiredPrefixSuffix(re: Regexp): Regexp {
  if (re.op !== "Concat") return re;
  let i = 0;
  while (i < re.subs.length && re.subs[i]?.op === "BeginText") i++;
  if (i === 0 || i >= re.subs.length) return re;
  const lit = re.subs[i] as Regexp;
  if (lit.op !== "Literal" && lit.op !== "LiteralString") return re;
  const rest = re.subs.slice(i + 1);
  if (rest.length === 0) return node("EmptyMatch", re.flags);
  return rest.length === 1 ? (rest[0] as Regexp) : node("Concat", re.flags, rest);
}

// ---- the compiler (re2/compile.cc) ----

type Opcode = "Fail" | "Alt" | "AltMatch" | "ByteRange" | "Capture" | "EmptyWidth" | "Match" | "Nop";

interface Inst {
  op: Opcode;
  out: number;
  out1: number;
  lo: number;
  hi: number;
  fold: boolean;
}

/** A hole to fill: instruction id and which of its exits (out1 when odd), as RE2's PatchList entries. */
type Patch = number;

interface Frag {
  readonly begin: number;
  readonly end: readonly Patch[];
  readonly nullable: boolean;
}

const NO_MATCH: Frag = { begin: 0, end: [], nullable: false };

class OverBudget extends Error {
  constructor(readonly atLeast: number) {
    super("over budget");
  }
}

class Compiler {
  readonly inst: Inst[] = [];
  private runeCache = new Map<string, number>();
  private rangeBegin = 0;
  private rangeEnd: Patch[] = [];

  private readonly deadMemo = new WeakMap<Regexp, boolean>();
  /** Trie copies of cached heads: each may leave its original unreachable. */
  private copies = 0;

  constructor() {
    this.alloc("Fail");
  }

  /**
   * A lower bound of the flattened size: every byte, capture and empty-width
   * instruction compiled outside dead code is reachable and Flatten keeps
   * each, but a trie copy may strand its original; and the Fail instruction.
   */
  private survivors(): number {
    const kept = this.inst.filter(
      (i) => i.op === "ByteRange" || i.op === "Capture" || i.op === "EmptyWidth",
    ).length;
    return kept - this.copies + 1;
  }

  private dead(re: Regexp): boolean {
    return compilesToNoMatch(re, this.deadMemo);
  }

  at(id: number): Inst {
    const ip = this.inst[id];
    if (ip === undefined) throw new Re2ModelError(`no instruction ${id}`);
    return ip;
  }

  private alloc(op: Opcode): number {
    if (this.inst.length >= INSTRUCTION_BUDGET) throw new OverBudget(this.survivors());
    this.inst.push({ op, out: 0, out1: 0, lo: 0, hi: 0, fold: false });
    return this.inst.length - 1;
  }

  private patch(list: readonly Patch[], to: number): void {
    for (const p of list) {
      const ip = this.at(p >> 1);
      if (p & 1) ip.out1 = to;
      else ip.out = to;
    }
  }

  cat(a: Frag, b: Frag): Frag {
    if (a.begin === 0 || b.begin === 0) return NO_MATCH;
    // Elide a leading no-op.
    const begin = this.at(a.begin);
    if (begin.op === "Nop" && a.end[0] === a.begin << 1 && begin.out === 0) {
      this.patch(a.end, b.begin);
      return b;
    }
    this.patch(a.end, b.begin);
    return { begin: a.begin, end: b.end, nullable: a.nullable && b.nullable };
  }

  alt(a: Frag, b: Frag): Frag {
    if (a.begin === 0) return b;
    if (b.begin === 0) return a;
    const id = this.alloc("Alt");
    this.at(id).out = a.begin;
    this.at(id).out1 = b.begin;
    return { begin: id, end: [...a.end, ...b.end], nullable: a.nullable || b.nullable };
  }

  /** An Alt that loops or skips: the repetition's exit is out1 when greedy, out when not. */
  private loopAlt(target: number, nongreedy: boolean): { id: number; exit: Patch } {
    const id = this.alloc("Alt");
    if (nongreedy) this.at(id).out1 = target;
    else this.at(id).out = target;
    return { id, exit: nongreedy ? id << 1 : (id << 1) | 1 };
  }

  plus(a: Frag, nongreedy: boolean): Frag {
    const { id, exit } = this.loopAlt(a.begin, nongreedy);
    this.patch(a.end, id);
    return { begin: a.begin, end: [exit], nullable: a.nullable };
  }

  star(a: Frag, nongreedy: boolean): Frag {
    // A nullable body needs (a+)? to keep RE2's priorities: one more Alt.
    if (a.nullable) return this.quest(this.plus(a, nongreedy), nongreedy);
    const { id, exit } = this.loopAlt(a.begin, nongreedy);
    this.patch(a.end, id);
    return { begin: id, end: [exit], nullable: true };
  }

  quest(a: Frag, nongreedy: boolean): Frag {
    if (a.begin === 0) return this.nop();
    const { id, exit } = this.loopAlt(a.begin, nongreedy);
    return { begin: id, end: [exit, ...a.end], nullable: true };
  }

  byteRange(lo: number, hi: number, fold: boolean): Frag {
    const id = this.alloc("ByteRange");
    Object.assign(this.at(id), { lo, hi, fold });
    return { begin: id, end: [id << 1], nullable: false };
  }

  nop(): Frag {
    const id = this.alloc("Nop");
    return { begin: id, end: [id << 1], nullable: true };
  }

  match(): Frag {
    return { begin: this.alloc("Match"), end: [], nullable: false };
  }

  emptyWidth(): Frag {
    const id = this.alloc("EmptyWidth");
    return { begin: id, end: [id << 1], nullable: true };
  }

  capture(a: Frag): Frag {
    if (a.begin === 0) return NO_MATCH;
    const id = this.alloc("Capture");
    this.alloc("Capture");
    this.at(id).out = a.begin;
    this.patch(a.end, id + 1);
    return { begin: id, end: [(id + 1) << 1], nullable: a.nullable };
  }

  literal(r: number, fold: boolean): Frag {
    if (r < 0x80) return this.byteRange(r, r, fold);
    const bytes = utf8(r);
    let f = this.byteRange(bytes[0] as number, bytes[0] as number, false);
    for (const b of bytes.slice(1)) f = this.cat(f, this.byteRange(b, b, false));
    return f;
  }

  // ---- the rune range compiler: a class as an alternation of UTF-8 byte sequences ----

  beginRange(): void {
    this.runeCache = new Map();
    this.rangeBegin = 0;
    this.rangeEnd = [];
  }

  endRange(): Frag {
    return { begin: this.rangeBegin, end: this.rangeEnd, nullable: false };
  }

  private uncachedSuffix(lo: number, hi: number, fold: boolean, next: number): number {
    const f = this.byteRange(lo, hi, fold);
    if (next !== 0) this.patch(f.end, next);
    else this.rangeEnd = [...this.rangeEnd, ...f.end];
    return f.begin;
  }

  private cachedSuffix(lo: number, hi: number, fold: boolean, next: number): number {
    const key = `${lo},${hi},${fold},${next}`;
    const hit = this.runeCache.get(key);
    if (hit !== undefined) return hit;
    const id = this.uncachedSuffix(lo, hi, fold, next);
    this.runeCache.set(key, id);
    return id;
  }

  private isCached(id: number): boolean {
    const ip = this.at(id);
    return this.runeCache.has(`${ip.lo},${ip.hi},${ip.fold},${ip.out}`);
  }

  private addSuffix(id: number): void {
    if (this.rangeBegin === 0) {
      this.rangeBegin = id;
      return;
    }
    // UTF-8: a trie of leading bytes keeps the fan-out down.
    this.rangeBegin = this.addSuffixRecursive(this.rangeBegin, id);
  }

  private addSuffixRecursive(rootIn: number, id: number): number {
    let root = rootIn;
    const f = this.findByteRange(root, id);
    if (f === undefined) {
      const alt = this.alloc("Alt");
      this.at(alt).out = root;
      this.at(alt).out1 = id;
      return alt;
    }
    let br = f.parent === undefined ? root : f.viaOut1 ? this.at(f.parent).out1 : this.at(f.parent).out;
    if (this.isCached(br)) {
      // A cached suffix is shared: change a copy of its head.
      const copy = this.alloc("ByteRange");
      this.copies++;
      const old = this.at(br);
      Object.assign(this.at(copy), { lo: old.lo, hi: old.hi, fold: old.fold, out: old.out });
      br = copy;
      if (f.parent === undefined) root = br;
      else if (f.viaOut1) this.at(f.parent).out1 = br;
      else this.at(f.parent).out = br;
    }
    const out = this.at(id).out;
    if (!this.isCached(id)) {
      // The new head is the latest instruction: RE2 frees it.
      if (id !== this.inst.length - 1) throw new Re2ModelError("freeing an instruction that is not the last");
      this.inst.pop();
    }
    const next = this.addSuffixRecursive(this.at(br).out, out);
    this.at(br).out = next;
    return root;
  }

  /** FindByteRange, forward: the root itself or the last alternative of the root Alt. */
  private findByteRange(
    root: number,
    id: number,
  ): { parent: number | undefined; viaOut1: boolean } | undefined {
    const r = this.at(root);
    if (r.op === "ByteRange")
      return this.sameRange(root, id) ? { parent: undefined, viaOut1: false } : undefined;
    if (r.op === "Alt") return this.sameRange(r.out1, id) ? { parent: root, viaOut1: true } : undefined;
    throw new Re2ModelError("trie root is neither Alt nor ByteRange");
  }

  private sameRange(a: number, b: number): boolean {
    const x = this.at(a);
    const y = this.at(b);
    return x.lo === y.lo && x.hi === y.hi && x.fold === y.fold;
  }

  addRuneRange(lo: number, hi: number, fold: boolean): void {
    if (lo > hi) return;
    if (lo === 0x80 && hi === 0x10ffff) {
      this.add80To10ffff();
      return;
    }
    // Split into ranges of one encoded length.
    for (const max of [0x7f, 0x7ff, 0xffff]) {
      if (lo <= max && max < hi) {
        this.addRuneRange(lo, max, fold);
        this.addRuneRange(max + 1, hi, fold);
        return;
      }
    }
    if (hi < 0x80) {
      this.addSuffix(this.uncachedSuffix(lo, hi, fold, 0));
      return;
    }
    // Split into ranges that agree on their leading bytes.
    for (let i = 1; i < 4; i++) {
      const m = (1 << (6 * i)) - 1;
      if ((lo & ~m) !== (hi & ~m)) {
        if ((lo & m) !== 0) {
          this.addRuneRange(lo, lo | m, fold);
          this.addRuneRange((lo | m) + 1, hi, fold);
          return;
        }
        if ((hi & m) !== m) {
          this.addRuneRange(lo, (hi & ~m) - 1, fold);
          this.addRuneRange(hi & ~m, hi, fold);
          return;
        }
      }
    }
    const ulo = utf8(lo);
    const uhi = utf8(hi);
    let id = 0;
    for (let i = ulo.length - 1; i >= 0; i--) {
      const a = ulo[i] as number;
      const b = uhi[i] as number;
      // Forward: the last byte and inner byte ranges are cached; the leading byte never.
      if (i === ulo.length - 1 || (a < b && i !== 0)) id = this.cachedSuffix(a, b, false, id);
      else id = this.uncachedSuffix(a, b, false, id);
    }
    this.addSuffix(id);
  }

  /** Add_80_10ffff: any non-ASCII rune, with overlong forms allowed to keep it small. */
  private add80To10ffff(): void {
    const cont1 = this.uncachedSuffix(0x80, 0xbf, false, 0);
    this.addSuffix(this.uncachedSuffix(0xc2, 0xdf, false, cont1));
    const cont2 = this.uncachedSuffix(0x80, 0xbf, false, cont1);
    this.addSuffix(this.uncachedSuffix(0xe0, 0xef, false, cont2));
    const cont3 = this.uncachedSuffix(0x80, 0xbf, false, cont2);
    this.addSuffix(this.uncachedSuffix(0xf0, 0xf4, false, cont3));
  }

  /** Compiler::PostVisit, walking the simplified regexp (each shared copy again). */
  walk(re: Regexp): Frag {
    // What compiles to NoMatch is unreachable in RE2's program: skipped, it
    // costs no budget, and the live instructions keep their order.
    if (this.dead(re)) return NO_MATCH;
    const nongreedy = (re.flags & Flag.NonGreedy) !== 0;
    switch (re.op) {
      case "NoMatch":
        return NO_MATCH;
      case "EmptyMatch":
        return this.nop();
      case "Concat": {
        const kids = re.subs.map((s) => this.walk(s));
        let f = kids[0];
        if (f === undefined) throw new Re2ModelError("empty concat");
        for (const k of kids.slice(1)) f = this.cat(f, k);
        return f;
      }
      case "Alternate": {
        const kids = re.subs.map((s) => this.walk(s));
        let f = kids[0];
        if (f === undefined) throw new Re2ModelError("empty alternation");
        for (const k of kids.slice(1)) f = this.alt(f, k);
        return f;
      }
      case "Star":
        return this.star(this.walk(sub0(re)), nongreedy);
      case "Plus":
        return this.plus(this.walk(sub0(re)), nongreedy);
      case "Quest":
        return this.quest(this.walk(sub0(re)), nongreedy);
      case "Literal":
        return this.literal(re.rune, (re.flags & Flag.FoldCase) !== 0);
      case "LiteralString": {
        if (re.runes.length === 0) return this.nop();
        let f: Frag | undefined;
        for (const r of re.runes) {
          const g = this.literal(r, (re.flags & Flag.FoldCase) !== 0);
          f = f === undefined ? g : this.cat(f, g);
        }
        return f as Frag;
      }
      case "AnyChar":
        this.beginRange();
        this.addRuneRange(0, 0x10ffff, false);
        return this.endRange();
      case "AnyByte":
        return this.byteRange(0, 0xff, false);
      case "CharClass": {
        if (re.ranges.length === 0) throw new Re2ModelError("empty class");
        // When the class treats A-Z as it treats a-z, one folded range does for both.
        const foldascii = foldsAscii(re.ranges);
        this.beginRange();
        for (const { lo, hi } of re.ranges) {
          if (foldascii && 0x41 <= lo && hi <= 0x5a) continue;
          let fold = foldascii;
          if ((lo <= 0x41 && 0x7a <= hi) || hi < 0x41 || 0x7a < lo || (0x5a < lo && hi < 0x61)) fold = false;
          this.addRuneRange(lo, hi, fold);
        }
        return this.endRange();
      }
      case "Capture":
        return re.cap < 0 ? this.walk(sub0(re)) : this.capture(this.walk(sub0(re)));
      case "BeginLine":
      case "EndLine":
      case "BeginText":
      case "EndText":
      case "WordBoundary":
      case "NoWordBoundary":
        return this.emptyWidth();
      default:
        throw new Re2ModelError(`cannot compile ${re.op}`);
    }
  }
}

/** Whether a subexpression compiles to NoMatch (begin 0), as NoMatch propagates in compile.cc. */
function compilesToNoMatch(re: Regexp, memo: WeakMap<Regexp, boolean>): boolean {
  const known = memo.get(re);
  if (known !== undefined) return known;
  let dead: boolean;
  switch (re.op) {
    case "NoMatch":
      dead = true;
      break;
    case "Concat":
      dead = re.subs.some((s) => compilesToNoMatch(s, memo));
      break;
    case "Alternate":
      dead = re.subs.every((s) => compilesToNoMatch(s, memo));
      break;
    case "Capture":
    case "Plus":
      dead = compilesToNoMatch(sub0(re), memo);
      break;
    default:
      dead = false;
  }
  memo.set(re, dead);
  return dead;
}

/** RE2's encoding of a rune (util/rune.cc runetochar: surrogates encode like any other rune). */
function utf8(r: number): number[] {
  if (r < 0x80) return [r];
  if (r < 0x800) return [0xc0 | (r >> 6), 0x80 | (r & 0x3f)];
  if (r < 0x10000) return [0xe0 | (r >> 12), 0x80 | ((r >> 6) & 0x3f), 0x80 | (r & 0x3f)];
  return [0xf0 | (r >> 18), 0x80 | ((r >> 12) & 0x3f), 0x80 | ((r >> 6) & 0x3f), 0x80 | (r & 0x3f)];
}

/** IsAnchorStart and IsAnchorEnd: a leading \A (trailing \z) within depth 4 becomes empty and the program anchored. */
function stripAnchor(re: Regexp, which: "BeginText" | "EndText", depth: number): Regexp | undefined {
  if (depth >= 4) return undefined;
  switch (re.op) {
    case "Concat": {
      if (re.subs.length === 0) return undefined;
      const k = which === "BeginText" ? 0 : re.subs.length - 1;
      const inner = stripAnchor(re.subs[k] as Regexp, which, depth + 1);
      if (inner === undefined) return undefined;
      const subs = [...re.subs];
      subs[k] = inner;
      return subs.length === 1 ? inner : node("Concat", re.flags, subs);
    }
    case "Capture": {
      const inner = stripAnchor(sub0(re), which, depth + 1);
      if (inner === undefined) return undefined;
      const cap = node("Capture", re.flags, [inner]);
      cap.cap = re.cap;
      return cap;
    }
    case which:
      return literalString([], re.flags);
    default:
      return undefined;
  }
}

/** Compiler::Compile and Finish: the flattened program's size. */
function compileSize(re: Regexp): number {
  let sre = simplify(re);
  const anchoredStart = stripAnchor(sre, "BeginText", 0);
  if (anchoredStart !== undefined) sre = anchoredStart;
  sre = stripAnchor(sre, "EndText", 0) ?? sre;
  const c = new Compiler();
  let all = c.walk(sre);
  all = c.cat(all, c.match());
  const start = all.begin;
  // Unanchored: a non-greedy loop over any byte first.
  if (anchoredStart === undefined) all = c.cat(c.star(c.byteRange(0x00, 0xff, false), true), all);
  const startUnanchored = all.begin;
  // Nothing can match: the program is the Fail instruction alone.
  if (start === 0 && startUnanchored === 0) return 1;
  optimize(c, start);
  return flattenedSize(c, start, startUnanchored);
}

/** Prog::Optimize: skip Nops (from start only, as RE2 does), then mark .* before a match as AltMatch. */
function optimize(c: Compiler, start: number): void {
  const skipNops = (j0: number): number => {
    let j = j0;
    while (j !== 0 && c.at(j).op === "Nop") j = c.at(j).out;
    return j;
  };
  const queue = new Set<number>();
  const add = (id: number): void => {
    if (id !== 0) queue.add(id);
  };
  add(start);
  for (const id of queue) {
    const ip = c.at(id);
    ip.out = skipNops(ip.out);
    add(ip.out);
    if (ip.op === "Alt") {
      ip.out1 = skipNops(ip.out1);
      add(ip.out1);
    }
  }
  const isMatch = (id0: number): boolean => {
    let id = id0;
    for (;;) {
      const ip = c.at(id);
      if (ip.op === "Capture" || ip.op === "Nop") id = ip.out;
      else return ip.op === "Match";
    }
  };
  const anyByteLoop = (j: Inst, id: number): boolean =>
    j.op === "ByteRange" && j.out === id && j.lo === 0 && j.hi === 0xff;
  queue.clear();
  add(start);
  for (const id of queue) {
    const ip = c.at(id);
    add(ip.out);
    if (ip.op === "Alt") add(ip.out1);
    if (ip.op !== "Alt") continue;
    if (anyByteLoop(c.at(ip.out), id) && isMatch(ip.out1)) ip.op = "AltMatch";
    else if (isMatch(ip.out) && anyByteLoop(c.at(ip.out1), id)) ip.op = "AltMatch";
  }
}

/**
 * Prog::Flatten's instruction count: each "root" (Fail, the starts, every
 * target of a byte, capture or empty-width instruction, and what more than
 * one root reaches) gets a list of what it reaches through Alts and Nops;
 * the lists hold no Alt or Nop, but a Nop where one list enters another.
 */
function flattenedSize(c: Compiler, start: number, startUnanchored: number): number {
  const roots: number[] = [0];
  const isRoot = new Set<number>([0]);
  const addRoot = (id: number): void => {
    if (!isRoot.has(id)) {
      isRoot.add(id);
      roots.push(id);
    }
  };
  addRoot(startUnanchored);
  addRoot(start);
  // MarkSuccessors: roots, and each instruction's Alt predecessors.
  const preds = new Map<number, number[]>();
  const seen = new Set<number>();
  const stack = [startUnanchored];
  while (stack.length > 0) {
    let id = stack.pop() as number;
    for (;;) {
      if (seen.has(id)) break;
      seen.add(id);
      const ip = c.at(id);
      if (ip.op === "Alt" || ip.op === "AltMatch") {
        for (const out of [ip.out, ip.out1]) {
          const p = preds.get(out);
          if (p === undefined) preds.set(out, [id]);
          else p.push(id);
        }
        stack.push(ip.out1);
        id = ip.out;
      } else if (ip.op === "ByteRange" || ip.op === "Capture" || ip.op === "EmptyWidth") {
        addRoot(ip.out);
        id = ip.out;
      } else if (ip.op === "Nop") id = ip.out;
      else break;
    }
  }
  // MarkDominator, highest instruction first: what a root reaches but does not dominate is a root too.
  const sorted = [...roots].sort((a, b) => a - b);
  for (let k = sorted.length - 1; k > 0; k--) {
    const root = sorted[k] as number;
    if (root === startUnanchored || root === start) continue;
    const reached = epsilonClosure(c, root, isRoot);
    for (const id of reached) {
      for (const pred of preds.get(id) ?? []) {
        if (!reached.has(pred)) addRoot(id);
      }
    }
  }
  // EmitList for each root.
  let size = 0;
  for (const root of roots) {
    for (const id of epsilonClosure(c, root, isRoot)) {
      const ip = c.at(id);
      if (id !== root && isRoot.has(id)) size++;
      else if (ip.op !== "Alt" && ip.op !== "Nop") size++;
    }
  }
  return size;
}

/** What a root reaches through Alt, AltMatch and Nop, stopping at (but including) other roots. */
function epsilonClosure(c: Compiler, root: number, isRoot: ReadonlySet<number>): Set<number> {
  const reached = new Set<number>();
  const stack = [root];
  while (stack.length > 0) {
    let id = stack.pop() as number;
    for (;;) {
      if (reached.has(id)) break;
      reached.add(id);
      if (id !== root && isRoot.has(id)) break;
      const ip = c.at(id);
      if (ip.op === "Alt" || ip.op === "AltMatch") {
        stack.push(ip.out1);
        id = ip.out;
      } else if (ip.op === "Nop") id = ip.out;
      else break;
    }
  }
  return reached;
}
