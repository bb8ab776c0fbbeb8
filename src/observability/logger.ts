import { pino, type Logger } from "pino";

// JSON logs on stderr, so stdout stays free for a command's own output.
export const logger: Logger = pino(
  { name: "edge-operator", level: process.env.LOG_LEVEL ?? "info", base: { pid: process.pid } },
  pino.destination({ dest: 2, sync: false }),
);

export type { Logger };
