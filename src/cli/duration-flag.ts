// Durations on the command line, shared by every subcommand that takes one.

import { UsageError } from "./command.js";

/** Go-style durations: `300ms`, `15s`, `1m30s`, `0`. */
export function parseDuration(flag: string, text: string): number {
  if (text === "0") return 0;
  const units: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/y;
  let total = 0;
  let matched = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    total += Number(m[1]) * (units[m[2] ?? ""] ?? NaN);
    matched = re.lastIndex;
  }
  if (matched === 0 || matched !== text.length || !Number.isFinite(total)) {
    throw new UsageError(`${flag}: must be a duration such as 300ms, 15s or 5m, got ${JSON.stringify(text)}`);
  }
  return Math.round(total);
}
