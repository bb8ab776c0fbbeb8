// CPU seconds used so far by the processes of a benchmark, read from
// /proc/PID/stat (utime + stime), grouped by a name the caller gives each
// command line. Two samples around a segment say which process the segment's
// work went to: on a 2-core machine throughput is CPU, so that split is where
// the time goes.

import { readdirSync, readFileSync } from "node:fs";

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

export type Classify = (argv: readonly string[], pid: number) => string | undefined;

function readArgv(pid: string): string[] | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
  } catch {
    return undefined; // gone between readdir and read
  }
}

function cpuSeconds(pid: string): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name in parentheses may hold spaces: fields start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

/**
 * "serve" or "watch" for the operator's own Node processes; not the bash
 * supervisor whose arguments name the same command (a SIGUSR2 for a CPU
 * profile would end the supervisor).
 */
export function operatorRole(argv: readonly string[]): "serve" | "watch" | undefined {
  if (!/(^|\/)node$/.test(argv[0] ?? "") || !argv.some((a) => a.endsWith("cli/main.js"))) return undefined;
  if (argv.includes("serve")) return "serve";
  if (argv.includes("watch")) return "watch";
  return undefined;
}

/** Every process the classifier names, with that name. */
function* named(classify: Classify): Generator<{ pid: string; name: string }> {
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    const argv = readArgv(pid);
    if (!argv || argv.length === 0) continue;
    const name = classify(argv, Number(pid));
    if (name !== undefined) yield { pid, name };
  }
}

/** The pids the classifier gives this name. */
export function pidsOf(classify: Classify, name: string): number[] {
  return [...named(classify)].filter((p) => p.name === name).map((p) => Number(p.pid));
}

/** CPU seconds by name, summed over the processes the classifier names. */
export function sampleCpu(classify: Classify): Map<string, number> {
  const out = new Map<string, number>();
  for (const { pid, name } of named(classify)) {
    const s = cpuSeconds(pid);
    if (s !== undefined) out.set(name, (out.get(name) ?? 0) + s);
  }
  return out;
}

/** "name X ms" per unit of work, from two samples, largest first. */
export function describeCpu(after: Map<string, number>, before: Map<string, number>, units: number): string {
  return [...after]
    .map(([name, s]) => [name, (s - (before.get(name) ?? 0)) / units] as const)
    .sort((a, b) => b[1] - a[1])
    .map(([name, s]) => `${name} ${(s * 1000).toFixed(3)} ms`)
    .join(", ");
}
