// Flag values that name files or addresses, checked before a command starts:
// a missing file is a one-line usage error that names the flag, the path and
// why, never an errno code thrown from deep inside a part.

import { accessSync, constants, statSync } from "node:fs";
import { fileReason } from "../kube/file-reason.js";
import { parseListen } from "../server/https.js";
import { UsageError } from "./command.js";

/** Throws a usage error unless `file` is a file this process can read. */
export function readableFile(flag: string, file: string): void {
  try {
    if (statSync(file).isDirectory()) throw Object.assign(new Error("directory"), { code: "EISDIR" });
    accessSync(file, constants.R_OK);
  } catch (err) {
    throw new UsageError(`${flag} ${file}: ${fileReason(err)}`);
  }
}

/** HOST:PORT for `flag`, or a usage error that names it. */
export function listenAddress(flag: string, value: string): { host: string; port: number } {
  try {
    return parseListen(value);
  } catch {
    throw new UsageError(`${flag} must be HOST:PORT, got ${JSON.stringify(value)}`);
  }
}
