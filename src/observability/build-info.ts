// Which build this process is: package.json's version, and the commit the
// image was built from. The image sets EDGE_OPERATOR_COMMIT (the Dockerfile's
// COMMIT build argument, which scripts/image.sh fills from git); anywhere else
// the commit is not known.

import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const COMMIT_ENV = "EDGE_OPERATOR_COMMIT";

export interface BuildInfo {
  readonly version: string;
  readonly commit: string;
}

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

/** A commit id as git prints it (full or short hex, maybe `-dirty`); anything else is not trusted. */
const COMMIT = /^[0-9a-f]{7,40}(-dirty)?$/;

export function buildInfo(env: NodeJS.ProcessEnv = process.env): BuildInfo {
  const commit = env[COMMIT_ENV]?.trim() ?? "";
  return { version: VERSION, commit: COMMIT.test(commit) ? commit : "unknown" };
}
