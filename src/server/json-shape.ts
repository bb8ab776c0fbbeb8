// A byte-at-a-time look at a JSON text as it arrives, before JSON.parse sees it:
// how deep it nests, and how much heap parsing it may take. JSON.parse cannot
// be stopped half way, so a body that would nest past the limit or outgrow the
// server's heap has to be refused from its bytes.
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
 * Heap bytes, measured on Node 20 with forced GC (json-shape.test.ts checks
 * them against the shapes below):
 * - the text twice: JSON.parse holds the whole string while it builds values
 *   whose strings add up to about as much;
 * - a container (object or array) costs about 64 bytes whatever it holds, so
 *   one whose text is shorter than that is charged the difference: `[{},{},...]`
 *   is about 21 times its text, a real route object about its text;
 * - an array element (a comma in an array) 32: a slot, and a boxed number or
 *   a short string;
 * - a member with a key not seen before in the body 96 (a new hidden class or
 *   a dictionary entry, and the key string) 112; with a key seen before 16.
 * Real ConversionReviews (keys repeat, objects are long) cost about half the
 * estimate; the costliest shapes an attacker can pick cost at most about it.
 */
export const TEXT_COPIES = 2;
export const CONTAINER_FLOOR = 64;
export const HEAP_PER_ELEMENT = 32;
export const HEAP_PER_NEW_KEY = 112;
export const HEAP_PER_SEEN_KEY = 16;
/** Keys remembered per body; past this every key counts as new, which only errs high. */
const MAX_KEYS_REMEMBERED = 65_536;
/** Longer keys are not remembered (they count as new). */
const MAX_KEY_BYTES = 64;
/**
 * Keys in a body's first bytes all count as new, so a webhook's everyday
 * body (an AdmissionReview of a few KB) makes no string per key: that was
 * most of the scan's cost. It errs high by at most 96 bytes a key, about 1 MiB
 * for the most key-dense 64 KiB; past it, repeated keys are recognised, which
 * keeps a long ConversionReview's estimate near its cost.
 */
export const KEYS_REMEMBERED_FROM = 64 * 1024;

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
  private containerCost = 0;
  private elements = 0;
  private newKeys = 0;
  private seenKeys = 0;
  /** Offset (in the whole body) where each open container began. */
  private readonly opened: number[] = [];
  /** For each open container, whether it is an array (its commas are elements; an object's are not). */
  private readonly isArray: boolean[] = [];
  /** Offset where the last string began, and whether it lay within one chunk (so it can be read back). */
  private stringStart = -1;
  private lastString: string | undefined;
  private readonly keys = new Set<string>();

  constructor(private readonly maxDepth: number) {}

  /** Reads the next piece of the text; throws JsonDepthError as soon as it nests too deep. */
  push(chunk: Buffer): void {
    const base = this.bytes;
    const n = chunk.length;
    const remember = base + n > KEYS_REMEMBERED_FROM;
    let { depth, inString, escaped } = this;
    const max = this.maxDepth;
    let i = 0;
    while (i < n) {
      if (inString) {
        // To the string's closing quote, stepping over each escaped byte.
        if (escaped) {
          escaped = false;
          i++;
        }
        for (; i < n; i++) {
          const c = chunk[i] as number;
          if (c === BACKSLASH) {
            if (++i === n) {
              escaped = true;
              break;
            }
          } else if (c === QUOTE) break;
        }
        if (i >= n) break;
        inString = false;
        if (remember) {
          // A key is a string followed by a colon: keep its text while it is short and in this chunk.
          const start = this.stringStart - base;
          this.lastString =
            start >= 0 && i - start <= MAX_KEY_BYTES ? chunk.toString("latin1", start, i) : undefined;
        }
        i++;
        continue;
      }
      const c = chunk[i] as number;
      switch (c) {
        case QUOTE:
          inString = true;
          this.stringStart = base + i + 1;
          break;
        case OPEN_BRACE:
        case OPEN_BRACKET:
          if (++depth > max) {
            this.depth = depth;
            throw new JsonDepthError(max);
          }
          this.opened.push(base + i);
          this.isArray.push(c === OPEN_BRACKET);
          break;
        case CLOSE_BRACE:
        case CLOSE_BRACKET: {
          depth--;
          this.isArray.pop();
          const start = this.opened.pop();
          if (start !== undefined)
            this.containerCost += Math.max(0, CONTAINER_FLOOR - (base + i + 1 - start));
          break;
        }
        case COMMA:
          // Between an object's members the colon counts; between an array's elements, this.
          if (this.isArray[this.isArray.length - 1]) this.elements++;
          break;
        case COLON:
          if (remember) this.countKey();
          else this.newKeys++;
          break;
      }
      i++;
    }
    this.depth = depth;
    this.inString = inString;
    this.escaped = escaped;
    this.bytes += n;
  }

  private countKey(): void {
    const key = this.lastString;
    this.lastString = undefined;
    if (key !== undefined && this.keys.has(key)) {
      this.seenKeys++;
      return;
    }
    this.newKeys++;
    if (key !== undefined && this.keys.size < MAX_KEYS_REMEMBERED) this.keys.add(key);
  }

  /** Estimated heap to hold the text and its parsed value at once, in bytes. */
  heapEstimate(): number {
    // Containers still open are charged their floor: the body may end right there.
    return (
      this.bytes * TEXT_COPIES +
      this.containerCost +
      this.opened.length * CONTAINER_FLOOR +
      this.elements * HEAP_PER_ELEMENT +
      this.newKeys * HEAP_PER_NEW_KEY +
      this.seenKeys * HEAP_PER_SEEN_KEY
    );
  }
}
