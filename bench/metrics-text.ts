// Counters read from a Prometheus text page (a process's /metrics), for the
// benches that compare them before and after a phase.

export type Counts = Record<string, number>;

/** The named counters' series, each under its name with its labels kept (`name{a="b"}`). */
export function counterSeries(text: string, names: readonly string[]): Counts {
  const out: Counts = {};
  for (const line of text.split("\n")) {
    if (line.startsWith("#")) continue;
    const m = /^([a-z_]+)(\{[^}]*\})?\s+([0-9.e+-]+)$/.exec(line);
    if (!m || !names.includes(m[1] ?? "")) continue;
    out[`${m[1]}${m[2] ?? ""}`] = Number(m[3]);
  }
  return out;
}

/** The sums of `series` by the value of `label` (series without it go under ""). */
export function byLabel(series: Counts, label: string): Map<string, number> {
  const out = new Map<string, number>();
  const find = new RegExp(`[{,]${label}="([^"]*)"`);
  for (const [key, n] of Object.entries(series)) {
    const value = find.exec(key)?.[1] ?? "";
    out.set(value, (out.get(value) ?? 0) + n);
  }
  return out;
}
