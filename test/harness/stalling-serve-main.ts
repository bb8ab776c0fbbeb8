// Entry: `node stalling-serve-main.js serve [flags]`, the serve command with
// every snapshot reconcile stalled STALL_ENV ms before its push (stalling-serve.ts).

import { setTimeout as sleep } from "node:timers/promises";
import { serveCommandWith } from "../../src/cli/serve.js";
import { createLogger } from "../../src/observability/logger.js";
import { STALL_ENV, STALL_LINE, stallMs } from "./stalling-serve.js";

const logger = createLogger();
const ms = stallMs(process.env[STALL_ENV]);
logger.warn({ stallMs: ms }, `${STALL_ENV} is set: every snapshot reconcile stalls before its push`);
const serve = serveCommandWith({
  beforePush: (signal) => {
    logger.warn({ stallMs: ms }, STALL_LINE);
    return sleep(ms, undefined, { signal });
  },
});

const exit = (code: number): void => {
  process.exitCode = code;
  logger.flush(() => process.exit(code));
};
serve.run(process.argv.slice(3), logger).then(exit, (err: unknown) => {
  process.stderr.write(`stalling-serve: ${(err as Error).message}\n`);
  exit(1);
});
