// edge-operator: one executable, one subcommand per job. The entry point is
// main.ts; this is what it runs, importable by tests.

import { createLogger, type Logger } from "../observability/logger.js";
import { isFileError, fileReason } from "../kube/file-reason.js";
import { UsageError, type Command } from "./command.js";
import { versionLine } from "./version.js";
import { asksForHelp, logSettings, takeGlobalFlags } from "./global-flags.js";
import { EXIT_STATUS_HELP, GLOBAL_FLAGS_HELP } from "./help-footer.js";
import { setUserAgentComponent } from "../kube/user-agent.js";

// The demo is not one of them: it is tooling (tools/demo/main.ts, `npm run demo`), not product.
// Each command's module is loaded when that command runs: `serve`'s imports
// alone take about 0.6 s, which every short command (the chart's post-install
// Job runs one) would pay otherwise.
interface CommandEntry {
  readonly name: string;
  readonly summary: string;
  load(): Promise<Command>;
}

const commands: readonly CommandEntry[] = [
  {
    name: "serve",
    summary: "the HTTPS service: /mutate, /validate, /convert, /reconcile",
    load: async () => (await import("./serve.js")).serveCommand,
  },
  {
    name: "watch",
    summary: "the watcher: informers, work queue and leader lease, calling /reconcile",
    load: async () => (await import("./watch.js")).watchCommand,
  },
  {
    name: "status",
    summary: "routes with their conditions, and the data-plane clients of each server replica",
    load: async () => (await import("./status.js")).statusCommand,
  },
  {
    name: "certs",
    summary: "writes a CA and a serving certificate for local development (certs/)",
    load: async () => (await import("./certs.js")).certsCommand,
  },
  {
    name: "finalizer",
    summary: "finalizer release NAMESPACE/NAME: the break-glass for a stuck route",
    load: async () => (await import("./finalizer.js")).finalizerCommand,
  },
  {
    name: "migrate",
    summary: "move every stored EdgeRoute to the storage version and trim status.storedVersions",
    load: async () => (await import("./migrate.js")).migrateCommand,
  },
  {
    name: "wait-admission",
    summary: "wait until the apiserver admits an EdgeRoute create (server-side dry run)",
    load: async () => (await import("./wait-admission.js")).waitAdmissionCommand,
  },
  {
    name: "version",
    summary: "print the version and the commit of this build",
    load: async () => (await import("./version.js")).versionCommand,
  },
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
  const entry = commands.find((c) => c.name === name);
  if (!entry) {
    process.stderr.write(
      `edge-operator: unknown command ${JSON.stringify(name)}; run 'edge-operator --help'\n`,
    );
    return 2;
  }
  setUserAgentComponent(entry.name);
  try {
    return await (await entry.load()).run(rest, logger);
  } catch (err) {
    return failure(`edge-operator ${name}`, err);
  }
}
