// The process's logger, made once by the command line and handed to whatever
// logs: no module holds a logger of its own. The one place that imports pino:
// every other module takes the Logger type from here.

import { pino, type DestinationStream, type Logger } from "pino";
import { textLine } from "./log-text.js";

/** The levels pino knows, most verbose first; `silent` logs nothing. */
export const LOG_LEVELS = ["trace", "debug", "info", "warn", "error", "fatal", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** json: one JSON object a line (for collectors); text: one compact line for a person. */
export const LOG_FORMATS = ["json", "text"] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

export const isLogLevel = (v: string): v is LogLevel => (LOG_LEVELS as readonly string[]).includes(v);
export const isLogFormat = (v: string): v is LogFormat => (LOG_FORMATS as readonly string[]).includes(v);

export interface LoggerOptions {
  /** Default: $LOG_LEVEL when it is a level, else info (the command line refuses a bad one before it gets here). */
  readonly level?: LogLevel;
  /** Default: json. */
  readonly format?: LogFormat;
  /** Default: stderr. Tests hand a stream of their own to read what was logged. */
  readonly destination?: DestinationStream;
}

function envLevel(): LogLevel {
  const v = process.env.LOG_LEVEL ?? "";
  return isLogLevel(v) ? v : "info";
}

/** Logs on stderr, so stdout stays free for a command's own output. */
export function createLogger(opts: LoggerOptions = {}): Logger {
  const out = opts.destination ?? pino.destination({ dest: 2, sync: false });
  return pino(
    {
      name: "edge-operator",
      level: opts.level ?? envLevel(),
      base: { pid: process.pid },
      // An Error logged as `{ err }` keeps its type, message, stack and cause.
      serializers: { err: pino.stdSerializers.err },
    },
    opts.format === "text" ? textStream(out) : out,
  );
}

/** Rewrites each JSON line pino makes into a text line; flushes through to `out`. */
function textStream(out: DestinationStream): DestinationStream & { flush(cb: () => void): void } {
  const flushable = out as DestinationStream & { flush?: (cb: (err?: Error) => void) => void };
  return {
    write: (line: string) => out.write(textLine(line)),
    flush: (cb) => (flushable.flush ? flushable.flush(() => cb()) : cb()),
  };
}

/** For tests and benchmarks: logs nothing. */
export function silentLogger(): Logger {
  return pino({ level: "silent", serializers: { err: pino.stdSerializers.err } });
}

export type { Logger };
