// The User-Agent the apiserver logs and its audit records show for each
// request: which program, which version, which job (`serve`, `watch`, ...),
// so a flood or a failing client can be traced to its process.

import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** package.json's version, found above this module in src/ or dist/src/ (the image copies it to /app). */
function packageVersion(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    const file = path.join(dir, "package.json");
    if (existsSync(file)) {
      try {
        const pkg = JSON.parse(readFileSync(file, "utf8")) as { name?: unknown; version?: unknown };
        if (pkg.name === "edge-operator" && typeof pkg.version === "string") return pkg.version;
      } catch {
        // unreadable: look further up
      }
    }
    dir = path.dirname(dir);
  }
  return "unknown";
}

export const VERSION = packageVersion();

let component = "cli";

/** Names the job this process does (the subcommand); set once, at start. */
export function setUserAgentComponent(name: string): void {
  component = name.replace(/[^A-Za-z0-9._-]/g, "-") || "cli";
}

/** `edge-operator/VERSION (JOB)`, as kubectl's `kubectl/vX (os/arch)`. */
export function userAgent(job: string = component): string {
  return `edge-operator/${VERSION} (${job})`;
}
