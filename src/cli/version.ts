import { parseArgs } from "node:util";
import { stringify as toYaml } from "yaml";
import { buildInfo, COMMIT_ENV } from "../observability/build-info.js";
import { UsageError, type Command } from "./command.js";
import { helpFooter } from "./help-footer.js";

const help = `Usage: edge-operator version [-o text|json|yaml]
       edge-operator --version

Prints the version (package.json's) and the commit this build was made from
("unknown" outside an image built by scripts/image.sh).

Options:
  -o, --output FMT  text (default) | json | yaml
  -h, --help        this text
${helpFooter([{ name: COMMIT_ENV, what: "the commit the image was built from (the image sets it)" }])}`;

/** The version line `--version` prints. */
export function versionLine(env: NodeJS.ProcessEnv = process.env): string {
  const { version, commit } = buildInfo(env);
  return `edge-operator ${version} (commit ${commit})\n`;
}

export const versionCommand: Command = {
  help,
  run(argv) {
    const { values } = parseArgs({
      args: argv,
      options: {
        output: { type: "string", short: "o", default: "text" },
        help: { type: "boolean", short: "h" },
      },
      strict: true,
    });
    if (values.help) {
      process.stdout.write(help);
      return Promise.resolve(0);
    }
    const info = buildInfo();
    if (values.output === "text") process.stdout.write(versionLine());
    else if (values.output === "json") process.stdout.write(`${JSON.stringify(info, null, 2)}\n`);
    else if (values.output === "yaml") process.stdout.write(toYaml(info));
    else throw new UsageError(`--output: must be text, json or yaml, got ${JSON.stringify(values.output)}`);
    return Promise.resolve(0);
  },
};
