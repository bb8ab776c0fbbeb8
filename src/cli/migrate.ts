import { parseArgs } from "node:util";
import { CRD_NAME } from "../api/types.js";
import { migrateStorage, type MigrateOptions } from "../migrate/migrator.js";
import { kubeClient } from "../kube/client.js";
import { UsageError, type Command } from "./command.js";
import { clusterFlagsHelp, clusterFlagOptions, requiredClusterAccess } from "./cluster-flags.js";
import { CLUSTER_ENV, helpFooter } from "./help-footer.js";
import { parseDuration } from "./duration-flag.js";

const help = `Usage: edge-operator migrate [options]

Moves every stored EdgeRoute to the CRD's storage version: lists them in all
namespaces, page by page, and writes each back unchanged so that the apiserver
stores it in the storage version; then trims status.storedVersions to that
version. Safe to run again at any time: an interrupted run is finished by the
next one. The runbook is docs/migration.md.

Options:
${clusterFlagsHelp(27)}
  --dry-run                say what would be done (counts, versions); write nothing
  --page-size N            objects per list page (default 500)
  --concurrency N          writes in flight (default 8)
  --progress-every N       a progress line on stderr every N objects (default 1000)
  --progress-interval DUR  ...or at least this often (default 10s)
  --wait DUR               how long to wait for the apiserver to write in the new
                           storage version after a CRD change (default 60s)
  -h, --help               this text
${helpFooter(CLUSTER_ENV)}`;

export interface MigrateArgs {
  kubeconfig?: string | undefined;
  context?: string | undefined;
  options: Omit<MigrateOptions, "log">;
}

function count(flag: string, text: string, max: number): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1 || n > max) {
    throw new UsageError(`${flag}: must be an integer from 1 to ${max}, got ${JSON.stringify(text)}`);
  }
  return n;
}

export function parseMigrateArgs(argv: string[]): MigrateArgs | "help" {
  const { values } = parseArgs({
    args: argv,
    options: {
      ...clusterFlagOptions,
      "dry-run": { type: "boolean", default: false },
      "page-size": { type: "string", default: "500" },
      concurrency: { type: "string", default: "8" },
      "progress-every": { type: "string", default: "1000" },
      "progress-interval": { type: "string", default: "10s" },
      wait: { type: "string", default: "60s" },
      help: { type: "boolean", short: "h", default: false },
    },
    strict: true,
    allowPositionals: false,
  });
  if (values.help) return "help";
  return {
    kubeconfig: values.kubeconfig,
    context: values.context,
    options: {
      crdName: CRD_NAME,
      dryRun: values["dry-run"],
      pageSize: count("--page-size", values["page-size"], 10_000),
      concurrency: count("--concurrency", values.concurrency, 256),
      progressEvery: count("--progress-every", values["progress-every"], 100_000_000),
      progressIntervalMs: parseDuration("--progress-interval", values["progress-interval"]),
      discoveryTimeoutMs: parseDuration("--wait", values.wait),
    },
  };
}

export const migrateCommand: Command = {
  help,
  async run(argv) {
    const args = parseMigrateArgs(argv);
    if (args === "help") {
      process.stdout.write(help);
      return 0;
    }
    const access = requiredClusterAccess(args);
    const outcome = await migrateStorage(kubeClient(access), {
      ...args.options,
      log: (line) => process.stderr.write(`${line}\n`),
    });
    process.stdout.write(`${outcome.line}\n`);
    return 0;
  },
};
