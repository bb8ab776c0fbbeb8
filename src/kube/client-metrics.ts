// What the thin client tells about its calls to the apiserver, the first thing
// to look at when an operator misbehaves: requests by verb, resource and code,
// their latency, retries, and waits the apiserver asked for (429 with
// Retry-After). client-go's rest_client_* metrics are the model. Labels stay
// bounded: the resource is the path's resource segment (a plural, never an
// object's name or namespace), the code an HTTP status or `<error>`.

import { Counter, Histogram, type Registry } from "prom-client";

/** One call, as its labels name it. */
export interface CallLabels {
  /** Kubernetes' verb: get, list, watch, create, update, patch, delete, deletecollection. */
  readonly verb: string;
  /** The resource's plural (`edgeroutes`, `leases`), or `nonresource` for a path such as /version. */
  readonly resource: string;
  /** `status`, `finalize`, ... or empty. */
  readonly subresource: string;
}

export interface KubeCallObserver {
  /** An attempt ended: with an HTTP status, or `<error>` when no answer came. */
  attempt(call: CallLabels, code: string, seconds: number): void;
  /** A failed attempt will be sent again after `delayMs`; `throttled` when the apiserver said 429. */
  retry(call: CallLabels, reason: string, delayMs: number, throttled: boolean): void;
}

export const NO_CALL_OBSERVER: KubeCallObserver = { attempt() {}, retry() {} };

/** The code label of an attempt that got no HTTP answer (client-go's word). */
export const NO_ANSWER = "<error>";

/**
 * The verb and resource of a request to `path` (no query): the apiserver's
 * own reading of a URL, /api/v1[/namespaces/NS]/RESOURCE[/NAME[/SUB]] and
 * /apis/GROUP/VERSION[/namespaces/NS]/RESOURCE[/NAME[/SUB]].
 */
export function callLabels(method: string, path: string, watch = false): CallLabels {
  const segs = path.split("?")[0]?.split("/").filter(Boolean) ?? [];
  let rest: string[];
  if (segs[0] === "api" && segs.length >= 2) rest = segs.slice(2);
  else if (segs[0] === "apis" && segs.length >= 3) rest = segs.slice(3);
  else rest = [];
  // A namespaced path: namespaces/NS/RESOURCE...; `namespaces/NAME` alone is the Namespace itself.
  if (rest[0] === "namespaces" && rest.length >= 3) rest = rest.slice(2);
  const [resource, name, subresource] = rest;
  const m = method.toUpperCase();
  // A non-resource URL (/version, /healthz) names one thing, as a named object does.
  const named = name !== undefined || resource === undefined;
  let verb: string;
  if (m === "GET") verb = watch ? "watch" : named ? "get" : "list";
  else if (m === "POST") verb = "create";
  else if (m === "PUT") verb = "update";
  else if (m === "PATCH") verb = "patch";
  else if (m === "DELETE") verb = named ? "delete" : "deletecollection";
  else verb = m.toLowerCase();
  return { verb, resource: resource ?? "nonresource", subresource: subresource ?? "" };
}

const observers = new WeakMap<Registry, KubeCallObserver>();

/**
 * The client metrics on `registry`, registered once however many clients a
 * process makes (the server makes one per concern); every client shares them.
 */
export function kubeClientMetrics(registry: Registry): KubeCallObserver {
  const known = observers.get(registry);
  if (known) return known;
  const requests = new Counter({
    name: "edge_operator_kube_requests_total",
    help: "Attempts of calls to the apiserver, by verb, resource, subresource and HTTP status (<error>: no answer).",
    labelNames: ["verb", "resource", "subresource", "code"] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: "edge_operator_kube_request_duration_seconds",
    help: "Time of one attempt of a call to the apiserver, to its whole answer (a watch: to its first byte), by verb and resource.",
    labelNames: ["verb", "resource"] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  const retries = new Counter({
    name: "edge_operator_kube_request_retries_total",
    help: "Failed attempts sent again, by verb, resource and what failed (an HTTP status, or <error>).",
    labelNames: ["verb", "resource", "reason"] as const,
    registers: [registry],
  });
  const throttled = new Histogram({
    name: "edge_operator_kube_throttle_wait_seconds",
    help: "Waits before sending a call again that the apiserver refused with 429 (Too Many Requests), after its Retry-After when given, by verb and resource.",
    labelNames: ["verb", "resource"] as const,
    buckets: [0.1, 0.25, 0.5, 1, 2, 5, 10],
    registers: [registry],
  });
  const observer: KubeCallObserver = {
    attempt(call, code, seconds) {
      requests.inc({ verb: call.verb, resource: call.resource, subresource: call.subresource, code });
      duration.observe({ verb: call.verb, resource: call.resource }, seconds);
    },
    retry(call, reason, delayMs, was429) {
      retries.inc({ verb: call.verb, resource: call.resource, reason });
      if (was429) throttled.observe({ verb: call.verb, resource: call.resource }, delayMs / 1000);
    },
  };
  observers.set(registry, observer);
  return observer;
}
