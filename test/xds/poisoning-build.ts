// A test build of the snapshot that makes, past the guard, what gRPC's xDS
// client refuses: every retry back-off of POISON_BACKOFF gets a max_interval
// under its base_interval, which grpc-js-xds NACKs ("retry_back_off.max_interval
// < retry_back_off.base_interval", route-config-resource-type.js). The shipped
// build never emits a max_interval; the guard would refuse one that did.

import { contentVersion } from "../../src/envoy/content-hash.js";
import type { EnvoyResources } from "../../src/envoy/envoy-resources.js";
import { buildSnapshot, type Snapshot } from "../../src/translate/snapshot.js";

/** The retry back-off the poisoning build turns into what grpc-js refuses. */
export const POISON_BACKOFF = "1s";

export function poisoningBuild(...args: Parameters<typeof buildSnapshot>): Snapshot {
  const built = buildSnapshot(...args);
  const text = JSON.stringify(built.resources);
  const base = `"base_interval":"${POISON_BACKOFF}"`;
  if (!text.includes(base)) return built;
  const resources = JSON.parse(text.replaceAll(base, `${base},"max_interval":"0.1s"`)) as EnvoyResources;
  return { ...built, resources, version: contentVersion(resources) };
}
