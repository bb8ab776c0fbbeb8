// Regexp::Simplify (re2/simplify.cc) as RE2 runs it before compiling: the
// CoalesceWalker merges runs such as a*a+ into one repeat, then the
// SimplifyWalker expands counted repetition into copies (x{2,5} is
// xx(x(x(x)?)?)?) and turns full classes into AnyChar and empty ones into
// NoMatch. Copies share nodes, as RE2's do; the compiler walks each copy.
// RE2 from 2023-07 (commit e664633) copies a repeated empty-width op such as
// \b{5} once only; modelled as 2022-06-01, which copies it: never smaller.

import {
  Flag,
  node,
  Re2ModelError,
  regexpEqual,
  runeCount,
  RUNE_MAX,
  sub0,
  type Op,
  type Regexp,
} from "./re2-regexp.js";

export function simplify(re: Regexp): Regexp {
  return simplifyWalk(coalesce(re));
}

const isRepeatOp = (op: Op): boolean => op === "Star" || op === "Plus" || op === "Quest" || op === "Repeat";

function withSubs(re: Regexp, subs: Regexp[]): Regexp {
  const n = node(re.op, re.flags, subs);
  n.min = re.min;
  n.max = re.max;
  n.cap = re.cap;
  return n;
}

const changed = (re: Regexp, subs: readonly Regexp[]): boolean => subs.some((s, i) => s !== re.subs[i]);

// ---- CoalesceWalker ----

function coalesce(re: Regexp): Regexp {
  if (re.subs.length === 0) return re;
  const kids = re.subs.map(coalesce);
  if (re.op !== "Concat") return changed(re, kids) ? withSubs(re, kids) : re;
  let can = false;
  for (let i = 0; i + 1 < kids.length; i++)
    if (canCoalesce(kids[i] as Regexp, kids[i + 1] as Regexp)) can = true;
  if (!can) return changed(re, kids) ? node("Concat", re.flags, kids) : re;
  for (let i = 0; i + 1 < kids.length; i++) {
    if (canCoalesce(kids[i] as Regexp, kids[i + 1] as Regexp)) {
      const [a, b] = doCoalesce(kids[i] as Regexp, kids[i + 1] as Regexp);
      kids[i] = a;
      kids[i + 1] = b;
    }
  }
  // Every empty match goes, those DoCoalesce left and any that were there.
  return node(
    "Concat",
    re.flags,
    kids.filter((k) => k.op !== "EmptyMatch"),
  );
}

function canCoalesce(r1: Regexp, r2: Regexp): boolean {
  if (!isRepeatOp(r1.op)) return false;
  const s = sub0(r1);
  if (s.op !== "Literal" && s.op !== "CharClass" && s.op !== "AnyChar" && s.op !== "AnyByte") return false;
  if (
    isRepeatOp(r2.op) &&
    regexpEqual(s, sub0(r2)) &&
    (r1.flags & Flag.NonGreedy) === (r2.flags & Flag.NonGreedy)
  )
    return true;
  if (regexpEqual(s, r2)) return true;
  return (
    s.op === "Literal" &&
    r2.op === "LiteralString" &&
    r2.runes[0] === s.rune &&
    (s.flags & Flag.FoldCase) === (r2.flags & Flag.FoldCase)
  );
}

