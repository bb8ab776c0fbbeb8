// What every subcommand shares: a help text, and a one-line reason on bad input.

export class UsageError extends Error {}

export interface Command {
  readonly name: string;
  readonly summary: string;
  readonly help: string;
  run(argv: string[]): Promise<number>;
}
