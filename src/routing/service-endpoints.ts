// The reduced form of a Service and its EndpointSlices that the snapshot needs:
// per Service port, the ready addresses behind it with the port they listen on.
// Reducing here keeps buildSnapshot free of the EndpointSlice API's details.

import type { V1EndpointSlice, V1Service } from "@kubernetes/client-node";
import { isRecord } from "../api/is-record.js";
import { objectKey, objectKeyOf, type Watched } from "../api/object-key.js";

export interface SocketAddress {
  readonly ip: string;
  readonly port: number;
}

export interface ServicePortEndpoints {
  /** The Service port (`spec.ports[].port`), what a route's backend names. */
  readonly port: number;
  /** Ready addresses, sorted and without duplicates. */
  readonly addresses: readonly SocketAddress[];
}

/** One Service that exists. Its absence from the map given to buildSnapshot means "not found". */
export interface ServiceEndpoints {
  readonly ports: readonly ServicePortEndpoints[];
}

export function compareAddresses(a: SocketAddress, b: SocketAddress): number {
  return a.ip < b.ip ? -1 : a.ip > b.ip ? 1 : a.port - b.port;
}

/**
 * Joins a Service's ports to its EndpointSlices' ports by port name (the
 * EndpointSlice carries the target port under the Service port's name).
 * Only ready endpoints count (an absent `ready` means ready, as the API says),
 * and only IP addresses: Envoy's EDS takes no host names.
 */
export function serviceEndpoints(service: V1Service, slices: readonly V1EndpointSlice[]): ServiceEndpoints {
  const ports: ServicePortEndpoints[] = [];
  for (const sp of service.spec?.ports ?? []) {
    const name = sp.name ?? "";
    const seen = new Set<string>();
    const addresses: SocketAddress[] = [];
    for (const slice of slices) {
      if (slice.addressType !== "IPv4" && slice.addressType !== "IPv6") continue;
      const target = (slice.ports ?? []).find((p) => (p.name ?? "") === name)?.port;
      if (target === undefined) continue;
      for (const ep of slice.endpoints ?? []) {
        if (ep.conditions?.ready === false) continue;
        for (const ip of ep.addresses ?? []) {
          const id = `${ip}|${target}`;
          if (seen.has(id)) continue;
          seen.add(id);
          addresses.push({ ip, port: target });
        }
      }
    }
    addresses.sort(compareAddresses);
    ports.push({ port: sp.port, addresses });
  }
  ports.sort((a, b) => a.port - b.port);
  return { ports };
}

/** The label that ties an EndpointSlice to its Service. */
export const SERVICE_NAME_LABEL = "kubernetes.io/service-name";

/** `namespace/name` of the Service an EndpointSlice belongs to, from its service-name label. */
export function serviceOfEndpointSlice(slice: Watched): string | undefined {
  const ns = slice.metadata?.namespace;
  const labels = slice.metadata?.labels;
  const svc = isRecord(labels) ? labels[SERVICE_NAME_LABEL] : undefined;
  return typeof ns === "string" && ns && typeof svc === "string" && svc ? objectKey(ns, svc) : undefined;
}

/** Every listed Service with its slices, keyed `namespace/name` (objectKey): the map buildSnapshot takes. */
export function endpointsByService(
  services: readonly V1Service[],
  slices: readonly V1EndpointSlice[],
): Map<string, ServiceEndpoints> {
  const slicesOf = new Map<string, V1EndpointSlice[]>();
  for (const slice of slices) {
    const key = serviceOfEndpointSlice(slice);
    if (key === undefined) continue;
    const list = slicesOf.get(key);
    if (list === undefined) slicesOf.set(key, [slice]);
    else list.push(slice);
  }
  const out = new Map<string, ServiceEndpoints>();
  for (const service of services) {
    const key = objectKeyOf(service);
    out.set(key, serviceEndpoints(service, slicesOf.get(key) ?? []));
  }
  return out;
}
