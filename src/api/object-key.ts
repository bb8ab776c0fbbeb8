// `namespace/name`: how a namespaced object is named everywhere (informer
// keys, route keys on /reconcile, the endpoints map of the snapshot, the
// conflict index). In api/ because every layer above needs it, routing/ too.

/** What an object that arrived over the wire is read as: nothing is trusted. */
export interface Watched {
  readonly metadata?: {
    readonly name?: unknown;
    readonly namespace?: unknown;
    readonly labels?: unknown;
  };
  readonly spec?: unknown;
}

/** `namespace/name` of a namespaced object. */
export function objectKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

/** `namespace/name` of an object, or undefined when its metadata lacks either. */
export function keyOf(obj: Watched): string | undefined {
  const { name, namespace } = obj.metadata ?? {};
  return typeof name === "string" && name && typeof namespace === "string" && namespace
    ? objectKey(namespace, name)
    : undefined;
}

/** `namespace/name` of an object already read into its type (a route, a Service); an absent field is empty. */
export function objectKeyOf(obj: {
  readonly metadata?: { readonly namespace?: string; readonly name?: string };
}): string {
  return objectKey(obj.metadata?.namespace ?? "", obj.metadata?.name ?? "");
}

const readKeys = new WeakMap<object, string>();

/**
 * objectKeyOf, kept per object: for objects that are read and never changed
 * afterwards (the cache's routes), so that a pass over 10,000 of them builds no
 * string and hashes none anew.
 */
export function readObjectKeyOf(obj: {
  readonly metadata?: { readonly namespace?: string; readonly name?: string };
}): string {
  let key = readKeys.get(obj);
  if (key === undefined) {
    key = objectKeyOf(obj);
    readKeys.set(obj, key);
  }
  return key;
}
