// What every command's --help ends with: the global flags, the environment
// variables that command reads, and the exit status, so that a person (or a
// chart) finds every setting in one place.

/** An environment variable a command reads, and what for. */
export interface EnvVar {
  readonly name: string;
  readonly what: string;
}

export const LOG_ENV: readonly EnvVar[] = [
  { name: "LOG_LEVEL", what: "the log level when --log-level is not given" },
  { name: "LOG_FORMAT", what: "the log format when --log-format is not given" },
];

/** What cluster access reads, in kubectl's order (cluster-flags.ts). */
export const CLUSTER_ENV: readonly EnvVar[] = [
  { name: "KUBECONFIG", what: "kubeconfig files, separated by ':', merged (the first to set a name wins)" },
  { name: "HOME", what: "where ~/.kube/config is, read when KUBECONFIG is not set" },
  {
    name: "KUBERNETES_SERVICE_HOST",
    what: "with KUBERNETES_SERVICE_PORT: the in-cluster apiserver, used when no kubeconfig file exists",
  },
  { name: "KUBERNETES_SERVICE_PORT", what: "see KUBERNETES_SERVICE_HOST" },
];

export const GLOBAL_FLAGS_HELP = `Global options (every command, anywhere on the line):
  --log-level LEVEL   trace | debug | info | warn | error | fatal | silent
                      (default: $LOG_LEVEL, else info)
  --log-format FMT    json: one JSON object a line | text: one line for a
                      person (default: $LOG_FORMAT, else json); logs go to
                      stderr, a command's output to stdout`;

export const EXIT_STATUS_HELP = `Exit status:
  0  done
  1  failed: the cluster refused or could not be reached, or the work itself failed
  2  usage: an unknown flag or command, a bad or missing value, or a file or
     environment variable that cannot be used`;

/** The end of a command's --help: global options, `env` (with the log variables), exit status. */
export function helpFooter(env: readonly EnvVar[]): string {
  const all = [...LOG_ENV, ...env];
  const width = Math.max(...all.map((e) => e.name.length));
  const lines = all.map((e) =>
    wrap(e.what, 78 - width - 4)
      .map((l, i) => `  ${(i === 0 ? e.name : "").padEnd(width)}  ${l}`.trimEnd())
      .join("\n"),
  );
  return `\n${GLOBAL_FLAGS_HELP}\n\nEnvironment:\n${lines.join("\n")}\n\n${EXIT_STATUS_HELP}\n`;
}

/** Words in lines of at most `width` characters (a longer word stands alone). */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(/\s+/)) {
    if (line !== "" && line.length + 1 + word.length > Math.max(width, 20)) {
      lines.push(line);
      line = word;
    } else line = line === "" ? word : `${line} ${word}`;
  }
  return [...lines, line];
}
