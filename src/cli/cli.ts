// edge-operator: one executable, one subcommand per job. The entry point is
// main.ts; this is what it runs, importable by tests.

import { createLogger, type Logger } from "../observability/logger.js";
import { isFileError, fileReason } from "../kube/file-reason.js";
import { UsageError, type Command } from "./command.js";
import { serveCommand } from "./serve.js";
import { certsCommand } from "./certs.js";
import { watchCommand } from "./watch.js";
import { finalizerCommand } from "./finalizer.js";
import { migrateCommand } from "./migrate.js";
import { waitAdmissionCommand } from "./wait-admission.js";
import { statusCommand } from "./status.js";
import { versionCommand, versionLine } from "./version.js";
import { asksForHelp, logSettings, takeGlobalFlags } from "./global-flags.js";
import { EXIT_STATUS_HELP, GLOBAL_FLAGS_HELP } from "./help-footer.js";
import { setUserAgentComponent } from "../kube/user-agent.js";

// The demo is not one of them: it is tooling (tools/demo/main.ts, `npm run demo`), not product.
const commands: Command[] = [
  serveCommand,
  watchCommand,
  statusCommand,
  certsCommand,
  finalizerCommand,
  migrateCommand,
  waitAdmissionCommand,
  versionCommand,
];

function usage(): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  return [
    "Usage: edge-operator COMMAND [options]",
    "",
    "Commands:",
    ...commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    "",
    "Options:",
    "  --version  print the version and the commit of this build",
    "  -h, --help this text",
    "",
    GLOBAL_FLAGS_HELP,
    "",
    EXIT_STATUS_HELP,
    "",
    "Run 'edge-operator COMMAND --help' for a command's options and the environment it reads.",
    "",
  ].join("\n");
}

let logger: Logger | undefined;

/** Flushes the logs of the command that ran, if one did. */
export function flushLogs(done: () => void): void {
  if (logger) logger.flush(done);
  else done();
}

/** One line on stderr, and the exit status the error stands for (2: usage, 1: failed). */
function failure(prefix: string, err: unknown): number {
  const e = err as Error & { code?: unknown };
  // parseArgs throws TypeErrors with ERR_PARSE_ARGS_* codes: those are usage errors too.
  const usage =
    err instanceof UsageError || (typeof e.code === "string" && e.code.startsWith("ERR_PARSE_ARGS"));
  // A file system error that no command turned into words: the path and why, never errno and a stack.
  const message = isFileError(err)
    ? `${err.path}: ${fileReason(err)}`
    : (err instanceof Error ? err.message : String(err)).split("\n")[0];
  process.stderr.write(`${prefix}: ${message}\n`);
  return usage || isFileError(err) ? 2 : 1;
}

export async function main(argv: string[]): Promise<number> {
  let args: string[];
  try {
    const taken = takeGlobalFlags(argv);
    args = taken.argv;
    // Help and the version never log: a bad LOG_LEVEL must not keep a person from reading --help.
    const settings = asksForHelp(args) ? undefined : logSettings(taken.flags, process.env);
    logger = createLogger(settings ?? { level: "info", format: "json" });
  } catch (err) {
    return failure("edge-operator", err);
  }
  const [name, ...rest] = args;
  if (name === undefined || name === "-h" || name === "--help" || name === "help") {
    process.stdout.write(usage());
    return name === undefined ? 2 : 0;
  }
  if (name === "--version") {
    process.stdout.write(versionLine());
    return 0;
  }
  const cmd = commands.find((c) => c.name === name);
  if (!cmd) {
    process.stderr.write(
      `edge-operator: unknown command ${JSON.stringify(name)}; run 'edge-operator --help'\n`,
    );
    return 2;
  }
  setUserAgentComponent(cmd.name);
  try {
    return await cmd.run(rest, logger);
  } catch (err) {
    return failure(`edge-operator ${name}`, err);
  }
}
