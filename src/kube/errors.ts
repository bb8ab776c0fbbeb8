// What an apiserver failure means, decided in one place: the reconcile, the
// sinks, certificates, migration and the lease all ask these.

import { KubeError, kubeStatus } from "./client.js";

export { KubeError, kubeStatus };

/** 404: the object (or its namespace) is not there. */
export function isNotFound(err: unknown): boolean {
  return kubeStatus(err) === 404;
}

/** 409: the resourceVersion moved on, or a create lost a race. */
export function isConflict(err: unknown): boolean {
  return kubeStatus(err) === 409;
}

/** 409, or 422 from a JSON Patch `test` that failed: the object moved on since it was read. */
export function isStale(err: unknown): boolean {
  const status = kubeStatus(err);
  return status === 409 || status === 422;
}

/** 410: a resourceVersion or continue token older than etcd's history. */
export function isExpired(err: unknown): boolean {
  return kubeStatus(err) === 410;
}

/** One line for a condition message or a log: the apiserver's own Status message when there is one. */
export function errorMessage(err: unknown): string {
  if (err instanceof KubeError) {
    const message = (err.body as { message?: unknown } | undefined)?.message;
    if (typeof message === "string") return `${err.status}: ${message}`;
  }
  return err instanceof Error ? (err.message.split("\n")[0] ?? "") : String(err);
}
