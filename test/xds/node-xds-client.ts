// @grpc/grpc-js-xds in a child process (xds-call-main.ts) behind the same
// interface as grpc-go's (test/harness/xds-go.ts), so one test body drives
// either: its own bootstrap (read once per process), its own node id, and a
// dial map for backends published under TEST-NET-1 addresses. The driver is
// test/harness/line-client.ts, shared with grpc-go's.

import path from "node:path";
import { startLineClient, xdsClientEnv, type GoXdsClient } from "../harness/line-client.js";
import { REPO_ROOT } from "../../tools/testenv/testbin.js";

const MAIN = path.join(REPO_ROOT, "test/xds/xds-call-main.ts");

export interface NodeXdsClientOptions {
  readonly adsPort: number;
  readonly nodeId: string;
  /** "FROM=TO,..." (dial-map.ts). */
  readonly dialMap?: string;
}

export async function startNodeXdsClient(opts: NodeXdsClientOptions): Promise<GoXdsClient> {
  return startLineClient({
    command: process.execPath,
    args: ["--import", "tsx", MAIN],
    cwd: REPO_ROOT,
    env: xdsClientEnv(`127.0.0.1:${opts.adsPort}`, opts.nodeId, { EDGE_DIAL_MAP: opts.dialMap ?? "" }),
    label: "xds-call-main",
    stderrHeader: "xds-call-main stderr",
    readyWithinMs: 20_000,
    // A call in flight when it exits answered {ok: false, code: "Gone"} before the driver was shared.
    inFlightOnExit: "answer",
  });
}
