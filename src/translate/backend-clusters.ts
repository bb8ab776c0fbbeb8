// Which cluster a backend sends to, resolved once per Service port in a build:
// thousands of rules name the same few Services, and the answer (the cluster's
// name, or that the Service or its port does not exist) is then one lookup by
// strings the route already holds, with no key string built for it.

import { clusterName } from "../envoy/envoy-resources.js";
import { objectKey } from "../api/object-key.js";
import type { ServiceEndpoints } from "../routing/service-endpoints.js";

export class BackendClusters {
  // namespace → Service → port → cluster name, or null when there is no such Service port.
  private readonly namespaces = new Map<string, Map<string, Map<number, string | null>>>();

  constructor(private readonly endpoints: ReadonlyMap<string, ServiceEndpoints>) {}

  /** `namespace/service:port`, or undefined when the Service or that port of it does not exist. */
  clusterOf(namespace: string, service: string, port: number): string | undefined {
    let services = this.namespaces.get(namespace);
    if (services === undefined) {
      services = new Map();
      this.namespaces.set(namespace, services);
    }
    let ports = services.get(service);
    if (ports === undefined) {
      ports = new Map();
      services.set(service, ports);
    }
    let name = ports.get(port);
    if (name === undefined) {
      const found = this.endpoints.get(objectKey(namespace, service));
      name =
        found !== undefined && found.ports.some((p) => p.port === port)
          ? clusterName(namespace, service, port)
          : null;
      ports.set(port, name);
    }
    return name ?? undefined;
  }
}
