// Where each route stands, from where each client stands and what it was sent:
// a client counts for a route only if the route is in what it asked for (its
// listeners: Envoy's gets every route, an API listener HOST the routes of the
// virtual host HOST lands on). So a gRPC client's NACK marks its hosts'
// routes, not every route; a client that asked for no listener holds no route
// and is waited for by none.
//
// A route that serves a host over HTTPS is Programmed only by what serves
// that: Envoy (scope `*`) counts for it only if it may hold the route's
// Secret (authenticated by mutual TLS), and then, as for everything it holds,
// once it ACKed the Secret, the HTTPS listener and `https/HOST` too (they are
// among what its listeners require, resources.ts requiredNames). An Envoy
// without a client certificate serves only the plain side (for a TLS host, a
// redirect to what it does not serve): it does not make a TLS route
// Programmed. A gRPC client (a host scope) reads the host's routes through
// `edge/HOST`, without TLS at the edge: it counts as for any route.

import type { RouteProgramming, RouteStanding } from "../dataplane.js";
import { combine, pendingWords, type AckVerdict, type ClientStatus } from "./ack-tracker.js";
import { routesOfListeners, type XdsSnapshot } from "./resources.js";
import type { Scope } from "./stream.js";

export interface ClientView {
  readonly id: string;
  readonly status: ClientStatus;
  readonly scope: Scope;
  /** When its connection went silent (ms since the epoch): it may still serve what it held. */
  readonly unreachableSince?: number;
  /**
   * false: it is not authenticated by mutual TLS, so it holds no HTTPS side
   * (no listener `https`, no Secret). Absent (a record of another replica's
   * client): counted as the records say, as before TLS.
   */
  readonly servesTls?: boolean;
}

/** Whether a client that scope for `scope` carries any route at all. */
export function scopeHasRoutes(scope: Scope): boolean {
  return scope === "*" || scope.length > 0;
}

/** Whether a route with these host names (none: every host) may land a request for `host`. */
function routeHostsMatch(hostnames: readonly string[], host: string): boolean {
  if (hostnames.length === 0) return true;
  for (const h of hostnames) {
    if (h === host || h === "*") return true;
    if (h.startsWith("*.") && host.endsWith(h.slice(1)) && host.length > h.length - 1) return true;
  }
  return false;
}

export const NO_CLIENT_MESSAGE = "no xDS client is connected: nothing serves this route yet";
const NO_SUBSCRIBER_MESSAGE =
  "no connected xDS client asks for this route's host names: nothing serves it yet";

function programmingOf(verdict: AckVerdict, pendingMessage: string, anyClient: boolean): RouteProgramming {
  switch (verdict.kind) {
    case "synced":
      return { ok: true };
    case "none":
      return {
        ok: false,
        reason: "NoDataPlane",
        message: anyClient ? NO_SUBSCRIBER_MESSAGE : NO_CLIENT_MESSAGE,
        unserved: true,
      };
    case "rejected":
      return { ok: false, reason: "Rejected", message: verdict.message };
    case "pending":
      return { ok: false, reason: "Pending", message: pendingWords(verdict, pendingMessage) };
  }
}

export class RouteVerdicts implements RouteStanding {
  private readonly clients: readonly (ClientView & { readonly routes: "*" | ReadonlySet<string> })[];
  private readonly byRoutes = new Map<string, RouteProgramming>();
  private readonly tlsRoutes: ReadonlySet<string>;

  constructor(
    snapshot: XdsSnapshot,
    clients: readonly ClientView[],
    private readonly pendingMessage: string,
  ) {
    this.tlsRoutes = snapshot.tlsRoutes;
    this.clients = clients
      .filter((c) => scopeHasRoutes(c.scope))
      .map((c) => ({
        ...c,
        routes:
          c.scope === "*" ? "*" : routesOfListeners(snapshot, { wildcard: false, names: new Set(c.scope) }),
      }));
  }

  live(key: string): RouteProgramming {
    const tls = this.tlsRoutes.has(key);
    return this.verdictOf((c) => (c.routes === "*" ? !(tls && c.servesTls === false) : c.routes.has(key)));
  }

  deleted(hostnames: readonly string[]): RouteProgramming {
    return this.verdictOf(
      (c) => c.routes === "*" || c.scope === "*" || c.scope.some((host) => routeHostsMatch(hostnames, host)),
    );
  }

  /** Routes carried by the same clients share one answer: at 10,000 routes most do. */
  private verdictOf(carries: (c: RouteVerdicts["clients"][number]) => boolean): RouteProgramming {
    const carrying: ClientView[] = [];
    let key = "";
    this.clients.forEach((c, i) => {
      if (!carries(c)) return;
      carrying.push(c);
      key += `${i},`;
    });
    let v = this.byRoutes.get(key);
    if (v === undefined) {
      v = programmingOf(combine(carrying), this.pendingMessage, this.clients.length > 0);
      this.byRoutes.set(key, v);
    }
    return v;
  }
}
