// Where each route stands, from where each client stands and what it was sent:
// a client counts for a route only if the route is in what it asked for (its
// listeners: Envoy's gets every route, an API listener HOST the routes of the
// virtual host HOST lands on). So a gRPC client's NACK marks its hosts'
// routes, not every route; a client that asked for no listener holds no route
// and is waited for by none.

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

  constructor(
    snapshot: XdsSnapshot,
    clients: readonly ClientView[],
    private readonly pendingMessage: string,
  ) {
    this.clients = clients
      .filter((c) => scopeHasRoutes(c.scope))
      .map((c) => ({
        ...c,
        routes:
          c.scope === "*" ? "*" : routesOfListeners(snapshot, { wildcard: false, names: new Set(c.scope) }),
      }));
  }

  live(key: string): RouteProgramming {
    return this.verdictOf((c) => c.routes === "*" || c.routes.has(key));
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
