// The debug routes `serve --debug-routes` adds, for tests and the demo, to
// the same callers as /reconcile: what the memory sink holds (and a way to make
// it refuse pushes), and what the xds sink serves and to whom. Without the
// flag none of them exists.

import type { MemoryDataPlane } from "../dataplane/memory.js";
import type { XdsDataPlane } from "../dataplane/xds/xds-dataplane.js";
import { callerCheck, type CallerAuth } from "./caller-auth.js";
import { errorReply, type JsonHandler } from "./json-handler.js";

/**
 * GET /debug/xds: the xds sink only: the version served, the verdict, each
 * client. No resource is printed, so no Secret's contents: of the Secret type
 * a client's report holds the names it asked for and the version it ACKed,
 * and its NACK's words are not kept (stream.ts nackWords).
 */
export function xdsDebugHandler(xds: XdsDataPlane, auth: CallerAuth): JsonHandler {
  return {
    path: "/debug/xds",
    method: "GET",
    limit: 0,
    authorize: callerCheck(auth),
    handle: () => {
      const served = xds.server.current()?.version;
      return {
        status: 200,
        body: {
          version: served,
          verdict: xds.server.verdict(),
          clients: xds.clients(),
          // Every replica's record as read (absent without cluster-shared ACK state).
          ...(xds.records ? { records: xds.records.all() } : {}),
          ...(xds.records && served !== undefined ? { combined: xds.verdictFor(served) } : {}),
        },
      };
    },
  };
}

/** GET /debug/dataplane and POST /debug/dataplane/fail-next: the memory sink only. */
export function memoryDebugHandlers(memory: MemoryDataPlane, auth: CallerAuth): JsonHandler[] {
  return [
    {
      path: "/debug/dataplane",
      method: "GET",
      limit: 0,
      authorize: callerCheck(auth),
      handle: () => ({ status: 200, body: memory.state() }),
    },
    {
      path: "/debug/dataplane/fail-next",
      limit: 1024,
      authorize: callerCheck(auth),
      handle: (body) => {
        const n = (body as { count?: unknown } | null)?.count ?? 1;
        if (typeof n !== "number" || !Number.isInteger(n) || n < 0) {
          return errorReply(400, "BadRequest", "count: must be a whole number >= 0");
        }
        memory.failNext(n);
        return { status: 200, body: memory.state() };
      },
    },
  ];
}
