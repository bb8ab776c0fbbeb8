// Every LIST in the operator goes through here: pages of `limit` objects, the
// next page fetched while the caller works on this one, and one policy for a
// continue token that expired (410: etcd compacted the list's revision, which
// a long pass over many objects outlives).
//
// The policy: a caller that needs one consistent snapshot (an informer, which
// watches from the list's resourceVersion; the reconcile, which builds the
// whole data plane from it) lists again from the start and is told so; a
// caller that does not (migration, which only rewrites each object) goes on
// from the continue token the 410 carries, at the latest revision, as
// Kubernetes documents, and starts over only when there is none. Either way
// the restarts are bounded.

import { KubeError, type KubeClient } from "./client.js";
import { isExpired } from "./errors.js";

export interface ListPage<T> {
  readonly items: T[];
  readonly metadata?: {
    readonly continue?: string;
    readonly resourceVersion?: string;
    readonly remainingItemCount?: number;
  };
}

export interface PagerOptions {
  /** Objects per page; default 500. */
  readonly pageSize?: number;
  /** Per page; default 60 s. */
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
  /** True: a 410 lists again from the start. False: it goes on from the 410's continue token. */
  readonly consistent: boolean;
  /** 410s taken before the last one is thrown; default 20. */
  readonly maxRestarts?: number;
  /** Told of each 410 taken: `fromStart` when the pages begin again (the caller drops what it gathered). */
  readonly onExpired?: (fromStart: boolean) => void;
  /** More of the query (a fieldSelector), sent with every page. */
  readonly query?: Readonly<Record<string, string>>;
  /** The Accept header of every page (a metadata-only list). */
  readonly accept?: string;
  /** Wraps each page request (migration retries 429s and 5xx with it). */
  readonly retry?: <R>(fetch: () => Promise<R>) => Promise<R>;
}

/** The continue token a 410 Expired may carry, to go on at the latest revision. */
export function continueTokenOf(err: unknown): string | undefined {
  if (!(err instanceof KubeError)) return undefined;
  const token = (err.body as { metadata?: { continue?: unknown } } | undefined)?.metadata?.continue;
  return typeof token === "string" && token !== "" ? token : undefined;
}

/** The pages of a LIST of `path`, in order; see the 410 policy above. */
export async function* listPages<T>(
  kube: KubeClient,
  path: string,
  opts: PagerOptions,
): AsyncGenerator<ListPage<T>> {
  const { pageSize = 500, timeoutMs = 60_000, signal, maxRestarts = 20 } = opts;
  const retry = opts.retry ?? (<R>(fetch: () => Promise<R>) => fetch());
  const fetchPage = (cont: string | undefined): Promise<ListPage<T>> =>
    retry(() =>
      kube.json<ListPage<T>>("GET", path, {
        query: { ...opts.query, limit: pageSize, continue: cont },
        timeoutMs,
        ...(opts.accept !== undefined ? { accept: opts.accept } : {}),
        ...(signal ? { signal } : {}),
      }),
    );
  let restarts = 0;
  let pending = fetchPage(undefined);
  for (;;) {
    let page: ListPage<T>;
    try {
      page = await pending;
    } catch (err) {
      if (!isExpired(err) || restarts >= maxRestarts) throw err;
      restarts++;
      const resume = opts.consistent ? undefined : continueTokenOf(err);
      opts.onExpired?.(resume === undefined);
      pending = fetchPage(resume);
      continue;
    }
    const cont = page.metadata?.continue || undefined;
    if (cont) {
      pending = fetchPage(cont);
      // Awaited on the next turn; until then a failure must not be unhandled.
      pending.catch(() => undefined);
    }
    yield page;
    if (!cont) return;
  }
}

/** Every object of a consistent LIST, each passed through `slim` as it arrives. */
export async function listAll<T>(
  kube: KubeClient,
  path: string,
  opts: Omit<PagerOptions, "consistent" | "onExpired"> & { readonly slim?: (item: T) => T } = {},
): Promise<{ items: T[]; resourceVersion: string }> {
  let items: T[] = [];
  let resourceVersion = "";
  const slim = opts.slim ?? ((item: T) => item);
  const pages = listPages<T>(kube, path, { ...opts, consistent: true, onExpired: () => (items = []) });
  for await (const page of pages) {
    for (const item of page.items ?? []) items.push(slim(item));
    resourceVersion = page.metadata?.resourceVersion ?? "";
  }
  return { items, resourceVersion };
}
