#!/usr/bin/env node
// edge-operator: one executable, one subcommand per job.

import { createLogger } from "../observability/logger.js";
import { UsageError, type Command } from "./command.js";
import { serveCommand } from "./serve.js";
import { certsCommand } from "./certs.js";
import { watchCommand } from "./watch.js";
import { finalizerCommand } from "./finalizer.js";
import { migrateCommand } from "./migrate.js";
import { setUserAgentComponent } from "../kube/user-agent.js";

const logger = createLogger();

// The demo is not one of them: it is tooling (tools/demo/main.ts, `npm run demo`), not product.
const commands: Command[] = [serveCommand, watchCommand, certsCommand, finalizerCommand, migrateCommand];

function usage(): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  return [
    "Usage: edge-operator COMMAND [options]",
    "",
    "Commands:",
    ...commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    "",
    "Run 'edge-operator COMMAND --help' for a command's options.",
    "",
  ].join("\n");
}

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === "-h" || name === "--help" || name === "help") {
    process.stdout.write(usage());
    return name === undefined ? 2 : 0;
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
    const e = err as Error & { code?: string };
    // parseArgs throws TypeErrors with ERR_PARSE_ARGS_* codes: those are usage errors too.
    const isUsage =
      err instanceof UsageError || (typeof e.code === "string" && e.code.startsWith("ERR_PARSE_ARGS"));
    process.stderr.write(`edge-operator ${name}: ${e.message.split("\n")[0]}\n`);
    return isUsage ? 2 : 1;
  }
}

// A command that returned is done: watches, keep-alive sockets and timers it
// left open must not keep the process alive (a pod would wait out its whole
// grace period). Logs are flushed first.
function exit(code: number): void {
  process.exitCode = code;
  logger.flush(() => process.exit(code));
}

main(process.argv.slice(2)).then(exit, (err: unknown) => {
  process.stderr.write(`edge-operator: ${(err as Error).message}\n`);
  exit(1);
});
