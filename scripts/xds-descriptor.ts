// The protobuf descriptor the xDS sink loads at run time: the Envoy v3 types it
// encodes (listener, route configuration, cluster, endpoints, the HTTP
// connection manager and router, the TLS inspector, DownstreamTlsContext and
// the SDS Secret) and the ADS service's messages, read from the
// .proto files that @grpc/grpc-js-xds ships (a devDependency) and written as
// protobufjs JSON. The image then carries 197 KB of JSON, not the 30 MB of
// grpc-js-xds. `npm run gen` rewrites it; test/unit/xds-descriptor.test.ts
// fails when the committed file differs.

import { existsSync } from "node:fs";
import { join } from "node:path";
import protobuf from "protobufjs";

const ROOT = join(import.meta.dirname, "..");
const DEPS = join(ROOT, "node_modules/@grpc/grpc-js-xds/deps");
const INCLUDE = [
  join(DEPS, "envoy-api"),
  join(DEPS, "xds"),
  join(DEPS, "googleapis"),
  join(DEPS, "protoc-gen-validate"),
  join(ROOT, "node_modules/protobufjs"),
];
const FILES = [
  "envoy/config/listener/v3/listener.proto",
  "envoy/config/route/v3/route.proto",
  "envoy/config/cluster/v3/cluster.proto",
  "envoy/config/endpoint/v3/endpoint.proto",
  "envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.proto",
  "envoy/extensions/filters/http/router/v3/router.proto",
  "envoy/extensions/filters/listener/tls_inspector/v3/tls_inspector.proto",
  "envoy/extensions/transport_sockets/tls/v3/tls.proto",
  "envoy/extensions/transport_sockets/tls/v3/secret.proto",
  "envoy/service/discovery/v3/ads.proto",
];

export const XDS_DESCRIPTOR_FILE = join(ROOT, "src/dataplane/xds/envoy-descriptor.json");

/** The descriptor as the file holds it: one line of JSON and a newline. */
export function xdsDescriptor(): string {
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => {
    if (existsSync(target)) return target;
    for (const dir of INCLUDE) if (existsSync(join(dir, target))) return join(dir, target);
    return target;
  };
  root.loadSync(FILES, { keepCase: true });
  root.resolveAll();
  return `${JSON.stringify(root.toJSON({ keepComments: false }))}\n`;
}
