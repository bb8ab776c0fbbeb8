// Kubernetes Events about routes, so `kubectl describe edgeroute` tells the
// story. Recording an event never fails a reconcile: it is best effort.

import { randomBytes } from "node:crypto";
import os from "node:os";
import type { EdgeRouteV2 } from "../api/types.js";
import type { Logger } from "../observability/logger.js";
import type { KubeClient } from "../kube/client.js";
import { nowRfc3339 } from "./conditions.js";

export type EventType = "Normal" | "Warning";

export interface EventRecorder {
  record(route: EdgeRouteV2, type: EventType, reason: string, message: string): Promise<void>;
}

export const COMPONENT = "edge-operator";

export function kubeEventRecorder(kube: KubeClient, log: Logger): EventRecorder {
  const instance = os.hostname();
  return {
    async record(route, type, reason, message) {
      const ns = route.metadata.namespace ?? "default";
      const name = route.metadata.name ?? "";
      const now = nowRfc3339();
      const body = {
        apiVersion: "v1",
        kind: "Event",
        metadata: { name: `${name}.${randomBytes(8).toString("hex")}`, namespace: ns },
        involvedObject: {
          apiVersion: route.apiVersion,
          kind: route.kind,
          name,
          namespace: ns,
          uid: route.metadata.uid,
          resourceVersion: route.metadata.resourceVersion,
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
        log.warn({ err, route: `${ns}/${name}`, reason }, "could not record event");
      }
    },
  };
}
