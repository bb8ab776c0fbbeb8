// The process's logger, made once by the command line and handed to whatever
// logs: no module holds a logger of its own.

import { pino, type Logger } from "pino";

export interface LoggerOptions {
  /** Default: $LOG_LEVEL, else info. */
  readonly level?: string;
}

/** JSON logs on stderr, so stdout stays free for a command's own output. */
export function createLogger(opts: LoggerOptions = {}): Logger {
  return pino(
    {
      name: "edge-operator",
      level: opts.level ?? process.env.LOG_LEVEL ?? "info",
      base: { pid: process.pid },
    },
    pino.destination({ dest: 2, sync: false }),
  );
}

/** For tests and benchmarks: logs nothing. */
export function silentLogger(): Logger {
  return pino({ level: "silent" });
}

export type { Logger };
