// What an admission decision reads and answers, whatever carried it: the
// request of an AdmissionReview (admission.k8s.io/v1) and the verdict on it.
// Reading and writing the review itself is the server's (server/admission-review.ts).

import type { Operation as PatchOperation } from "fast-json-patch";

export const OPERATIONS = ["CREATE", "UPDATE", "DELETE", "CONNECT"] as const;
export type AdmissionOperation = (typeof OPERATIONS)[number];

export interface GroupVersionKind {
  readonly group: string;
  readonly version: string;
  readonly kind: string;
}

export interface AdmissionRequest {
  readonly uid: string;
  readonly kind?: GroupVersionKind;
  readonly resource: { readonly group: string; readonly version: string; readonly resource: string };
  readonly subResource?: string;
  readonly name?: string;
  readonly namespace?: string;
  readonly operation: AdmissionOperation;
  readonly object?: unknown;
  readonly oldObject?: unknown;
  readonly dryRun?: boolean;
}

export interface Status {
  readonly code: number;
  readonly reason: string;
  readonly message: string;
  readonly details?: {
    readonly name?: string;
    readonly group?: string;
    readonly kind?: string;
    readonly causes?: readonly { field: string; reason: string; message: string }[];
  };
}

export type Verdict =
  | {
      readonly allowed: true;
      readonly warnings?: readonly string[];
      readonly patch?: readonly PatchOperation[];
    }
  | { readonly allowed: false; readonly status: Status; readonly warnings?: readonly string[] };

export function deny(code: number, reason: string, message: string): Verdict {
  return { allowed: false, status: { code, reason, message } };
}
