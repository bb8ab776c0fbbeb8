// The flags every command takes, wherever they stand on the command line
// (as kubectl's global flags): --log-level and --log-format. They are taken
// out before a command parses its own.

import {
  isLogFormat,
  isLogLevel,
  LOG_FORMATS,
  LOG_LEVELS,
  type LogFormat,
  type LogLevel,
} from "../observability/logger.js";
import { UsageError } from "./command.js";

export interface GlobalFlags {
  readonly logLevel?: string;
  readonly logFormat?: string;
}

const NAMES = { "--log-level": "logLevel", "--log-format": "logFormat" } as const;

/** The command line without the global flags, and their values. `--` ends the flags. */
export function takeGlobalFlags(argv: readonly string[]): { argv: string[]; flags: GlobalFlags } {
  const rest: string[] = [];
  const flags: { logLevel?: string; logFormat?: string } = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? "";
    if (arg === "--") {
      rest.push(...argv.slice(i));
      break;
    }
    const eq = arg.indexOf("=");
    const flag = eq < 0 ? arg : arg.slice(0, eq);
    if (!(flag in NAMES)) {
      rest.push(arg);
      continue;
    }
    let v: string | undefined;
    if (eq >= 0) v = arg.slice(eq + 1);
    else {
      v = argv[i + 1];
      if (v === undefined || v.startsWith("-")) throw new UsageError(`${flag}: needs a value`);
      i++;
    }
    flags[NAMES[flag as keyof typeof NAMES]] = v;
  }
  return { argv: rest, flags };
}

export interface LogSettings {
  readonly level: LogLevel;
  readonly format: LogFormat;
}

/** The flag, else the environment variable, else the default; a bad value is a usage error that names where it came from. */
export function logSettings(flags: GlobalFlags, env: NodeJS.ProcessEnv): LogSettings {
  const pick = (
    flag: string,
    given: string | undefined,
    name: string,
  ): { from: string; value: string } | undefined => {
    if (given !== undefined) return { from: flag, value: given };
    const v = env[name];
    return v !== undefined && v !== "" ? { from: name, value: v } : undefined;
  };
  const level = pick("--log-level", flags.logLevel, "LOG_LEVEL") ?? { from: "", value: "info" };
  if (!isLogLevel(level.value))
    throw new UsageError(
      `${level.from}: must be one of ${LOG_LEVELS.join(", ")}, got ${JSON.stringify(level.value)}`,
    );
  const format = pick("--log-format", flags.logFormat, "LOG_FORMAT") ?? { from: "", value: "json" };
  if (!isLogFormat(format.value))
    throw new UsageError(
      `${format.from}: must be one of ${LOG_FORMATS.join(", ")}, got ${JSON.stringify(format.value)}`,
    );
  return { level: level.value, format: format.value };
}

/** Whether the command line only asks for help or the version: answered whatever the log settings say. */
export function asksForHelp(argv: readonly string[]): boolean {
  const end = argv.indexOf("--");
  const flags = end < 0 ? argv : argv.slice(0, end);
  const [first] = flags;
  return (
    first === undefined ||
    first === "help" ||
    first === "version" ||
    first === "--version" ||
    flags.includes("-h") ||
    flags.includes("--help")
  );
}
