// The CustomResourceDefinition for EdgeRoute, built from the schemas in
// schema.ts. The chart's template is generated from the same function
// (scripts/gen.ts); the conversion webhook's fixed parts come from
// webhook-registration.ts, so the two cannot drift.

import { CRD_NAME, GROUP, KIND, PLURAL, SHORT_NAMES, SINGULAR, type Version } from "./types.js";
import { objectSchema, type Schema } from "./schema.js";
import { CONVERSION_WEBHOOK } from "./webhook-registration.js";

export interface PrinterColumn {
  name: string;
  type: "string" | "integer" | "date";
  jsonPath: string;
  description?: string;
  priority?: number;
}

const condition = (type: string) => `.status.conditions[?(@.type=="${type}")].status`;

export const printerColumns: Record<Version, PrinterColumn[]> = {
  v1: [
    { name: "Hosts", type: "string", jsonPath: ".spec.host" },
    { name: "Path", type: "string", jsonPath: ".spec.pathPrefix" },
    { name: "Backend", type: "string", jsonPath: ".spec.service" },
    { name: "Accepted", type: "string", jsonPath: condition("Accepted") },
    { name: "Programmed", type: "string", jsonPath: condition("Programmed") },
    { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
  ],
  v2: [
    { name: "Hosts", type: "string", jsonPath: ".spec.hostnames" },
    { name: "Path", type: "string", jsonPath: ".spec.rules[0].matches[0].path.value" },
    { name: "Backend", type: "string", jsonPath: ".spec.rules[0].backends[0].name" },
    // v1 cannot say TLS (it travels in the v2-spec annotation), so only v2 shows it.
    {
      name: "TLS",
      type: "string",
      jsonPath: ".spec.tls.secretName",
      description: "The Secret whose certificate serves the route's HTTPS hosts",
    },
    { name: "Accepted", type: "string", jsonPath: condition("Accepted") },
    { name: "Programmed", type: "string", jsonPath: condition("Programmed") },
    { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
  ],
};

export type ConversionClient =
  | { url: string; caBundle?: string }
  | { service: { name: string; namespace: string; path: string; port?: number }; caBundle?: string };

export interface CrdOptions {
  storageVersion?: Version;
  /** Versions served; both by default. The storage version must be served. */
  served?: readonly Version[];
  /** Versions marked deprecated, with the warning the apiserver returns to clients. */
  deprecated?: Partial<Record<Version, string>>;
  /** Where the apiserver sends ConversionReviews; without it the CRD has no conversion webhook. */
  conversion?: ConversionClient;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export interface CrdVersion {
  name: Version;
  served: boolean;
  storage: boolean;
  deprecated?: boolean;
  deprecationWarning?: string;
  schema: { openAPIV3Schema: Schema };
  subresources: { status: Record<string, never> };
  additionalPrinterColumns: PrinterColumn[];
}

export interface CustomResourceDefinition {
  apiVersion: "apiextensions.k8s.io/v1";
  kind: "CustomResourceDefinition";
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: {
    group: string;
    scope: "Namespaced";
    names: {
      plural: string;
      singular: string;
      kind: string;
      listKind: string;
      shortNames: string[];
      categories: string[];
    };
    versions: CrdVersion[];
    conversion?: {
      strategy: "Webhook";
      webhook: { conversionReviewVersions: string[]; clientConfig: Record<string, unknown> };
    };
  };
}

export function crdVersion(name: Version, opts: CrdOptions = {}): CrdVersion {
  const storage = (opts.storageVersion ?? "v1") === name;
  const served = storage || (opts.served ?? ["v1", "v2"]).includes(name);
  const warning = opts.deprecated?.[name];
  return {
    name,
    served,
    storage,
    ...(warning !== undefined ? { deprecated: true, deprecationWarning: warning } : {}),
    schema: { openAPIV3Schema: objectSchema(name) },
    subresources: { status: {} },
    additionalPrinterColumns: printerColumns[name],
  };
}

export function buildCrd(opts: CrdOptions = {}): CustomResourceDefinition {
  const metadata: CustomResourceDefinition["metadata"] = { name: CRD_NAME };
  if (opts.labels) metadata.labels = opts.labels;
  if (opts.annotations) metadata.annotations = opts.annotations;
  const crd: CustomResourceDefinition = {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata,
    spec: {
      group: GROUP,
      scope: "Namespaced",
      names: {
        plural: PLURAL,
        singular: SINGULAR,
        kind: KIND,
        listKind: `${KIND}List`,
        shortNames: [...SHORT_NAMES],
        categories: ["edge"],
      },
      versions: [crdVersion("v1", opts), crdVersion("v2", opts)],
    },
  };
  if (opts.conversion) {
    const { caBundle, ...where } = opts.conversion;
    crd.spec.conversion = {
      strategy: CONVERSION_WEBHOOK.strategy,
      webhook: {
        conversionReviewVersions: [...CONVERSION_WEBHOOK.conversionReviewVersions],
        clientConfig: { ...where, ...(caBundle ? { caBundle } : {}) },
      },
    };
  }
  return crd;
}
