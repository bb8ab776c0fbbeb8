// The one test for "a JSON object" (not null, not an array), for input that
// arrived over the wire and is trusted in no detail.

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
