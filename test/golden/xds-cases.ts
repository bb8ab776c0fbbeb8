// Reads the translation's golden cases: test/golden/xds/CASE/ holds
//  - input.yaml: EdgeRoutes (v1 or v2, as users write them), Services,
//    EndpointSlices and `kubernetes.io/tls` Secrets (`data` in base64 or
//    `stringData`), as a user would apply them;
//  - clients.yaml: `grpc:`, the host names a proxyless gRPC client asks LDS
//    for (its channels' `xds:///HOST` targets); Envoy asks for every listener;
// and the expected outputs (written by xds.golden.test.ts with UPDATE_GOLDEN=1).

import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parse, parseAllDocuments } from "yaml";
import type { V1EndpointSlice, V1Secret, V1Service } from "@kubernetes/client-node";
import type { EdgeRoute, EdgeRouteV2 } from "../../src/api/types.js";
import { convert } from "../../src/conversion/convert.js";
import { endpointsByService } from "../../src/routing/service-endpoints.js";
import {
  buildSnapshot,
  type EndpointsByService,
  type Snapshot,
  type TlsSecret,
  type TlsSecrets,
} from "../../src/translate/snapshot.js";

export const XDS_GOLDEN_DIR = join(import.meta.dirname, "xds");

export interface GoldenInput {
  /** Every EdgeRoute of input.yaml as written (v1 or v2). */
  readonly written: readonly EdgeRoute[];
  /** The same routes as the translation reads them: v2, as the apiserver converts them. */
  readonly routes: readonly EdgeRouteV2[];
  readonly endpoints: EndpointsByService;
  /** The `kubernetes.io/tls` Secrets, as the cluster side reads them. */
  readonly secrets: TlsSecrets;
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

/** When the golden cases check certificates: fixed, so that expiry never moves a golden file. */
export const GOLDEN_NOW = new Date("2026-01-01T00:00:00Z");

/** `namespace/name` → tls.crt and tls.key of each Secret of type kubernetes.io/tls, as the cluster side reads them. */
function tlsSecretsOf(secrets: readonly V1Secret[]): Map<string, TlsSecret> {
  const out = new Map<string, TlsSecret>();
  for (const s of secrets) {
    if (s.type !== "kubernetes.io/tls") continue;
    const field = (k: string) =>
      s.stringData?.[k] ?? (s.data?.[k] === undefined ? "" : Buffer.from(s.data[k], "base64").toString("utf8"));
    out.set(`${s.metadata?.namespace ?? ""}/${s.metadata?.name ?? ""}`, {
      certificate: field("tls.crt"),
      privateKey: field("tls.key"),
    });
  }
  return out;
}

export function goldenInput(name: string): GoldenInput {
  const dir = join(XDS_GOLDEN_DIR, name);
  const docs = parseAllDocuments(readFileSync(join(dir, "input.yaml"), "utf8")).map(
    (d) => d.toJS() as { kind?: string },
  );
  const written = docs.filter((d) => d.kind === "EdgeRoute") as EdgeRoute[];
  const services = docs.filter((d) => d.kind === "Service") as V1Service[];
  const slices = docs.filter((d) => d.kind === "EndpointSlice") as V1EndpointSlice[];
  const secrets = docs.filter((d) => d.kind === "Secret") as V1Secret[];
  const clients = parse(readFileSync(join(dir, "clients.yaml"), "utf8")) as { grpc?: string[] } | null;
  return {
    written,
    routes: written.map(toV2),
    endpoints: endpointsByService(services, slices),
    secrets: tlsSecretsOf(secrets),
    grpcHosts: clients?.grpc ?? [],
  };
}

/** The case's snapshot, built as the reconcile builds it (the default options: Envoy's files), at GOLDEN_NOW. */
export function goldenSnapshot(name: string): Snapshot {
  const { routes, endpoints, secrets } = goldenInput(name);
  return buildSnapshot(routes, endpoints, { now: GOLDEN_NOW }, secrets);
}
