// The translation, as one stage in named steps (as Envoy Gateway's translator
// and Contour's dag.Build are lists of steps), each pure and in a file of its own:
//  1. model.ts: routes + the Services' endpoints (+ the referenced TLS
//     Secrets) → the routing model (an outcome per route, virtual hosts with
//     their ordered routes, clusters, the hosts served over TLS: tls-hosts.ts);
//  2. envoy.ts: the model → Envoy's resources, versioned here by a hash of
//     their content: the snapshot every sink is handed (envoy-files.ts writes
//     it as Envoy's files); and the same resources as served over ADS;
//     keep-unchanged.ts then hands back the last build's objects for the
//     parts that did not change, so that the work per part after it is done
//     once per change, not once per build;
//  3. grpc.ts: the served resources → what a proxyless gRPC client receives
//     for the hosts it asks for.
// The xds sink (src/dataplane/xds/resources.ts) serves steps 2 and 3 on demand.
// Terminating routes are the caller's to leave out.

import type { EdgeRouteV2 } from "../api/types.js";
import { contentVersion } from "../envoy/content-hash.js";
import type { EnvoyResources } from "../envoy/envoy-resources.js";
import { envoyResources, type EnvoyOptions } from "./envoy.js";
import { keepUnchanged } from "./keep-unchanged.js";
import type { HeldRoutes } from "./held-routes.js";
import { translateRoutes, type EndpointsByService, type RouteOutcome } from "./model.js";
import { NO_SECRETS, type TlsSecrets } from "./tls-secrets.js";

// The stage's callers (the reconcile, the sinks) name the model's types through here.
export { type EndpointsByService, type RejectReason, type RouteOutcome } from "./model.js";
export { describeGrpcUnapplied, type GrpcUnapplied } from "./grpc-unapplied.js";
export { NO_SECRETS, type TlsOutcome, type TlsSecret, type TlsSecrets } from "./tls-secrets.js";

export interface Snapshot {
  /** 16 hex digits of the SHA-256 of the resources' canonical JSON. */
  readonly version: string;
  readonly resources: EnvoyResources;
  /** One per input route, sorted by key. */
  readonly outcomes: readonly RouteOutcome[];
}

export type SnapshotOptions = EnvoyOptions & {
  /** Routes held back because a client refused what they add (held-routes.ts). */
  readonly held?: HeldRoutes;
};

/** The whole data-plane configuration for the live routes: the model, as Envoy's resources, versioned. */
export function buildSnapshot(
  routes: readonly EdgeRouteV2[],
  endpoints: EndpointsByService,
  options: SnapshotOptions = {},
  // The referenced TLS Secrets' contents, checked at `options.now` (default: now).
  secrets: TlsSecrets = NO_SECRETS,
  // The last build, whose unchanged parts are kept as objects (keep-unchanged.ts): same result, less work.
  previous?: Snapshot,
): Snapshot {
  const model = translateRoutes(routes, endpoints, { secrets, now: options.now ?? new Date() }, options.held);
  const resources = keepUnchanged(envoyResources(model, options), previous?.resources);
  return { version: contentVersion(resources), resources, outcomes: model.outcomes };
}
