// The files the kubelet mounts for a pod's service account, named once.

import { existsSync, readFileSync } from "node:fs";
import path from "node:path";

export const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";
export const SERVICE_ACCOUNT_TOKEN = path.join(SERVICE_ACCOUNT_DIR, "token");
export const SERVICE_ACCOUNT_CA = path.join(SERVICE_ACCOUNT_DIR, "ca.crt");
export const POD_NAMESPACE_FILE = path.join(SERVICE_ACCOUNT_DIR, "namespace");

/** The pod's own namespace, when running in a pod. */
export function podNamespace(file = POD_NAMESPACE_FILE): string | undefined {
  if (!existsSync(file)) return undefined;
  return readFileSync(file, "utf8").trim() || undefined;
}
