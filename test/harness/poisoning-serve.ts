// `edge-operator serve` with the poisoning build (test/xds/poisoning-build.ts):
// a route whose retry back-off is POISON_BACKOFF reaches clients in a form
// grpc-js-xds refuses. The held-route suite runs its server through this
// entry (poisoning-serve-main.ts); the shipped command has no such hook.

import path from "node:path";
import { REPO_ROOT } from "../../tools/testenv/testbin.js";

/** The compiled entry: pass it as the server's `cli`. */
export const POISONING_SERVE = path.join(REPO_ROOT, "dist/test/harness/poisoning-serve-main.js");
