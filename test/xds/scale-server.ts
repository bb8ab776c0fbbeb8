// The ADS server alone in a process, serving the scale input, so that its
// memory is its own (the clients live in the parent). Started with
// child_process.fork and the chart's NODE_OPTIONS (whose --expose-gc also lets
// the parent ask for the live set); driven over IPC:
//   → {op:"program", change:"route"|"endpoints"|"base", k}  ← {op:"programmed", ok, reason?, ms}
//   → {op:"memory"}                                        ← {op:"memory", ...ServerMemory}
//   → {op:"clients"}                                       ← {op:"clients", count}
// Args: ROUTES. First message out: {op:"ready", port, version}.

import { performance } from "node:perf_hooks";
import { XdsDataPlane } from "../../src/dataplane/xds/xds-dataplane.js";
import { scaleInput } from "./scale-input.js";

export interface ServerMemory {
  /** Resident set now, and its peak over the process's life (bytes). */
  readonly rss: number;
  readonly maxRss: number;
  readonly heapUsed: number;
  readonly heapTotal: number;
  readonly external: number;
  /** heapUsed after a full collection: the live set. */
  readonly heapUsedAfterGc: number;
  readonly externalAfterGc: number;
  readonly rssAfterGc: number;
}

export type ScaleRequest =
  | { readonly op: "program"; readonly change: "route" | "endpoints" | "base"; readonly k: number }
  | { readonly op: "memory" }
  | { readonly op: "clients" };

export type ScaleReply =
  | { readonly op: "ready"; readonly port: number; readonly version: string }
  | {
      readonly op: "programmed";
      readonly ok: boolean;
      readonly reason?: string;
      /** program() until every client ACKed; and, before it, building the snapshot (the floor). */
      readonly ms: number;
      readonly buildMs: number;
    }
  | ({ readonly op: "memory" } & ServerMemory)
  | { readonly op: "clients"; readonly count: number };

const ROUTES = Number(process.argv[2] ?? 10_000);
const ACK_TIMEOUT_MS = Number(process.argv[3] ?? 120_000);

function reply(m: ScaleReply): void {
  process.send?.(m);
}

async function main(): Promise<void> {
  const input = scaleInput(ROUTES, 1);
  const plane = new XdsDataPlane({ ackTimeoutMs: ACK_TIMEOUT_MS });
  const port = await plane.listen("127.0.0.1", 0);
  const version = input.base().version;
  await plane.program(input.base());
  process.on("message", (m: ScaleRequest) => {
    void (async () => {
      switch (m.op) {
        case "program": {
          const b0 = performance.now();
          const snap =
            m.change === "route"
              ? input.routeChange(m.k)
              : m.change === "endpoints"
                ? input.endpointsChange(m.k)
                : input.base();
          const t0 = performance.now();
          const buildMs = t0 - b0;
          const r = await plane.program(snap);
          const ms = performance.now() - t0;
          reply(
            r.ok
              ? { op: "programmed", ok: true, ms, buildMs }
              : { op: "programmed", ok: false, reason: r.reason, ms, buildMs },
          );
          return;
        }
        case "memory": {
          const m0 = process.memoryUsage();
          const gc = (globalThis as { gc?: () => void }).gc;
          gc?.();
          const m1 = process.memoryUsage();
          reply({
            op: "memory",
            rss: m0.rss,
            maxRss: process.resourceUsage().maxRSS * 1024,
            heapUsed: m0.heapUsed,
            heapTotal: m0.heapTotal,
            external: m0.external,
            heapUsedAfterGc: m1.heapUsed,
            externalAfterGc: m1.external,
            rssAfterGc: m1.rss,
          });
          return;
        }
        case "clients":
          reply({ op: "clients", count: plane.clients().length });
      }
    })();
  });
  process.on("disconnect", () => {
    plane.stop();
    process.exit(0);
  });
  reply({ op: "ready", port, version });
}

await main();
