// The least a conversion webhook between EdgeRoute's two shapes must do, for
// the benches' floors (write-path.bench.ts FLOOR_CONVERSION=fields,
// webhook-cpu.bench.ts): the fields the benches' objects use, mapped unchecked.

interface FloorObject {
  apiVersion: string;
  spec?: {
    host?: string;
    pathPrefix?: string;
    service?: string;
    port?: number;
    hostnames?: string[];
    rules?: {
      matches?: { path?: { type?: string; value?: string } }[];
      backends?: { name?: string; port?: number; weight?: number }[];
    }[];
  };
}

/**
 * The least a conversion between the two shapes must do (FLOOR_CONVERSION=fields):
 * v1's four fields onto v2's one rule and back, unchecked, as a CRD author's
 * first webhook would. The bench's objects use nothing else.
 */
function mapFields(o: FloorObject, to: string): FloorObject {
  const s = o.spec ?? {};
  if (to.endsWith("/v2")) {
    if (s.rules !== undefined) return { ...o, apiVersion: to };
    return {
      ...o,
      apiVersion: to,
      spec: {
        ...(s.host !== undefined ? { hostnames: [s.host] } : {}),
        rules: [
          {
            matches: [{ path: { type: "PathPrefix", value: s.pathPrefix ?? "/" } }],
            backends: [{ name: s.service ?? "", port: s.port ?? 0, weight: 1 }],
          },
        ],
      },
    };
  }
  if (s.rules === undefined) return { ...o, apiVersion: to };
  const rule = s.rules[0];
  const backend = rule?.backends?.[0];
  return {
    ...o,
    apiVersion: to,
    spec: {
      ...(s.hostnames?.[0] !== undefined ? { host: s.hostnames[0] } : {}),
      pathPrefix: rule?.matches?.[0]?.path?.value ?? "/",
      service: backend?.name ?? "",
      port: backend?.port ?? 0,
    },
  };
}

/** What the floors' no-op webhooks read of a review: the uid, and for a ConversionReview the objects. */
interface NoopReview {
  apiVersion: string;
  kind: string;
  request: { uid: string; desiredAPIVersion?: string; objects?: FloorObject[] };
}

/**
 * The no-op webhooks' answer to a review's JSON: an AdmissionReview allowed at
 * once, a ConversionReview with each object at the desired version, its fields
 * mapped (`fields`) or only its apiVersion rewritten (`apiVersion`).
 */
export function noopAnswer(text: string, conversion: "fields" | "apiVersion"): string {
  // A webhook must at least read the uid to answer.
  const review = JSON.parse(text) as NoopReview;
  const { uid, desiredAPIVersion = "", objects = [] } = review.request;
  return JSON.stringify(
    review.kind === "ConversionReview"
      ? {
          apiVersion: review.apiVersion,
          kind: "ConversionReview",
          response: {
            uid,
            result: { status: "Success" },
            convertedObjects: objects.map((o) =>
              conversion === "fields"
                ? mapFields(o, desiredAPIVersion)
                : { ...o, apiVersion: desiredAPIVersion },
            ),
          },
        }
      : { apiVersion: review.apiVersion, kind: "AdmissionReview", response: { uid, allowed: true } },
  );
}
