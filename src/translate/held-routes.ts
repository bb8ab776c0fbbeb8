// Routes held back from every data-plane client because a client refused
// what they add. A proxy takes or refuses an update whole, so one refused
// route would freeze every other tenant's changes; holding it back lets the
// rest flow (reconcile/culprit-search.ts finds it). A hold is for one
// generation: an edit of the route's spec tries it again. It is kept where
// every replica and every restart can read it, in the route's own status
// (Accepted=False/Rejected at its generation), and, until that is written, in
// the memory of the process that found it.

import type { EdgeRouteV2 } from "../api/types.js";

export interface HeldRoute {
  /** The object refused: a route deleted and made again under the same name is another. */
  readonly uid: string | undefined;
  /** The generation refused; a route whose spec changed since is tried again. */
  readonly generation: number | undefined;
  /** The Accepted condition's message: the client's words and what happens next. */
  readonly message: string;
  /**
   * The version the clients took before, served in its place: an edit a proxy
   * refuses does not take down what it served. Known only to the process that
   * found the refusal; a hold read from the status alone serves nothing of it.
   */
  readonly served?: EdgeRouteV2;
}

/** Held routes by `namespace/name`. */
export type HeldRoutes = ReadonlyMap<string, HeldRoute>;

export const NO_HELD_ROUTES: HeldRoutes = new Map();

/** Accepted's reason on a held route, as on the Programmed condition of a route a client refused. */
export const HELD_REASON = "Rejected";

/** The Accepted message of a route held back for a client's refusal (`refusal`: the data plane's words). */
export function heldMessage(refusal: string): string {
  return `held back from every xDS client: ${refusal}; it is tried again when its spec changes`;
}

/** The hold a route's status records for its current generation; undefined when it has none. */
export function heldByStatus(route: EdgeRouteV2): string | undefined {
  const conditions = route.status?.conditions;
  if (conditions === undefined) return undefined;
  for (const c of conditions)
    if (
      c.type === "Accepted" &&
      c.status === "False" &&
      c.reason === HELD_REASON &&
      c.observedGeneration !== undefined &&
      c.observedGeneration === route.metadata.generation
    )
      return c.message;
  return undefined;
}

/** Why the route is held back now, from the map or from its own status; undefined when it is not. */
export function holdOf(route: EdgeRouteV2, key: string, held: HeldRoutes): string | undefined {
  const h = held.get(key);
  if (h !== undefined && h.uid === route.metadata.uid && h.generation === route.metadata.generation)
    return h.message;
  return heldByStatus(route);
}
