// Reads the translation's golden cases: test/golden/xds/CASE/ holds
//  - input.yaml: EdgeRoutes (v1 or v2, as users write them), Services and
//    EndpointSlices, as a user would apply them;
//  - clients.yaml: `grpc:`, the host names a proxyless gRPC client asks LDS
//    for (its channels' `xds:///HOST` targets); Envoy asks for every listener;
// and the expected outputs (written by xds.golden.test.ts with UPDATE_GOLDEN=1).

import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parse, parseAllDocuments } from "yaml";
import type { V1EndpointSlice, V1Service } from "@kubernetes/client-node";
import type { EdgeRoute, EdgeRouteV2 } from "../../src/api/types.js";
import { convert } from "../../src/conversion/convert.js";
import { endpointsByService } from "../../src/routing/service-endpoints.js";
import { buildSnapshot, type EndpointsByService, type Snapshot } from "../../src/translate/snapshot.js";

export const XDS_GOLDEN_DIR = join(import.meta.dirname, "xds");

export interface GoldenInput {
  /** Every EdgeRoute of input.yaml as written (v1 or v2). */
  readonly written: readonly EdgeRoute[];
  /** The same routes as the translation reads them: v2, as the apiserver converts them. */
  readonly routes: readonly EdgeRouteV2[];
  readonly endpoints: EndpointsByService;
  /** The host names the case's gRPC client asks for. */
  readonly grpcHosts: readonly string[];
}

export function goldenCases(): string[] {
  return readdirSync(XDS_GOLDEN_DIR, { withFileTypes: true })
    .filter((e) => e.isDirectory() && existsSync(join(XDS_GOLDEN_DIR, e.name, "input.yaml")))
    .map((e) => e.name)
    .sort();
}

function toV2(route: EdgeRoute): EdgeRouteV2 {
  const r = convert(route, "net.10xdev.io/v2");
  if (!r.ok) throw new Error(`cannot convert ${route.metadata?.name ?? "?"}: ${JSON.stringify(r.errors)}`);
  return r.object as EdgeRouteV2;
}

export function goldenInput(name: string): GoldenInput {
  const dir = join(XDS_GOLDEN_DIR, name);
  const docs = parseAllDocuments(readFileSync(join(dir, "input.yaml"), "utf8")).map(
    (d) => d.toJS() as { kind?: string },
  );
  const written = docs.filter((d) => d.kind === "EdgeRoute") as EdgeRoute[];
  const services = docs.filter((d) => d.kind === "Service") as V1Service[];
  const slices = docs.filter((d) => d.kind === "EndpointSlice") as V1EndpointSlice[];
  const clients = parse(readFileSync(join(dir, "clients.yaml"), "utf8")) as { grpc?: string[] } | null;
  return {
    written,
    routes: written.map(toV2),
    endpoints: endpointsByService(services, slices),
    grpcHosts: clients?.grpc ?? [],
  };
}

/** The case's snapshot, built as the reconcile builds it (the default options: Envoy's files). */
export function goldenSnapshot(name: string): Snapshot {
  const { routes, endpoints } = goldenInput(name);
  return buildSnapshot(routes, endpoints);
}
