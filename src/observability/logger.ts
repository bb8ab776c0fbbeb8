// The process's logger, made once by the command line and handed to whatever
// logs: no module holds a logger of its own. The one place that imports pino:
// every other module takes the Logger type from here.

import { pino, type DestinationStream, type Logger } from "pino";

export interface LoggerOptions {
  /** Default: $LOG_LEVEL, else info. */
  readonly level?: string;
  /** Default: stderr. Tests hand a stream of their own to read what was logged. */
  readonly destination?: DestinationStream;
}

/** JSON logs on stderr, so stdout stays free for a command's own output. */
export function createLogger(opts: LoggerOptions = {}): Logger {
  return pino(
    {
      name: "edge-operator",
      level: opts.level ?? process.env.LOG_LEVEL ?? "info",
      base: { pid: process.pid },
      // An Error logged as `{ err }` keeps its type, message, stack and cause.
      serializers: { err: pino.stdSerializers.err },
    },
    opts.destination ?? pino.destination({ dest: 2, sync: false }),
  );
}

/** For tests and benchmarks: logs nothing. */
export function silentLogger(): Logger {
  return pino({ level: "silent", serializers: { err: pino.stdSerializers.err } });
}

export type { Logger };
