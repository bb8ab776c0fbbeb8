// Kubernetes Events about routes, so `kubectl describe edgeroute` tells the
// story. Recording an event never fails a reconcile: it is best effort.

import { randomBytes } from "node:crypto";
import os from "node:os";
import type { EdgeRouteV2 } from "../api/types.js";
import type { Logger } from "../observability/logger.js";
import type { KubeClient } from "../kube/client.js";
import { nowRfc3339 } from "./conditions.js";

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

export function kubeEventRecorder(kube: KubeClient, log: Logger): EventRecorder {
  const instance = os.hostname();
  const recordOn = async (
    subject: EventSubject,
    type: EventType,
    reason: string,
    message: string,
  ): Promise<void> => {
    const ns = subject.namespace;
    const name = subject.name;
    const now = nowRfc3339();
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
      await kube.json("POST", `/api/v1/namespaces/${encodeURIComponent(ns)}/events`, {
        body,
        timeoutMs: 5000,
      });
    } catch (err) {
      log.warn({ err, object: `${subject.kind} ${ns}/${name}`, reason }, "could not record event");
    }
  };
  return {
    record: (route, type, reason, message) => recordOn(routeSubject(route), type, reason, message),
    recordOn,
  };
}
