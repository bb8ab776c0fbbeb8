// What the chart gives the server container to shape its memory (its default
// values.yaml, read here, so that a change there is measured by whatever
// starts a server with these: the xDS scale test, bench:churn).

import { readFileSync } from "node:fs";
import path from "node:path";
import { parse } from "yaml";
import { REPO_ROOT } from "../../tools/testenv/testbin.js";

interface ServerValues {
  readonly nodeOptions?: unknown;
  readonly mallocArenaMax?: unknown;
}

function serverValues(): ServerValues {
  const values = parse(readFileSync(path.join(REPO_ROOT, "charts/edge-operator/values.yaml"), "utf8")) as {
    server?: ServerValues;
  };
  return values.server ?? {};
}

/** The server container's NODE_OPTIONS as the chart sets them by default. */
export function chartNodeOptions(): string[] {
  const opts = serverValues().nodeOptions;
  if (typeof opts !== "string")
    throw new Error("charts/edge-operator/values.yaml: server.nodeOptions not found");
  return opts.split(/\s+/).filter((o) => o !== "");
}

/** MALLOC_ARENA_MAX, as the chart sets it in the server container's environment. */
export function chartMemoryEnv(): Record<string, string> {
  const arenas = serverValues().mallocArenaMax;
  return typeof arenas === "number" && arenas > 0 ? { MALLOC_ARENA_MAX: String(arenas) } : {};
}
