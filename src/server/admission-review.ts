// The AdmissionReview envelope: reading a request from the apiserver and
// writing the answer it expects. What is wrong with the envelope itself gets a
// 400 JSON error; once a uid is known, the answer is a review that says
// `allowed: false` and why, which the apiserver shows to the user.

import {
  OPERATIONS,
  deny,
  type AdmissionOperation,
  type AdmissionRequest,
  type GroupVersionKind,
  type Verdict,
} from "../webhooks/review.js";
import { CRD_NAME, GROUP, PLURAL } from "../api/types.js";
import { errorReply, MiB, type JsonReply } from "./json-handler.js";
import { isRecord } from "../api/is-record.js";

/**
 * The largest AdmissionReview accepted. An UPDATE carries the object and the
 * old one; the old one is in etcd, so at most 1.5 MiB (etcd's default
 * --max-request-bytes), and a new one larger than that is refused by etcd
 * anyway; the apiserver reads request bodies of 3 MiB at most. Two objects of
 * 1.5 MiB and the review's own fields fit in 4 MiB.
 */
export const ADMISSION_BODY_LIMIT = 4 * MiB;

export const ADMISSION_VERSIONS = ["admission.k8s.io/v1", "admission.k8s.io/v1beta1"] as const;
export type AdmissionApiVersion = (typeof ADMISSION_VERSIONS)[number];

export interface Review {
  readonly apiVersion: AdmissionApiVersion;
  readonly request: AdmissionRequest;
}

/** The apiserver drops warnings it cannot show; keep each short and printable. */
export const MAX_WARNING_LENGTH = 119;
const MAX_WARNINGS = 16;

export function cleanWarning(text: string): string {
  const printable = text.replace(/[^\x20-\x7e]/g, "?");
  return printable.length <= MAX_WARNING_LENGTH
    ? printable
    : `${printable.slice(0, MAX_WARNING_LENGTH - 3)}...`;
}

function describe(v: unknown): string {
  if (v === undefined) return "missing";
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  if (typeof v === "string") return JSON.stringify(v.length > 60 ? `${v.slice(0, 57)}...` : v);
  return `a ${typeof v}`;
}

/** The answer to a review, in the version it was asked in. */
export function reviewReply(apiVersion: AdmissionApiVersion, uid: string, verdict: Verdict): JsonReply {
  const response: Record<string, unknown> = { uid, allowed: verdict.allowed };
  if (!verdict.allowed) response.status = { status: "Failure", ...verdict.status };
  if (verdict.warnings && verdict.warnings.length > 0) {
    response.warnings = verdict.warnings.slice(0, MAX_WARNINGS).map(cleanWarning);
  }
  if (verdict.allowed && verdict.patch && verdict.patch.length > 0) {
    response.patchType = "JSONPatch";
    response.patch = Buffer.from(JSON.stringify(verdict.patch)).toString("base64");
  }
  return { status: 200, body: { apiVersion, kind: "AdmissionReview", response } };
}

export type Parsed =
  { readonly ok: true; readonly review: Review } | { readonly ok: false; readonly reply: JsonReply };

/**
 * Reads an AdmissionReview about an EdgeRoute. Anything else is refused: with
 * a 400 when there is no uid to answer to, else with a review that denies.
 */
export function parseReview(body: unknown): Parsed {
  const bad = (message: string): Parsed => ({ ok: false, reply: errorReply(400, "BadRequest", message) });
  if (!isRecord(body)) return bad(`expected an AdmissionReview object, got ${describe(body)}`);
  if (body.kind !== "AdmissionReview")
    return bad(`expected kind AdmissionReview, got ${describe(body.kind)}`);
  const apiVersion = body.apiVersion;
  if (!(ADMISSION_VERSIONS as readonly unknown[]).includes(apiVersion)) {
    return bad(
      `unsupported AdmissionReview apiVersion ${describe(apiVersion)}; this webhook speaks admission.k8s.io/v1`,
    );
  }
  const version = apiVersion as AdmissionApiVersion;
  const request = body.request;
  if (!isRecord(request)) return bad(`AdmissionReview.request is ${describe(request)}`);
  const uid = request.uid;
  if (typeof uid !== "string" || uid === "") return bad(`AdmissionReview.request.uid is ${describe(uid)}`);

  const refuse = (message: string): Parsed => ({
    ok: false,
    reply: reviewReply(version, uid, deny(400, "BadRequest", message)),
  });
  const resource = request.resource;
  if (!isRecord(resource) || resource.group !== GROUP || resource.resource !== PLURAL) {
    const what = isRecord(resource)
      ? [resource.resource, resource.group]
          .filter((s) => s !== "")
          .map(String)
          .join(".")
      : describe(resource);
    return refuse(`this webhook admits ${CRD_NAME} only, not ${what}`);
  }
  if (typeof resource.version !== "string") return refuse("request.resource.version is missing");
  if (!(OPERATIONS as readonly unknown[]).includes(request.operation)) {
    return refuse(
      `request.operation is ${describe(request.operation)}; expected one of ${OPERATIONS.join(", ")}`,
    );
  }
  const kind = request.kind;
  const gvk: GroupVersionKind | undefined =
    isRecord(kind) &&
    typeof kind.group === "string" &&
    typeof kind.version === "string" &&
    typeof kind.kind === "string"
      ? { group: kind.group, version: kind.version, kind: kind.kind }
      : undefined;
  const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);
  return {
    ok: true,
    review: {
      apiVersion: version,
      request: {
        uid,
        ...(gvk ? { kind: gvk } : {}),
        resource: { group: GROUP, version: resource.version, resource: PLURAL },
        ...(str(request.subResource) ? { subResource: str(request.subResource) } : {}),
        ...(str(request.name) !== undefined ? { name: str(request.name) } : {}),
        ...(str(request.namespace) !== undefined ? { namespace: str(request.namespace) } : {}),
        operation: request.operation as AdmissionOperation,
        object: request.object,
        oldObject: request.oldObject,
        dryRun: request.dryRun === true,
      },
    },
  };
}
