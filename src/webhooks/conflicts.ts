// The conflict warning: a route whose host and match an older route already
// owns will be Accepted=False/Conflicted once reconciled; admission says so at
// once, but never refuses it (DESIGN.md). The cluster lookup is best effort:
// it has a time budget, is shared by the requests of one short window, and a
// failure or a slow apiserver only means no warning.

import { CustomObjectsApi, type KubeConfig } from "@kubernetes/client-node";
import { GROUP, PLURAL } from "../api/types.js";
import type { Logger } from "../server/logger.js";
import { claimKey, claimsOf, describeMatch } from "./route-keys.js";

export interface RouteSummary {
  readonly namespace: string;
  readonly name: string;
  /** RFC 3339; absent for a route not yet created. */
  readonly creationTimestamp?: string;
  readonly terminating: boolean;
  readonly spec: unknown;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

export function summarize(obj: unknown, fallbackNamespace = ""): RouteSummary | undefined {
  if (!isRecord(obj) || !isRecord(obj.metadata)) return undefined;
  const m = obj.metadata;
  const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);
  const ts = str(m.creationTimestamp);
  return {
    namespace: str(m.namespace) ?? fallbackNamespace,
    name: str(m.name) ?? "",
    ...(ts ? { creationTimestamp: ts } : {}),
    terminating: m.deletionTimestamp !== undefined && m.deletionTimestamp !== null,
    spec: obj.spec,
  };
}

/** Conflict order (Gateway API): the older route first, then namespace/name. */
function isOlder(a: RouteSummary, b: RouteSummary): boolean {
  const ta = a.creationTimestamp ? Date.parse(a.creationTimestamp) : Infinity;
  const tb = b.creationTimestamp ? Date.parse(b.creationTimestamp) : Infinity;
  if (ta !== tb) return ta < tb;
  return `${a.namespace}/${a.name}` < `${b.namespace}/${b.name}`;
}

function describeClaim(host: string, match: string): string {
  return `${host === "" ? "any host" : host} ${describeMatch(match)}`;
}

/** One warning per older route that owns a host and match this route claims. */
export function conflictWarnings(route: RouteSummary, others: readonly RouteSummary[]): string[] {
  const mine = new Map(claimsOf(route.spec).map((c) => [claimKey(c), c]));
  if (mine.size === 0) return [];
  const owners = others
    .filter(
      (o) =>
        !o.terminating && !(o.namespace === route.namespace && o.name === route.name) && isOlder(o, route),
    )
    .sort((a, b) => (isOlder(a, b) ? -1 : 1));
  const warnings: string[] = [];
  const taken = new Set<string>();
  for (const o of owners) {
    const clash = claimsOf(o.spec).find((c) => mine.has(claimKey(c)) && !taken.has(claimKey(c)));
    if (!clash) continue;
    for (const c of claimsOf(o.spec)) if (mine.has(claimKey(c))) taken.add(claimKey(c));
    warnings.push(
      `conflicts with older EdgeRoute ${o.namespace}/${o.name} on ${describeClaim(clash.host, clash.match)}; that route wins`,
    );
  }
  return warnings;
}

export interface ConflictLookupOptions {
  /** Longest a request waits for the list, in ms. */
  budgetMs?: number;
  /** How long one list answers later requests, in ms. */
  ttlMs?: number;
  log?: Logger;
}

/** Lists every EdgeRoute (v2) at most once per ttl, and never waits past its budget. */
export class ConflictLookup {
  private readonly api: CustomObjectsApi;
  private readonly budgetMs: number;
  private readonly ttlMs: number;
  private current: { at: number; settled: boolean; routes: Promise<RouteSummary[] | undefined> } | undefined;

  constructor(
    kc: KubeConfig,
    private readonly opts: ConflictLookupOptions = {},
  ) {
    this.api = kc.makeApiClient(CustomObjectsApi);
    this.budgetMs = opts.budgetMs ?? 1500;
    this.ttlMs = opts.ttlMs ?? 1000;
  }

  private fetch(): Promise<RouteSummary[] | undefined> {
    const now = Date.now();
    // One list in flight at a time: a slow apiserver must not collect a pile of
    // requests from a busy webhook. One that never answers is given up on.
    const c = this.current;
    if (c && (c.settled ? now - c.at < this.ttlMs : now - c.at < this.budgetMs * 10)) return c.routes;
    const entry = {
      at: now,
      settled: false,
      routes: this.api
        // resourceVersion "0": the apiserver's watch cache will do; no quorum read.
        .listClusterCustomObject({ group: GROUP, version: "v2", plural: PLURAL, resourceVersion: "0" })
        .then((list: unknown) => {
          const items = isRecord(list) && Array.isArray(list.items) ? list.items : [];
          return items.map((i) => summarize(i)).filter((s): s is RouteSummary => s !== undefined);
        })
        .catch((err: unknown) => {
          this.opts.log?.warn({ err }, "conflict lookup failed; admitting without conflict warnings");
          return undefined;
        })
        .finally(() => {
          entry.settled = true;
          entry.at = Date.now();
        }),
    };
    this.current = entry;
    return entry.routes;
  }

  /** The other routes, or undefined when they are not known within the budget. */
  async routes(): Promise<RouteSummary[] | undefined> {
    const routes = this.fetch();
    // A fresh answer in hand needs no timer.
    if (this.current?.settled) return routes;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), this.budgetMs);
    });
    try {
      return await Promise.race([routes, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  async warnings(route: RouteSummary): Promise<string[]> {
    const others = await this.routes();
    return others ? conflictWarnings(route, others) : [];
  }
}
