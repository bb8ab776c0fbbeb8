// An apiserver's answer that failed, kept apart from the client so that the
// retry rule (retry.ts) can name it without importing the client.

/** A non-2xx answer from the apiserver, with its metav1.Status reason. */
export class KubeError extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
    /** The metav1.Status as sent (a 410 on a list carries a continue token in its metadata). */
    readonly body?: unknown,
    /** The Retry-After header's wait, in ms, when the answer had one. */
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.name = "KubeError";
  }
}

/** The HTTP status of an apiserver answer that failed, or undefined for any other error. */
export function kubeStatus(err: unknown): number | undefined {
  return err instanceof KubeError ? err.status : undefined;
}
