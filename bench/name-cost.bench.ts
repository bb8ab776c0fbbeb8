// What one made-up name costs the ADS server: one Delta stream subscribes to
// N listener names and N route-configuration names no snapshot holds (each
// yields an API listener or a route configuration), ACKs, and the server's
// heap, memory outside the heap and RSS are read before and after, each after
// a forced collection. The server is in this process (the client's share is
// small: its names and the responses it decodes and drops).
//
// Run: npm run bench:name-cost   (N to change the 9,000)

import os from "node:os";
import { adsSnapshot, edgeRoute, endpoints, PORT } from "../test/xds/fixtures.js";
import { adsClient, deltaStream } from "../test/xds/raw-ads-client.js";
import { TYPE_URL } from "../src/envoy/envoy-resources.js";
import { XdsDataPlane } from "../src/dataplane/xds/xds-dataplane.js";

const N = Number(process.env.N ?? 9_000);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with node --expose-gc (npm run bench:name-cost)");

const plane = new XdsDataPlane({ ackTimeoutMs: 500 });
const port = await plane.listen("127.0.0.1", 0);
const route = edgeRoute(
  "r",
  ["a.example.com"],
  [{ matches: [{ path: { type: "PathPrefix", value: "/" } }], backends: [{ name: "blue", port: PORT }] }],
);
await plane.program(adsSnapshot([route], endpoints({ blue: [1] })));
gc();
const before = process.memoryUsage();
const s = deltaStream(adsClient(port));
const names = (prefix: string) => Array.from({ length: N }, (_, i) => `${prefix}h${i}.made-up.example`);
s.send({ node: { id: "names" }, type_url: TYPE_URL.listener, resource_names_subscribe: names("") });
s.send({ type_url: TYPE_URL.routeConfiguration, resource_names_subscribe: names("edge/") });
for (let i = 0; i < 2; i++) {
  const m = (await s.next(20_000)).message;
  s.send({ type_url: m.type_url, response_nonce: m.nonce });
}
await new Promise((r) => setTimeout(r, 2_000));
gc();
const after = process.memoryUsage();
const mib = (b: number) => (b / 2 ** 20).toFixed(1);
const outside = (m: NodeJS.MemoryUsage) => m.external + m.arrayBuffers;
const total = 2 * N;
process.stdout.write(
  `${JSON.stringify({
    names: total,
    load: os.loadavg()[0]?.toFixed(2),
    heapMiB: mib(after.heapUsed - before.heapUsed),
    outsideHeapMiB: mib(outside(after) - outside(before)),
    rssMiB: mib(after.rss - before.rss),
    heapAndOutsideKiBPerName: (
      (after.heapUsed - before.heapUsed + outside(after) - outside(before)) /
      1024 /
      total
    ).toFixed(2),
    rssKiBPerName: ((after.rss - before.rss) / 1024 / total).toFixed(2),
  })}\n`,
);
process.exit(0);
