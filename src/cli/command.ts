// What every subcommand shares: a help text, and a one-line reason on bad input.

import type { Logger } from "../observability/logger.js";

export class UsageError extends Error {}

export interface Command {
  readonly help: string;
  /** `log` is the process's one logger, made by main. */
  run(argv: string[], log: Logger): Promise<number>;
}
