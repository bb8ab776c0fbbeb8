// Gateway API durations (GEP-2257: `1h`, `1m30s`, `500ms`) as milliseconds: one
// parser for admission, conversion and the snapshot, so all three agree on what
// a timeout means.

const UNIT_MS: Readonly<Record<string, number>> = { h: 3_600_000, m: 60_000, s: 1_000, ms: 1 };
const DURATION = /^([0-9]{1,5}(h|ms|m|s)){1,4}$/;
const PART = /([0-9]{1,5})(h|ms|m|s)/g;

// Thousands of rules share a handful of timeouts; the bound keeps odd input from growing it.
const cache = new Map<string, number | undefined>();
const CACHE_LIMIT = 1024;

/** Milliseconds, or undefined when the text is not a Gateway API duration. */
export function parseGatewayDuration(text: string): number | undefined {
  if (cache.has(text)) return cache.get(text);
  const ms = parse(text);
  if (cache.size >= CACHE_LIMIT) cache.clear();
  cache.set(text, ms);
  return ms;
}

function parse(text: string): number | undefined {
  if (!DURATION.test(text)) return undefined;
  let total = 0;
  const seen = new Set<string>();
  for (const [, digits, unit] of text.matchAll(PART)) {
    // GEP-2257 allows each unit once; `1s1s` is a typo, not 2s.
    if (unit === undefined || digits === undefined || seen.has(unit)) return undefined;
    seen.add(unit);
    total += Number(digits) * (UNIT_MS[unit] ?? 0);
  }
  return total;
}
