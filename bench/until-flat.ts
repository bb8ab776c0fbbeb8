// Waiting out work that goes on after a bench's phase: the apiserver's watch
// cache of the version it does not store has the conversion webhook convert
// thousands of objects seconds after a burst of writes, which would otherwise
// fall into the next phase.

import { performance } from "node:perf_hooks";

/**
 * Reads `count` once a second until it has not moved for `quietMs`, or
 * `maxMs` have gone by; answers how long that took and how much it moved.
 */
export async function untilFlat(
  count: () => Promise<number>,
  quietMs: number,
  maxMs: number,
): Promise<{ seconds: number; moved: number }> {
  const started = performance.now();
  const first = await count();
  let last = first;
  for (let quiet = 0; quiet < quietMs && performance.now() - started < maxMs;) {
    await new Promise((r) => setTimeout(r, 1000));
    const now = await count();
    quiet = now === last ? quiet + 1000 : 0;
    last = now;
  }
  return { seconds: (performance.now() - started) / 1000, moved: last - first };
}