/** DoCoalesce: the new pair, usually an empty match and the merged repeat. */
function doCoalesce(r1: Regexp, r2: Regexp): [Regexp, Regexp] {
  const s = sub0(r1);
  const nre = node("Repeat", r1.flags, [s]);
  switch (r1.op) {
    case "Star":
      [nre.min, nre.max] = [0, -1];
      break;
    case "Plus":
      [nre.min, nre.max] = [1, -1];
      break;
    case "Quest":
      [nre.min, nre.max] = [0, 1];
      break;
    default:
      [nre.min, nre.max] = [r1.min, r1.max];
  }
  const empty = (): [Regexp, Regexp] => [node("EmptyMatch", 0), nre];
  switch (r2.op) {
    case "Star":
      nre.max = -1;
      return empty();
    case "Plus":
      nre.min++;
      nre.max = -1;
      return empty();
    case "Quest":
      if (nre.max !== -1) nre.max++;
      return empty();
    case "Repeat":
      nre.min += r2.min;
      if (r2.max === -1) nre.max = -1;
      else if (nre.max !== -1) nre.max += r2.max;
      return empty();
    case "Literal":
    case "CharClass":
    case "AnyChar":
    case "AnyByte":
      nre.min++;
      if (nre.max !== -1) nre.max++;
      return empty();
    case "LiteralString": {
      let n = 1;
      while (n < r2.runes.length && r2.runes[n] === s.rune) n++;
      nre.min += n;
      if (nre.max !== -1) nre.max += n;
      if (n === r2.runes.length) return empty();
      const rest = r2.runes.slice(n);
      const tail = rest.length === 1 ? node("Literal", r2.flags) : node("LiteralString", r2.flags);
      if (rest.length === 1) tail.rune = rest[0] as number;
      else tail.runes = rest;
      return [nre, tail];
    }
    default:
      throw new Re2ModelError(`coalesce ${r2.op}`);
  }
}

// ---- SimplifyWalker ----

function simplifyWalk(re: Regexp): Regexp {
  switch (re.op) {
    case "Concat":
    case "Alternate": {
      const kids = re.subs.map(simplifyWalk);
      return changed(re, kids) ? node(re.op, re.flags, kids) : re;
    }
    case "Capture": {
      const s = simplifyWalk(sub0(re));
      return s === sub0(re) ? re : withSubs(re, [s]);
    }
    case "Star":
    case "Plus":
    case "Quest": {
      const s = simplifyWalk(sub0(re));
      if (s.op === "EmptyMatch") return s;
      if (s === sub0(re)) return re;
      if (re.op === s.op && re.flags === s.flags) return s;
      return node(re.op, re.flags, [s]);
    }
    case "Repeat": {
      const s = simplifyWalk(sub0(re));
      if (s.op === "EmptyMatch") return s;
      return simplifyRepeat(s, re.min, re.max, re.flags);
    }
    case "CharClass": {
      const n = runeCount(re.ranges);
      if (n === 0) return node("NoMatch", re.flags);
      if (n === RUNE_MAX + 1) return node("AnyChar", re.flags);
      return re;
    }
    default:
      return re;
  }
}

/** Regexp::Star, Plus and Quest: they squash a repeat of a repeat with the same flags. */
function starPlusOrQuest(op: "Star" | "Plus" | "Quest", sub: Regexp, flags: number): Regexp {
  if (op === sub.op && flags === sub.flags) return sub;
  if ((sub.op === "Star" || sub.op === "Plus" || sub.op === "Quest") && flags === sub.flags) {
    return sub.op === "Star" ? sub : node("Star", flags, [sub0(sub)]);
  }
  return node(op, flags, [sub]);
}

function concat(subs: Regexp[], flags: number): Regexp {
  if (subs.length === 1) return subs[0] as Regexp;
  if (subs.length === 0) return node("EmptyMatch", flags);
  return node("Concat", flags, subs);
}

/** SimplifyRepeat: x{n,} is n-1 copies and x+; x{n,m} is n copies and m-n nested x?. */
function simplifyRepeat(re: Regexp, min: number, max: number, f: number): Regexp {
  if (max === -1) {
    if (min === 0) return starPlusOrQuest("Star", re, f);
    if (min === 1) return starPlusOrQuest("Plus", re, f);
    const subs: Regexp[] = Array.from({ length: min - 1 }, () => re);
    subs.push(starPlusOrQuest("Plus", re, f));
    return concat(subs, f);
  }
  if (min === 0 && max === 0) return node("EmptyMatch", f);
  if (min === 1 && max === 1) return re;
  let nre: Regexp | undefined;
  if (min > 0)
    nre = concat(
      Array.from({ length: min }, () => re),
      f,
    );
  if (max > min) {
    let suf = starPlusOrQuest("Quest", re, f);
    for (let i = min + 1; i < max; i++) suf = starPlusOrQuest("Quest", node("Concat", f, [re, suf]), f);
    nre = nre === undefined ? suf : node("Concat", f, [nre, suf]);
  }
  return nre ?? node("NoMatch", f);
}
