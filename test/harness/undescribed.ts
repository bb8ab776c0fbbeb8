// Where a JSON Schema leaves a field unexplained: the paths of its property
// and items nodes without a description, as `kubectl explain` names them
// (`spec.rules[].matches[].path.type`). The same walk reads the CRD's schemas
// in src/api and the OpenAPI v3 document the apiserver publishes from them.

import { isRecord } from "../../src/api/is-record.js";

function hasDescription(node: Record<string, unknown>): boolean {
  return typeof node.description === "string" && node.description.trim() !== "";
}

/**
 * Paths (from `at`) of the nodes without a description, the node itself
 * included. A `$ref` (or an allOf of one) is not followed: it points at a
 * Kubernetes type (ObjectMeta) that carries its own.
 */
export function undescribed(schema: unknown, at = ""): string[] {
  if (!isRecord(schema)) return [at];
  const missing = hasDescription(schema) ? [] : [at];
  if (isRecord(schema.properties))
    for (const [name, child] of Object.entries(schema.properties))
      missing.push(...undescribed(child, at === "" ? name : `${at}.${name}`));
  if (schema.items !== undefined) missing.push(...undescribed(schema.items, `${at}[]`));
  return missing;
}

/** Every node of a schema with its path, for checks on what the descriptions say. */
export function* schemaNodes(schema: unknown, at = ""): Generator<[string, Record<string, unknown>]> {
  if (!isRecord(schema)) return;
  yield [at, schema];
  if (isRecord(schema.properties))
    for (const [name, child] of Object.entries(schema.properties))
      yield* schemaNodes(child, at === "" ? name : `${at}.${name}`);
  if (schema.items !== undefined) yield* schemaNodes(schema.items, `${at}[]`);
}
