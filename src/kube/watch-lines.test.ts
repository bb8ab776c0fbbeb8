import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { utf8Lines } from "./watch-lines.js";

async function collect(chunks: Buffer[]): Promise<string[]> {
  const out: string[] = [];
  for await (const l of utf8Lines(
    (async function* () {
      yield* chunks;
    })(),
  ))
    out.push(l);
  return out;
}

describe("utf8Lines", () => {
  it("keeps a multi-byte character split between chunks whole (not U+FFFD)", async () => {
    const bytes = Buffer.from('{"name":"café 😀"}\n');
    for (let cut = 1; cut < bytes.length; cut++) {
      const lines = await collect([bytes.subarray(0, cut), bytes.subarray(cut)]);
      expect(lines, `cut at byte ${cut}`).toEqual(['{"name":"café 😀"}']);
    }
    // What decoding each chunk alone gave before: the character lost.
    const cut = bytes.indexOf(Buffer.from("😀")) + 1;
    expect(bytes.subarray(0, cut).toString("utf8") + bytes.subarray(cut).toString("utf8")).toContain(
      "\uFFFD",
    );
  });

  it("gives back the lines of any text, however its bytes are cut", async () => {
    const line = fc
      .string({ unit: "grapheme", maxLength: 20 })
      .map((s) => s.replace(/\n/g, " ").trim())
      .filter((s) => s !== "");
    await fc.assert(
      fc.asyncProperty(
        fc.array(line, { maxLength: 8 }),
        fc.array(fc.nat(), { maxLength: 10 }),
        async (lines, cuts) => {
          const bytes = Buffer.from(lines.map((l) => `${l}\n`).join(""));
          const at = [...new Set(cuts.map((c) => (bytes.length ? c % bytes.length : 0)))].sort(
            (a, b) => a - b,
          );
          const chunks: Buffer[] = [];
          let from = 0;
          for (const c of at) {
            chunks.push(bytes.subarray(from, c));
            from = c;
          }
          chunks.push(bytes.subarray(from));
          expect(await collect(chunks)).toEqual(lines);
        },
      ),
    );
  });

  it("drops a last line that the stream cut short", async () => {
    expect(await collect([Buffer.from('{"a":1}\n{"b":')])).toEqual(['{"a":1}']);
  });
});
