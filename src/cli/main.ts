#!/usr/bin/env node
// The executable's entry point: runs the command line (cli.ts) and exits.

import { flushLogs, main } from "./cli.js";

// A command that returned is done: watches, keep-alive sockets and timers it
// left open must not keep the process alive (a pod would wait out its whole
// grace period). Logs are flushed first.
function exit(code: number): void {
  process.exitCode = code;
  flushLogs(() => process.exit(code));
}

main(process.argv.slice(2)).then(exit, (err: unknown) => {
  process.stderr.write(`edge-operator: ${(err as Error).message}\n`);
  exit(1);
});
