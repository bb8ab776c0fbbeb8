// The keys the watcher hands to POST /reconcile. Shared with the endpoint so
// both sides spell the snapshot key the same way.

/** The one key that rebuilds and pushes the whole data-plane snapshot. */
export const SNAPSHOT_KEY = "$snapshot";

/** `namespace/name` of a namespaced object. */
export function objectKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

/** Splits a route key; undefined for the snapshot key or anything malformed. */
export function parseRouteKey(key: string): { namespace: string; name: string } | undefined {
  const slash = key.indexOf("/");
  if (slash <= 0 || slash === key.length - 1 || key.indexOf("/", slash + 1) !== -1) return undefined;
  return { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}
