// Reading the whole v2 spec back from the annotation a v1 object carries.
// Unlike the object's own spec, the annotation is free text that any v1 client
// can write, so it is checked against the full v2 schema before it is trusted.

import { Ajv, type ErrorObject } from "ajv";
import { fieldError, pointerToPath, type FieldError, type FieldErrorType } from "../api/field-error.js";
import { specV2Schema } from "../api/schema.js";
import { V2_SPEC_ANNOTATION, type EdgeRouteSpecV2 } from "../api/types.js";

export const ANNOTATION_PATH = `metadata.annotations[${V2_SPEC_ANNOTATION}]`;

// strict: false lets ajv pass over the CRD-only keywords (x-kubernetes-*).
const ajv = new Ajv({ allErrors: true, verbose: true, strict: false });
const validateSpecV2 = ajv.compile<EdgeRouteSpecV2>(specV2Schema);

const TYPES: Record<string, FieldErrorType> = {
  required: "Required value",
  enum: "Unsupported value",
  maxItems: "Too many",
  maxLength: "Too long",
};

function toFieldError(e: ErrorObject): FieldError {
  const fieldPath = pointerToPath(e.instancePath, ANNOTATION_PATH);
  if (e.keyword === "required") {
    const missing = (e.params as { missingProperty: string }).missingProperty;
    return fieldError(`${fieldPath}.${missing}`, "Required value", "must be set in the annotated v2 spec");
  }
  return fieldError(fieldPath, TYPES[e.keyword] ?? "Invalid value", e.message ?? "is not valid", e.data);
}

export type AnnotatedSpec = { ok: true; spec: EdgeRouteSpecV2 } | { ok: false; errors: FieldError[] };

export function readV2SpecAnnotation(text: string): AnnotatedSpec {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    const detail = `must be the v2 spec as JSON: ${(err as Error).message}`;
    return { ok: false, errors: [fieldError(ANNOTATION_PATH, "Invalid value", detail, text)] };
  }
  if (validateSpecV2(parsed)) return { ok: true, spec: parsed };
  const errors = (validateSpecV2.errors ?? []).map(toFieldError);
  if (errors.length === 0)
    errors.push(fieldError(ANNOTATION_PATH, "Invalid value", "is not a valid v2 spec"));
  return { ok: false, errors };
}
