// JSON text in pieces, the same text JSON.stringify gives: a large answer (a
// ConversionReview of a whole LIST) is written out piece by piece as the socket
// drains, so it never exists as one string and one Buffer beside the objects
// it was made from.

/** Containers this deep or deeper are serialized whole: the pieces stay few and the cost stays JSON.stringify's. */
const MAX_DEPTH = 3;

function isPlainContainer(v: unknown): v is object {
  // toJSON (a Date, say) decides its own text; let JSON.stringify handle it.
  return (
    typeof v === "object" &&
    v !== null &&
    typeof (v as { toJSON?: unknown }).toJSON !== "function" &&
    (Array.isArray(v) || Object.getPrototypeOf(v) === Object.prototype || Object.getPrototypeOf(v) === null)
  );
}

function* pieces(value: unknown, depth: number): Generator<string> {
  if (depth >= MAX_DEPTH || !isPlainContainer(value)) {
    // undefined, functions and symbols have no JSON text; as array items they are null.
    yield JSON.stringify(value) ?? "null";
    return;
  }
  if (Array.isArray(value)) {
    yield "[";
    for (let i = 0; i < value.length; i++) {
      if (i > 0) yield ",";
      yield* pieces(value[i], depth + 1);
    }
    yield "]";
    return;
  }
  yield "{";
  let first = true;
  for (const [k, v] of Object.entries(value)) {
    if (v === undefined || typeof v === "function" || typeof v === "symbol") continue;
    yield `${first ? "" : ","}${JSON.stringify(k)}:`;
    first = false;
    yield* pieces(v, depth + 1);
  }
  yield "}";
}

/**
 * The JSON text of `value` in chunks of about `chunkChars` characters each
 * (one item of a large array may make a chunk longer). Joined, the chunks are
 * exactly `JSON.stringify(value)` for any value JSON.stringify accepts.
 */
export function* jsonChunks(value: unknown, chunkChars = 64 * 1024): Generator<string> {
  let buf: string[] = [];
  let size = 0;
  for (const p of pieces(value, 0)) {
    buf.push(p);
    size += p.length;
    if (size >= chunkChars) {
      yield buf.join("");
      buf = [];
      size = 0;
    }
  }
  if (size > 0) yield buf.join("");
}
