// The admission decisions on one request: /validate's verdict (field errors,
// the v2 spec a v1 object carries, a terminating route let go, conflict
// warnings) and /mutate's (a JSON Patch of what mutateRoute changes). The rules
// are validate.ts and mutate.ts; the server reads and writes the reviews
// (server/admission-handlers.ts).

import jsonPatch from "fast-json-patch";
import { fieldError, formatFieldError, type FieldError } from "../api/field-error.js";
import {
  API_VERSION_V2,
  GROUP,
  KIND,
  V2_SPEC_ANNOTATION,
  isVersion,
  versionOf,
  type EdgeRoute,
  type EdgeRouteV2,
  type Version,
} from "../api/types.js";
import { LIMITS } from "../api/schema.js";
import { convert } from "../conversion/convert.js";
import { jsonEqual } from "../conversion/json-equal.js";
import { deny, type AdmissionRequest, type Verdict } from "./review.js";
import { type ConflictIndex, hostsOf, summarize } from "./conflicts.js";
import { hostFullMessage, tooLargeDetail, weighRoute } from "../translate/model.js";
import { mutateRoute } from "./mutate.js";
import { validateRoute } from "../rules/validate.js";
import { isRecord } from "../api/is-record.js";

const { compare } = jsonPatch;

/** The version the object is written in: its apiVersion, else the request's kind. */
function versionFor(request: AdmissionRequest, object: Record<string, unknown>): Version | undefined {
  const own = versionOf(object.apiVersion);
  if (own) return own;
  if (object.apiVersion === undefined && request.kind?.group === GROUP && isVersion(request.kind.version)) {
    return request.kind.version;
  }
  return undefined;
}

function isTerminating(obj: unknown): boolean {
  return isRecord(obj) && isRecord(obj.metadata) && obj.metadata.deletionTimestamp != null;
}

function withoutMetadata(obj: Record<string, unknown>): Record<string, unknown> {
  const { metadata: _m, ...rest } = obj;
  return rest;
}

/** The apiserver's wording for an invalid object, one field error after another. */
export function invalidMessage(name: string, errors: readonly FieldError[]): string {
  const list = errors.map(formatFieldError);
  const body = list.length === 1 ? list[0] : `[${list.join(", ")}]`;
  return `${KIND}.${GROUP} ${JSON.stringify(name)} is invalid: ${body}`;
}

function nameOf(request: AdmissionRequest, obj: Record<string, unknown>): string {
  const m = isRecord(obj.metadata) ? obj.metadata : {};
  if (typeof m.name === "string" && m.name !== "") return m.name;
  if (request.name) return request.name;
  return typeof m.generateName === "string" ? m.generateName : "";
}

function missingObject(request: AdmissionRequest): Verdict {
  return deny(400, "BadRequest", `request.object must be an EdgeRoute object for ${request.operation}`);
}

/**
 * Whether a Secret exists, as a watch of Secrets' metadata knows it; undefined
 * while that is not known yet (before the watch's first list).
 */
export type TlsSecretExists = (namespace: string, name: string) => boolean | undefined;

/** What /validate may look up in the cluster beyond the object; each part optional. */
export interface ValidateLookups {
  /** Warns about a route whose TLS Secret does not exist (yet). */
  readonly tlsSecretExists?: TlsSecretExists;
}

export async function validateReview(
  request: AdmissionRequest,
  conflicts?: Pick<ConflictIndex, "warnings" | "olderWeight">,
  lookups: ValidateLookups = {},
): Promise<Verdict> {
  // Deletes and status writes are not this webhook's to judge; cleanup is never blocked.
  if ((request.operation !== "CREATE" && request.operation !== "UPDATE") || request.subResource)
    return { allowed: true };
  const obj = request.object;
  if (!isRecord(obj)) return missingObject(request);
  const version = versionFor(request, obj);
  if (!version) {
    return deny(
      400,
      "BadRequest",
      `request.object.apiVersion must be ${GROUP}/v1 or ${GROUP}/v2, got ${JSON.stringify(obj.apiVersion)}`,
    );
  }
  // A route on its way out may carry a spec that today's rules refuse; letting
  // its finalizers and labels change is what lets it go.
  if (
    request.operation === "UPDATE" &&
    (isTerminating(request.oldObject) || isTerminating(obj)) &&
    isRecord(request.oldObject) &&
    jsonEqual(withoutMetadata(request.oldObject), withoutMetadata(obj))
  ) {
    return { allowed: true };
  }
  const errors = validateRoute(obj, version);
  if (errors.length === 0 && version === "v1") errors.push(...annotatedSpecErrors(obj));
  if (errors.length > 0) {
    return deny(422, "Invalid", invalidMessage(nameOf(request, obj), errors));
  }
  const tooLarge = sizeErrors(request, obj, version, conflicts);
  if (tooLarge.length > 0) return deny(422, "Invalid", invalidMessage(nameOf(request, obj), tooLarge));
  const namespace = request.namespace ?? namespaceOf(obj);
  const warnings = [...secretWarnings(obj, version, namespace, lookups.tlsSecretExists)];
  if (conflicts) {
    const me = summarize(obj, request.namespace ?? "");
    if (me) warnings.push(...conflicts.warnings(me));
  }
  return warnings.length > 0 ? { allowed: true, warnings } : { allowed: true };
}

