// Flag values that name files or addresses, checked before a command starts:
// a missing file is a one-line usage error that names the flag, the path and
// why, never an errno code thrown from deep inside a part.

import { createPrivateKey, X509Certificate, type KeyObject } from "node:crypto";
import { accessSync, constants, readFileSync, statSync } from "node:fs";
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

/** Throws a usage error unless the two files hold a PEM certificate and its private key. */
export function tlsPairFiles(certFlag: string, certFile: string, keyFlag: string, keyFile: string): void {
  readableFile(certFlag, certFile);
  readableFile(keyFlag, keyFile);
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(readFileSync(certFile));
  } catch {
    throw new UsageError(`${certFlag} ${certFile}: not a PEM certificate`);
  }
  let key: KeyObject;
  try {
    key = createPrivateKey(readFileSync(keyFile));
  } catch {
    throw new UsageError(`${keyFlag} ${keyFile}: not a PEM private key`);
  }
  if (!cert.checkPrivateKey(key))
    throw new UsageError(`${keyFlag} ${keyFile}: not the private key of ${certFlag} ${certFile}`);
}
