// Equality of JSON values as the apiserver sees them: key order does not matter,
// and a property whose value is undefined is the same as an absent one (it is
// never serialized).

export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  let count = 0;
  for (const k in x) {
    if (x[k] === undefined) continue;
    count++;
    if (!jsonEqual(x[k], y[k])) return false;
  }
  for (const k in y) if (y[k] !== undefined) count--;
  return count === 0;
}
