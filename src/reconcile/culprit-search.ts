// Which route made a client refuse a snapshot. A proxy refuses an update whole
// (Envoy's one `edge` route configuration holds every tenant's routes), so a
// refused snapshot freezes every change in it, and the client's words seldom
// name a route. The suspects are the routes that changed since the last
// snapshot the clients took; trials serve that last state plus some of the
// changes and watch the client that refused: a taken trial clears what it
// added, a refused one holds the cause. The last state alone is tried first
// (it must still be taken), then halving finds one cause in about log2(n)
// more trials; the last candidate is blamed only once a trial of it alone on
// top of the cleared changes was refused, and a trial that cannot tell (a
// client gone, a newer snapshot served) ends the search with no one blamed.

import type { EdgeRouteV2 } from "../api/types.js";

/** A route changed since the last snapshot the clients took: as it is now, and as they took it (absent: new). */
export interface Suspect {
  readonly key: string;
  readonly now: EdgeRouteV2;
  readonly before?: EdgeRouteV2;
}

/** What the client that refused did with a trial. */
export type TrialAnswer = "taken" | "refused" | "unknown";

/** Serves the routes as the clients last took them, with the changes of `included` on top. */
export type Trial = (included: ReadonlySet<string>) => Promise<TrialAnswer>;

export interface SearchResult {
  /** The route blamed; absent when no single route could be shown to cause the refusal. */
  readonly culprit?: Suspect;
  readonly trials: number;
  /** The state before every suspect's change was refused too: the cause is not among them. */
  readonly baseRefused?: boolean;
}

/** Strings of a route's spec long enough to tell it apart in a client's words (regexes, header values, paths). */
function tellingStrings(route: EdgeRouteV2): string[] {
  const out: string[] = [];
  const walk = (v: unknown): void => {
    if (typeof v === "string") {
      if (v.length >= 6) out.push(v);
    } else if (Array.isArray(v)) v.forEach(walk);
    else if (v !== null && typeof v === "object") Object.values(v).forEach(walk);
  };
  walk(route.spec);
  return out;
}

/** The one suspect the client's words name (by key, or by a string of its spec no other suspect has); else undefined. */
export function namedInWords(suspects: readonly Suspect[], words: string): Suspect | undefined {
  const named = suspects.filter((s) => words.includes(s.key));
  if (named.length === 1) return named[0];
  if (named.length > 1) return undefined;
  const owners = new Map<string, Set<string>>();
  for (const s of suspects)
    for (const text of tellingStrings(s.now)) {
      let set = owners.get(text);
      if (set === undefined) owners.set(text, (set = new Set()));
      set.add(s.key);
    }
  // A string inside a longer one that also matched (`/a` in `/ab`) says nothing of its own.
  const matched = [...owners].filter(([text, keys]) => keys.size === 1 && words.includes(text));
  const hits = new Set<string>();
  for (const [text, keys] of matched)
    if (!matched.some(([other]) => other !== text && other.includes(text))) for (const k of keys) hits.add(k);
  return hits.size === 1 ? suspects.find((s) => hits.has(s.key)) : undefined;
}

/**
 * Finds the suspect whose change makes the client refuse, in at most
 * `maxTrials` trials. `words` is what the client said; a suspect it names is
 * tried first, alone against every other change.
 */
export async function findCulprit(
  suspects: readonly Suspect[],
  trial: Trial,
  words: string,
  maxTrials = 24,
): Promise<SearchResult> {
  let trials = 0;
  const run = async (included: ReadonlySet<string>): Promise<TrialAnswer> => {
    trials++;
    return trial(included);
  };
  const keys = suspects.map((s) => s.key);
  const byKey = new Map(suspects.map((s) => [s.key, s]));
  if (keys.length === 0) return { trials };

  const named = namedInWords(suspects, words);
  if (named !== undefined && keys.length > 1) {
    // Every other change without it: taken means the refusal is its.
    const others = new Set(keys.filter((k) => k !== named.key));
    const answer = await run(others);
    if (answer === "taken") return { culprit: named, trials };
    if (answer === "unknown") return { trials };
  }

  // What the clients took must still be taken (a client that joined since may
  // refuse an old route): halving blames nobody fairly on a refused base.
  const base = await run(new Set());
  if (base !== "taken") return base === "refused" ? { trials, baseRefused: true } : { trials };

  const cleared = new Set<string>();
  let candidates = keys;
  // Whether the last refused trial was the cleared changes and the one candidate left.
  let lastAlone = keys.length === 1;
  while (candidates.length > 1) {
    if (trials >= maxTrials) return { trials };
    const half = candidates.slice(0, Math.ceil(candidates.length / 2));
    const answer = await run(new Set([...cleared, ...half]));
    if (answer === "unknown") return { trials };
    if (answer === "taken") {
      for (const k of half) cleared.add(k);
      candidates = candidates.slice(half.length);
      lastAlone = false;
    } else {
      candidates = half;
      lastAlone = half.length === 1;
    }
  }
  const [last] = candidates;
  if (last === undefined) return { trials };
  if (lastAlone) return { culprit: byKey.get(last), trials };
  if (trials >= maxTrials) return { trials };
  // Alone on what the client took: blamed only if that is refused.
  const answer = await run(new Set([...cleared, last]));
  return answer === "refused" ? { culprit: byKey.get(last), trials } : { trials };
}
