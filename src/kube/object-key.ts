// `namespace/name`: how a namespaced object is named everywhere (informer
// keys, route keys on /reconcile, the conflict index).

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
