// Many apiserver calls at a bounded concurrency: status writes and finalizer
// releases in a snapshot reconcile, rewrites in a storage migration.

/**
 * Runs `fn` over `items` with at most `limit` in flight. The first failure
 * stops new starts; the calls already in flight finish, then that failure is
 * thrown, so no call outlives this one.
 */
export async function eachConcurrently<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<unknown>,
): Promise<void> {
  let next = 0;
  let failed = false;
  const worker = async (): Promise<void> => {
    while (!failed && next < items.length) {
      const item = items[next++] as T;
      try {
        await fn(item);
      } catch (err) {
        failed = true;
        throw err;
      }
    }
  };
  const workers = Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker);
  const results = await Promise.allSettled(workers);
  const rejected = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (rejected) throw rejected.reason;
}
