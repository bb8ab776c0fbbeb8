// One gRPC xDS client (@grpc/grpc-js-xds) as a process of its own: its
// bootstrap is read once per process, so a test that needs clients on several
// ADS servers runs one of these per client. It calls /echo.Echo/Call on
// and /other.Other/Call on xds:///HOST every 300 ms and prints each change of
// outcome as a JSON line ({"echo": OUTCOME, "other": OUTCOME}, where OUTCOME is
// "routed" when the client found a route for the method: a backend answered,
// or the route's cluster has no endpoints; "unrouted" when it found none);
// it ends on SIGTERM (scripts/supervise.sh sends it when the test is done),
// or after 10 minutes at most.
//
// Usage: GRPC_XDS_BOOTSTRAP_CONFIG='{...}' node --import tsx xds-client-main.ts HOST

import * as grpc from "@grpc/grpc-js";
import { register } from "@grpc/grpc-js-xds";
import { callEcho, ECHO_METHOD, OTHER_METHOD } from "./echo-backend.js";

async function outcome(client: grpc.Client, method: string): Promise<string> {
  const reply = await callEcho(client, { method, deadlineMs: 1_000 });
  if (reply.ok || /empty priority list/.test(reply.details)) return "routed";
  if (/Failed to route call/.test(reply.details)) return "unrouted";
  return reply.details;
}

const host = process.argv[2];
if (!host) throw new Error("usage: xds-client-main.ts HOST");
register();
const client = new grpc.Client(`xds:///${host}`, grpc.credentials.createInsecure());
const deadline = Date.now() + 10 * 60_000;

let last = "";
while (Date.now() < deadline) {
  const line = JSON.stringify({
    echo: await outcome(client, ECHO_METHOD),
    other: await outcome(client, OTHER_METHOD),
  });
  if (line !== last) process.stdout.write(`${line}\n`);
  last = line;
  await new Promise((r) => setTimeout(r, 300));
}
client.close();
process.exit(0);
