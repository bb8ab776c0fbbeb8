// Reads the snapshot golden inputs: test/golden/snapshot/NAME.in.yaml holds
// EdgeRoutes (v2), Services and EndpointSlices as a user would apply them.

import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import type { V1EndpointSlice, V1Service } from "@kubernetes/client-node";
import type { EdgeRouteV2 } from "../../src/api/types.js";
import { endpointsByService } from "../../src/routing/service-endpoints.js";
import { buildSnapshot, type Snapshot } from "../../src/envoy/snapshot.js";

export const SNAPSHOT_GOLDEN_DIR = join(import.meta.dirname, "snapshot");

export function snapshotCases(): string[] {
  return readdirSync(SNAPSHOT_GOLDEN_DIR)
    .filter((f) => f.endsWith(".in.yaml"))
    .map((f) => f.slice(0, -".in.yaml".length))
    .sort();
}

export function snapshotCase(name: string): Snapshot {
  const docs = parseAllDocuments(readFileSync(join(SNAPSHOT_GOLDEN_DIR, `${name}.in.yaml`), "utf8")).map(
    (d) => d.toJS() as { kind?: string },
  );
  const routes = docs.filter((d) => d.kind === "EdgeRoute") as EdgeRouteV2[];
  const services = docs.filter((d) => d.kind === "Service") as V1Service[];
  const slices = docs.filter((d) => d.kind === "EndpointSlice") as V1EndpointSlice[];
  return buildSnapshot(routes, endpointsByService(services, slices));
}
