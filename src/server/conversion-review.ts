// The ConversionReview endpoint, as the apiserver checks the answer: the same
// uid, the same objects in the same order, each at desiredAPIVersion, metadata
// untouched but for labels and annotations. Any object that cannot be converted
// fails the whole review (the apiserver has no partial answer), with a message
// naming every such object and field.

import { formatFieldError, type FieldError } from "../api/field-error.js";
import { API_VERSION_V1, API_VERSION_V2, KIND, type EdgeRoute } from "../api/types.js";
import { errorReply, type JsonReply, type JsonHandler } from "./json-handler.js";
import type { ServerMetrics } from "../observability/metrics.js";
import { convert } from "../conversion/convert.js";
import { isRecord } from "../api/is-record.js";
import { CONVERSION_WEBHOOK } from "../api/webhook-registration.js";

export const REVIEW_API_VERSION = "apiextensions.k8s.io/v1";
export const REVIEW_KIND = "ConversionReview";
/** Failed objects named in one message; the rest are counted. */
const MAX_FAILURES_SHOWN = 10;

export interface ConversionReviewResponse {
  readonly apiVersion: typeof REVIEW_API_VERSION;
  readonly kind: typeof REVIEW_KIND;
  readonly response: {
    readonly uid: string;
    readonly convertedObjects: readonly unknown[];
    readonly result: { readonly status: "Success" } | { readonly status: "Failed"; readonly message: string };
  };
}

interface ReviewRequest {
  readonly uid: string;
  readonly desiredAPIVersion: string;
  readonly objects: readonly unknown[];
}

/** The request, or why the body is not a ConversionReview this server answers. */
function readRequest(body: unknown): ReviewRequest | string {
  if (!isRecord(body)) return "the body must be a ConversionReview object";
  if (body.kind !== REVIEW_KIND)
    return `kind must be "${REVIEW_KIND}", got ${JSON.stringify(body.kind) ?? "nothing"}`;
  if (body.apiVersion !== REVIEW_API_VERSION) {
    return `apiVersion must be "${REVIEW_API_VERSION}" (the CRD asks for conversionReviewVersions [v1]), got ${JSON.stringify(body.apiVersion) ?? "nothing"}`;
  }
  const req = body.request;
  if (!isRecord(req)) return "request must be an object";
  if (typeof req.uid !== "string" || req.uid === "") return "request.uid must be a non-empty string";
  if (typeof req.desiredAPIVersion !== "string") return "request.desiredAPIVersion must be a string";
  if (!Array.isArray(req.objects)) return "request.objects must be an array";
  return { uid: req.uid, desiredAPIVersion: req.desiredAPIVersion, objects: req.objects };
}

/** `EdgeRoute team-a/shop` when the object says who it is, and always its index. */
function describe(obj: unknown, i: number): string {
  const meta = isRecord(obj) && isRecord(obj.metadata) ? obj.metadata : undefined;
  const name = typeof meta?.name === "string" ? meta.name : undefined;
  const ns = typeof meta?.namespace === "string" ? meta.namespace : undefined;
  const who = name === undefined ? "" : ns === undefined ? ` ${name}` : ` ${ns}/${name}`;
  return `${KIND}${who} (request.objects[${i}])`;
}

/** Errors that stop an object from being converted before convert() sees it. */
function envelopeErrors(obj: unknown): FieldError[] | undefined {
  if (!isRecord(obj)) return [{ path: "", type: "Invalid value", detail: "must be an object", value: obj }];
  if (obj.kind !== KIND) {
    return [
      { path: "kind", type: "Unsupported value", detail: `supported values: "${KIND}"`, value: obj.kind },
    ];
  }
  return undefined;
}

function failed(uid: string, message: string): ConversionReviewResponse {
  return {
    apiVersion: REVIEW_API_VERSION,
    kind: REVIEW_KIND,
    response: { uid, convertedObjects: [], result: { status: "Failed", message } },
  };
}

/** How a review ended, for the decisions metric. */
export type ConversionOutcome = "bad-request" | "failed" | "converted";

export function handleConversionReview(
  body: unknown,
  count: (outcome: ConversionOutcome) => void = () => {},
): JsonReply {
  const req = readRequest(body);
  if (typeof req === "string") {
    count("bad-request");
    return errorReply(400, "BadRequest", `not a ConversionReview: ${req}`);
  }
  const { uid, desiredAPIVersion, objects } = req;
  if (desiredAPIVersion !== API_VERSION_V1 && desiredAPIVersion !== API_VERSION_V2) {
    count("failed");
    const named = objects.slice(0, MAX_FAILURES_SHOWN).map(describe);
    const more = objects.length > named.length ? `, and ${objects.length - named.length} more` : "";
    const message =
      `request.desiredAPIVersion: Unsupported value: ${JSON.stringify(desiredAPIVersion)}: ` +
      `supported values: "${API_VERSION_V1}", "${API_VERSION_V2}"; ` +
      `cannot convert ${objects.length} objects${named.length > 0 ? `: ${named.join(", ")}${more}` : ""}`;
    return { status: 200, body: failed(uid, message) };
  }
  const converted: unknown[] = new Array(objects.length);
  const failures: string[] = [];
  let failedCount = 0;
  for (let i = 0; i < objects.length; i++) {
    const obj = objects[i];
    const errors = envelopeErrors(obj);
    const r = errors
      ? { ok: false as const, errors }
      : convert(obj as unknown as EdgeRoute, desiredAPIVersion);
    if (r.ok) {
      converted[i] = r.object;
      continue;
    }
    failedCount++;
    if (failures.length < MAX_FAILURES_SHOWN) {
      failures.push(
        `${describe(obj, i)}: ${r.errors.map((e) => formatFieldError(e).replace(/^: /, "")).join("; ")}`,
      );
    }
  }
  if (failedCount > 0) {
    count("failed");
    const more = failedCount > failures.length ? `; and ${failedCount - failures.length} more objects` : "";
    const head = `cannot convert ${failedCount} of ${objects.length} objects to ${JSON.stringify(desiredAPIVersion)}`;
    return { status: 200, body: failed(uid, `${head}: ${failures.join(" | ")}${more}`) };
  }
  count("converted");
  const review: ConversionReviewResponse = {
    apiVersion: REVIEW_API_VERSION,
    kind: REVIEW_KIND,
    response: { uid, convertedObjects: converted, result: { status: "Success" } },
  };
  return { status: 200, body: review };
}

/** `/convert`: ConversionReviews up to `limitBytes` (a whole unpaginated LIST can be large). */
export function conversionHandler(limitBytes: number, metrics: ServerMetrics): JsonHandler {
  const count = (outcome: ConversionOutcome): void =>
    metrics.webhookDecisions.inc({ webhook: "convert", outcome });
  return {
    path: CONVERSION_WEBHOOK.path,
    limit: limitBytes,
    budget: "conversion",
    handle: (body) => {
      const reply = handleConversionReview(body, count);
      const objects = (body as { request?: { objects?: unknown } } | null)?.request?.objects;
      if (Array.isArray(objects)) metrics.conversionObjects.inc(objects.length);
      return reply;
    },
  };
}