/**
 * A valid route too large for what a proxy receives: by itself, or in a host
 * with the older routes there, as the snapshot would find it (translate/model.ts).
 * The words name the host and the sizes, never another tenant's route.
 */
function sizeErrors(
  request: AdmissionRequest,
  obj: Record<string, unknown>,
  version: Version,
  conflicts: Pick<ConflictIndex, "olderWeight"> | undefined,
): FieldError[] {
  let route = obj as unknown as EdgeRouteV2;
  if (version === "v1") {
    const converted = convert(obj as unknown as EdgeRoute, API_VERSION_V2);
    if (!converted.ok) return [];
    route = converted.object as EdgeRouteV2;
  }
  const withNamespace: EdgeRouteV2 = {
    ...route,
    metadata: { ...route.metadata, namespace: request.namespace ?? route.metadata.namespace },
  };
  const bytes = weighRoute(withNamespace);
  if (bytes > LIMITS.maxRouteBytes) return [fieldError("spec", "Too long", tooLargeDetail(bytes))];
  const me = summarize(withNamespace, request.namespace ?? "");
  if (!conflicts || !me) return [];
  for (const host of hostsOf(withNamespace.spec)) {
    const total = conflicts.olderWeight(me, host) + bytes;
    if (total > LIMITS.maxHostBytes)
      return [
        fieldError(
          "spec.hostnames",
          "Forbidden",
          hostFullMessage(host === "*" ? "* (any host)" : host, total),
        ),
      ];
  }
  return [];
}

function namespaceOf(obj: Record<string, unknown>): string {
  return isRecord(obj.metadata) && typeof obj.metadata.namespace === "string" ? obj.metadata.namespace : "";
}

/** The TLS Secret a valid route names, read through v2 (a v1 object carries it in the annotation). */
function tlsSecretOf(obj: Record<string, unknown>, version: Version): string | undefined {
  if (version === "v2") {
    return isRecord(obj.spec) && isRecord(obj.spec.tls) && typeof obj.spec.tls.secretName === "string"
      ? obj.spec.tls.secretName
      : undefined;
  }
  const annotations =
    isRecord(obj.metadata) && isRecord(obj.metadata.annotations) ? obj.metadata.annotations : {};
  if (annotations[V2_SPEC_ANNOTATION] === undefined) return undefined;
  const converted = convert(obj as unknown as EdgeRoute, API_VERSION_V2);
  return converted.ok && converted.object.apiVersion === API_VERSION_V2
    ? converted.object.spec.tls?.secretName
    : undefined;
}

/** A Secret not there yet is no reason to refuse (cert-manager makes it after the route): a warning. */
function secretWarnings(
  obj: Record<string, unknown>,
  version: Version,
  namespace: string,
  exists: TlsSecretExists | undefined,
): string[] {
  if (!exists || namespace === "") return [];
  const name = tlsSecretOf(obj, version);
  if (name === undefined || exists(namespace, name) !== false) return [];
  return [
    `Secret ${namespace}/${name} not found: the route reports ResolvedRefs=False/SecretNotFound until it exists`,
  ];
}

/**
 * A v1 object may carry the whole v2 spec in an annotation (see
 * docs/conversion.md). A v1 client can write a broken one, and every v2 read of
 * the object would then fail: so the v2 object it converts to is checked too,
 * and its errors are reported under the annotation.
 */
function annotatedSpecErrors(obj: Record<string, unknown>): FieldError[] {
  const annotations =
    isRecord(obj.metadata) && isRecord(obj.metadata.annotations) ? obj.metadata.annotations : {};
  if (annotations[V2_SPEC_ANNOTATION] === undefined) return [];
  const converted = convert(obj as unknown as EdgeRoute, API_VERSION_V2);
  if (!converted.ok) return [...converted.errors];
  const where = `metadata.annotations[${V2_SPEC_ANNOTATION}]`;
  return validateRoute(converted.object, "v2").map((e) => ({
    ...e,
    path: where + e.path.replace(/^spec/, ""),
  }));
}

function mutableParts(obj: unknown): object {
  if (!isRecord(obj)) return {};
  const meta = isRecord(obj.metadata) ? obj.metadata : {};
  const metadata: Record<string, unknown> = {};
  if (meta.finalizers !== undefined) metadata.finalizers = meta.finalizers;
  if (meta.annotations !== undefined) metadata.annotations = meta.annotations;
  return { metadata, spec: obj.spec };
}

export function mutateReview(request: AdmissionRequest): Verdict {
  if ((request.operation !== "CREATE" && request.operation !== "UPDATE") || request.subResource)
    return { allowed: true };
  const obj = request.object;
  if (!isRecord(obj)) return missingObject(request);
  const mutated = mutateRoute(obj, request.operation, request.oldObject);
  // mutateRoute changes only the finalizers, annotations and the spec: diff just those, not
  // managedFields and the last-applied annotation (most of a review's bytes).
  // The property test in mutate.test.ts checks that the patch still gives
  // mutateRoute's whole output.
  const patch = compare(mutableParts(obj), mutableParts(mutated));
  return patch.length > 0 ? { allowed: true, patch } : { allowed: true };
}
