// A watch stream is one JSON document a line. Chunks of it split anywhere,
// also inside a multi-byte UTF-8 character: each chunk decoded on its own
// turns such a character into U+FFFD twice. The decoder keeps the bytes of
// a character that has not ended until the next chunk brings the rest.

import { StringDecoder } from "node:string_decoder";

/**
 * The non-empty lines of a byte stream, decoded as UTF-8 across chunk
 * boundaries. What follows the last newline when the stream ends is a document
 * cut short (the apiserver ends every event with one): it is dropped.
 */
export async function* utf8Lines(
  chunks: AsyncIterable<Buffer | Uint8Array | string>,
): AsyncGenerator<string> {
  const decoder = new StringDecoder("utf8");
  let buf = "";
  for await (const chunk of chunks) {
    buf +=
      typeof chunk === "string"
        ? chunk
        : decoder.write(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    let start = 0;
    for (let nl = buf.indexOf("\n", start); nl >= 0; nl = buf.indexOf("\n", start)) {
      const line = buf.slice(start, nl).trim();
      start = nl + 1;
      if (line) yield line;
    }
    buf = buf.slice(start);
  }
}
