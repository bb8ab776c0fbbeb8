// The model's TLS step: which route serves which host over HTTPS, and with
// which Secret. Routes claim TLS hosts oldest first, as they claim paths: a
// host is served by the oldest accepted route whose certificate can serve it
// (a route that cannot serve a host does not hold it from the next one), and
// a later route that names it says which route holds it. A host whose
// certificate is bad is not served on HTTPS; nothing else changes for it (its
// plain HTTP routes stay, with no redirect).

import type { EdgeRouteV2 } from "../api/types.js";
import { compareHostnames } from "../routing/route-order.js";
import { checkCertificate } from "./certificates.js";
import type { TlsOutcome, TlsSecret, TlsSecrets } from "./tls-secrets.js";

/** One host served over HTTPS. */
export interface TlsHost {
  readonly hostname: string;
  /** `namespace/name` of its Secret: the SDS Secret's name too. */
  readonly secret: string;
  /** The key of the route that holds it. */
  readonly route: string;
  /** Plain HTTP for it is redirected to HTTPS (the default), rather than served too. */
  readonly redirect: boolean;
}

export interface TlsModel {
  /** Sorted by host name. */
  readonly hosts: readonly TlsHost[];
  /** The Secrets that serve at least one host, by `namespace/name`, sorted. */
  readonly secrets: ReadonlyMap<string, TlsSecret>;
  /** By route key, for every route whose spec has `tls`. */
  readonly outcomes: ReadonlyMap<string, TlsOutcome>;
}

export const NO_TLS: TlsModel = { hosts: [], secrets: new Map(), outcomes: new Map() };

/** A route, its key and whether the snapshot accepted it, oldest first. */
export interface AgedRoute {
  readonly route: EdgeRouteV2;
  readonly key: string;
  readonly accepted: boolean;
}

function byName<T extends { readonly hostname: string }>(a: T, b: T): number {
  return compareHostnames(a.hostname, b.hostname);
}

/** The TLS hosts of the routes with `tls`, claimed oldest first. */
export function claimTlsHosts(routes: readonly AgedRoute[], secrets: TlsSecrets, now: Date): TlsModel {
  if (!routes.some((r) => r.route.spec.tls !== undefined)) return NO_TLS;
  const owners = new Map<string, TlsHost>();
  const outcomes = new Map<string, TlsOutcome>();
  for (const { route, key, accepted } of routes) {
    const tls = route.spec.tls;
    if (tls === undefined) continue;
    const namespace = route.metadata.namespace ?? "";
    const secretKey = `${namespace}/${tls.secretName}`;
    const own = new Set(route.spec.hostnames ?? []);
    const asked = [...new Set(tls.hostnames ?? route.spec.hostnames ?? [])];
    const hosts = asked.filter((h) => own.has(h));
    const notServed: { hostname: string; message: string }[] = asked
      .filter((h) => !own.has(h))
      .map((hostname) => ({ hostname, message: "not among the route's hostnames" }));
    const served: string[] = [];
    const secret = secrets.get(secretKey);
    let refs: TlsOutcome["refs"] = { resolved: true };
    if (secret === undefined) {
      const message = `Secret ${secretKey} not found or not of type kubernetes.io/tls`;
      refs = { resolved: false, reason: "SecretNotFound", message };
      for (const hostname of hosts) notServed.push({ hostname, message });
    } else {
      const { problems } = checkCertificate(secret, hosts, now);
      if (problems.length > 0) {
        const distinct = [...new Set(problems.map((p) => p.message))];
        refs = {
          resolved: false,
          reason: "InvalidCertificate",
          message: `Secret ${secretKey}: ${distinct.join("; ")}`,
        };
      }
      const bad = new Map(problems.map((p) => [p.hostname, p.message]));
      for (const hostname of hosts) {
        const problem = bad.get(hostname);
        const owner = owners.get(hostname);
        if (problem !== undefined) notServed.push({ hostname, message: problem });
        else if (!accepted) notServed.push({ hostname, message: "the route is not accepted" });
        else if (owner !== undefined)
          notServed.push({ hostname, message: `an older route holds TLS for this host: ${owner.route}` });
        else {
          owners.set(hostname, {
            hostname,
            secret: secretKey,
            route: key,
            redirect: (tls.plainHTTP ?? "Redirect") === "Redirect",
          });
          served.push(hostname);
        }
      }
    }
    outcomes.set(key, { refs, served: served.sort(compareHostnames), notServed: notServed.sort(byName) });
  }
  const hosts = [...owners.values()].sort(byName);
  const used = [...new Set(hosts.map((h) => h.secret))].sort();
  return {
    hosts,
    secrets: new Map(used.map((name) => [name, secrets.get(name) as TlsSecret])),
    outcomes,
  };
}
