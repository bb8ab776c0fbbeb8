// What a client asked for of one type on one stream, as api/xds_protocol.rst
// ("How the client specifies what resources to return", "Unsubscribing From
// Resources") defines it for both variants:
//  - `*` is the wildcard, subscribed and unsubscribed like any name;
//  - legacy wildcard: for Listener and Cluster, a stream that has never named
//    a resource of the type is subscribed to `*` (its first request, and any
//    later one, carries no names);
//  - once the stream named any resource (`*` included), that legacy meaning is
//    gone: a SotW request with an empty list, or a Delta request that
//    unsubscribes every name, means "no longer interested in any".
// grpc-go unsubscribes a type by sending the empty list: read as a wildcard,
// it kept that client's status Pending forever.

import { TYPE_URL } from "../../envoy/envoy-resources.js";

/** LDS and CDS: the types a legacy wildcard applies to. */
function isWildcardType(typeUrl: string): boolean {
  return typeUrl === TYPE_URL.listener || typeUrl === TYPE_URL.cluster;
}

export interface Names {
  readonly wildcard: boolean;
  /** Named resources (without `*`); with the wildcard, names beyond what the wildcard gives (on-demand ones). */
  readonly names: ReadonlySet<string>;
}

/**
 * A stream asked for more names of one type than any client needs: every name
 * yields a resource (an API listener and a route configuration for any host),
 * so names are what a client could spend the server's memory with.
 */
export class TooManyNames extends Error {
  constructor(typeUrl: string, limit: number) {
    super(`a stream may subscribe to at most ${limit} resources of ${typeUrl}`);
    this.name = "TooManyNames";
  }
}

export class Subscription implements Names {
  /** No name of this type was ever asked for on the stream. */
  private legacy = true;
  private explicitWildcard = false;
  private readonly named = new Set<string>();

  constructor(private readonly typeUrl: string) {}

  get wildcard(): boolean {
    return this.explicitWildcard || (this.legacy && isWildcardType(this.typeUrl));
  }

  get names(): ReadonlySet<string> {
    return this.named;
  }

  /** Whether the subscription asks for nothing at all: the client holds none of the type and wants none. */
  empty(): boolean {
    return !this.wildcard && this.named.size === 0;
  }

  /** SotW: the request's list is the whole subscription. Answers whether what it asks for changed. */
  replace(list: readonly string[], limit = Infinity): boolean {
    if (list.length > limit) throw new TooManyNames(this.typeUrl, limit);
    const wildcard = this.wildcard;
    if (list.length > 0) this.legacy = false;
    this.explicitWildcard = list.includes("*");
    const next = new Set(list.filter((n) => n !== "*"));
    let changed = wildcard !== this.wildcard || next.size !== this.named.size;
    if (!changed) for (const n of next) if (!this.named.has(n)) changed = true;
    this.named.clear();
    for (const n of next) this.named.add(n);
    return changed;
  }

  /** Delta: names added and removed. Answers whether what it asks for changed, and the names dropped (not `*`). */
  update(
    subscribe: readonly string[],
    unsubscribe: readonly string[],
    limit = Infinity,
  ): { changed: boolean; dropped: string[] } {
    // Checked before any name is kept: the names it would hold, at most.
    if (this.named.size + subscribe.length > limit) throw new TooManyNames(this.typeUrl, limit);
    const wildcard = this.wildcard;
    let changed = false;
    if (subscribe.length > 0) this.legacy = false;
    for (const n of subscribe) {
      if (n === "*") this.explicitWildcard = true;
      else if (!this.named.has(n)) {
        this.named.add(n);
        changed = true;
      }
    }
    const dropped: string[] = [];
    for (const n of unsubscribe) {
      // Unsubscribing `*` ends a legacy wildcard too.
      if (n === "*") this.explicitWildcard = this.legacy = false;
      else if (this.named.delete(n)) dropped.push(n);
    }
    return { changed: changed || dropped.length > 0 || wildcard !== this.wildcard, dropped };
  }

  has(name: string): boolean {
    return this.wildcard || this.named.has(name);
  }

  /** For reports: `*`, or the names sorted. */
  describe(): "*" | string[] {
    return this.wildcard ? "*" : [...this.named].sort();
  }
}
