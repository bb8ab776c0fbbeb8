// Entry: `node poisoning-serve-main.js serve [flags]`, the serve command with
// the poisoning build (poisoning-serve.ts).

import { serveCommandWith } from "../../src/cli/serve.js";
import { createLogger } from "../../src/observability/logger.js";
import { POISON_BACKOFF, poisoningBuild } from "../xds/poisoning-build.js";

const logger = createLogger();
logger.warn(
  { backoff: POISON_BACKOFF },
  "test build: routes with this retry back-off are sent in a form grpc-js-xds refuses",
);
const serve = serveCommandWith({ build: poisoningBuild });

const exit = (code: number): void => {
  process.exitCode = code;
  logger.flush(() => process.exit(code));
};
serve.run(process.argv.slice(3), logger).then(exit, (err: unknown) => {
  process.stderr.write(`poisoning-serve: ${(err as Error).message}\n`);
  exit(1);
});
