// Kubernetes Events about routes, so `kubectl describe edgeroute` tells the
// story. Recording an event never fails a reconcile: it is best effort. A
// repeat bumps the first Event's count and a chatty route is rate-limited
// (event-correlator.ts), as client-go's recorder does.

import { randomBytes } from "node:crypto";
import os from "node:os";
import type { EdgeRouteV2 } from "../api/types.js";
import type { Logger } from "../observability/logger.js";
import { kubeStatus, type KubeClient } from "../kube/client.js";
import { nowRfc3339 } from "./conditions.js";
import { EventCorrelator, type EventKey } from "./event-correlator.js";

export type EventType = "Normal" | "Warning";

/** What an event is about: a route, or the data plane's own object (its ConfigMap). */
export interface EventSubject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
  readonly uid?: string;
  readonly resourceVersion?: string;
}

export interface EventRecorder {
  record(route: EdgeRouteV2, type: EventType, reason: string, message: string): Promise<void>;
  /** The same, about any object. */
  recordOn(subject: EventSubject, type: EventType, reason: string, message: string): Promise<void>;
}

export function routeSubject(route: EdgeRouteV2): EventSubject {
  return {
    apiVersion: route.apiVersion,
    kind: route.kind,
    namespace: route.metadata.namespace ?? "default",
    name: route.metadata.name ?? "",
    uid: route.metadata.uid,
    resourceVersion: route.metadata.resourceVersion,
  };
}

export const COMPONENT = "edge-operator";

export function kubeEventRecorder(
  kube: KubeClient,
  log: Logger,
  correlator: EventCorrelator = new EventCorrelator(),
): EventRecorder {
  const instance = os.hostname();
  const recordOn = async (
    subject: EventSubject,
    type: EventType,
    reason: string,
    message: string,
  ): Promise<void> => {
    const ns = subject.namespace;
    const name = subject.name;
    const object = `${subject.kind} ${ns}/${name}`;
    const now = nowRfc3339();
    const key: EventKey = { object: subject.uid ?? `${subject.kind}/${ns}/${name}`, type, reason };
    const decision = correlator.decide(key);
    if (decision.action === "drop") {
      log.debug({ object, reason }, "event dropped: too many for this object");
      return;
    }
    const events = `/api/v1/namespaces/${encodeURIComponent(ns)}/events`;
    if (decision.action === "bump") {
      try {
        await kube.json("PATCH", `${events}/${encodeURIComponent(decision.name)}`, {
          body: { count: decision.count, lastTimestamp: now, message: message.slice(0, 1024) },
          contentType: "application/merge-patch+json",
          timeoutMs: 5000,
        });
        return;
      } catch (err) {
        if (kubeStatus(err) !== 404) {
          log.warn({ err, object, reason }, "could not record event");
          return;
        }
        // The Event expired: record a new one.
        correlator.forget(key);
      }
    }
    const body = {
      apiVersion: "v1",
      kind: "Event",
      metadata: { name: `${name}.${randomBytes(8).toString("hex")}`, namespace: ns },
      involvedObject: {
        apiVersion: subject.apiVersion,
        kind: subject.kind,
        name,
        namespace: ns,
        uid: subject.uid,
        resourceVersion: subject.resourceVersion,
      },
      reason,
      message: message.slice(0, 1024),
      type,
      source: { component: COMPONENT },
      reportingComponent: COMPONENT,
      reportingInstance: instance,
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
    };
    try {
      await kube.json("POST", events, { body, timeoutMs: 5000 });
      correlator.created(key, body.metadata.name);
    } catch (err) {
      log.warn({ err, object, reason }, "could not record event");
    }
  };
  return {
    record: (route, type, reason, message) => recordOn(routeSubject(route), type, reason, message),
    recordOn,
  };
}
