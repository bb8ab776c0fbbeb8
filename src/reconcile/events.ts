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

export interface EventRecorder {
  record(route: EdgeRouteV2, type: EventType, reason: string, message: string): Promise<void>;
}

export const COMPONENT = "edge-operator";

export function kubeEventRecorder(
  kube: KubeClient,
  log: Logger,
  correlator: EventCorrelator = new EventCorrelator(),
): EventRecorder {
  const instance = os.hostname();
  return {
    async record(route, type, reason, message) {
      const ns = route.metadata.namespace ?? "default";
      const name = route.metadata.name ?? "";
      const now = nowRfc3339();
      const key: EventKey = { object: route.metadata.uid ?? `${ns}/${name}`, type, reason };
      const decision = correlator.decide(key);
      if (decision.action === "drop") {
        log.debug({ route: `${ns}/${name}`, reason }, "event dropped: too many for this route");
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
            log.warn({ err, route: `${ns}/${name}`, reason }, "could not record event");
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
        await kube.json("POST", events, { body, timeoutMs: 5000 });
        correlator.created(key, body.metadata.name);
      } catch (err) {
        log.warn({ err, route: `${ns}/${name}`, reason }, "could not record event");
      }
    },
  };
}
