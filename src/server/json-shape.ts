// A byte-at-a-time look at a JSON text as it arrives, before JSON.parse sees it:
// how deep it nests, and roughly how much heap parsing it will take. JSON.parse
// cannot be stopped half way, so a body that would nest past the limit or
// outgrow the server's heap has to be refused from its bytes.
//
// The scanner does not validate (JSON.parse does that after); it only follows
// strings (so brackets and separators inside them do not count) and counts.

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;

/**
 * Heap bytes per JSON construct, beyond the text's own bytes (held once as the
 * string JSON.parse reads). Measured on Node 20 with forced GC
 * (BENCHMARKS.md, "Request bodies"): an empty object costs 56-64 bytes with
 * its slot, an array element 8, a property of an object with keys never seen
 * before 74-92 (a dictionary or a new hidden class per object). Real
 * ConversionReviews repeat their keys and cost far less than this estimate
 * (about a third); the shapes an attacker picks cost at most about 1.4x it.
 */
export const HEAP_PER_CONTAINER = 64;
export const HEAP_PER_ELEMENT = 8;
export const HEAP_PER_MEMBER = 48;

export class JsonDepthError extends Error {
  constructor(readonly maxDepth: number) {
    super(`the JSON body nests deeper than ${maxDepth} levels`);
  }
}

export class JsonShapeScanner {
  private depth = 0;
  private inString = false;
  private escaped = false;
  private bytes = 0;
  private containers = 0;
  private elements = 0;
  private members = 0;

  constructor(private readonly maxDepth: number) {}

  /** Reads the next piece of the text; throws JsonDepthError as soon as it nests too deep. */
  push(chunk: Uint8Array): void {
    let { depth, inString, escaped, containers, elements, members } = this;
    const max = this.maxDepth;
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk[i] as number;
      if (inString) {
        if (escaped) escaped = false;
        else if (c === BACKSLASH) escaped = true;
        else if (c === QUOTE) inString = false;
        continue;
      }
      switch (c) {
        case QUOTE:
          inString = true;
          break;
        case OPEN_BRACE:
        case OPEN_BRACKET:
          containers++;
          if (++depth > max) {
            this.depth = depth;
            throw new JsonDepthError(max);
          }
          break;
        case CLOSE_BRACE:
        case CLOSE_BRACKET:
          depth--;
          break;
        case COMMA:
          elements++;
          break;
        case COLON:
          members++;
          break;
      }
    }
    this.depth = depth;
    this.inString = inString;
    this.escaped = escaped;
    this.containers = containers;
    this.elements = elements;
    this.members = members;
    this.bytes += chunk.length;
  }

  /** Estimated heap to hold the text and its parsed value, in bytes. */
  heapEstimate(): number {
    return (
      this.bytes +
      this.containers * HEAP_PER_CONTAINER +
      this.elements * HEAP_PER_ELEMENT +
      this.members * HEAP_PER_MEMBER
    );
  }
}
