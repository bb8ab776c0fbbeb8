// Field errors in the shape Kubernetes API machinery prints them:
// `spec.rules[0].backends[1].port: Invalid value: 70000: must be between 1 and 65535`.

export type FieldErrorType =
  | "Required value"
  | "Invalid value"
  | "Unsupported value"
  | "Duplicate value"
  | "Too many"
  | "Too long"
  | "Forbidden";

export interface FieldError {
  readonly path: string;
  readonly type: FieldErrorType;
  /** The offending value, when there is one to show. */
  readonly value?: unknown;
  readonly detail: string;
}

/** Builds field paths: `fieldPath("spec").child("rules").index(0).child("port")`. */
export class FieldPath {
  private constructor(private readonly text: string) {}

  static root(name: string): FieldPath {
    return new FieldPath(name);
  }

  child(name: string): FieldPath {
    return new FieldPath(this.text === "" ? name : `${this.text}.${name}`);
  }

  index(i: number): FieldPath {
    return new FieldPath(`${this.text}[${i}]`);
  }

  toString(): string {
    return this.text;
  }
}

export function fieldError(
  path: FieldPath | string,
  type: FieldErrorType,
  detail: string,
  value?: unknown,
): FieldError {
  return value === undefined
    ? { path: String(path), type, detail }
    : { path: String(path), type, value, detail };
}

function showValue(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "number" || typeof value === "boolean" || value === null) return String(value);
  const json = JSON.stringify(value);
  return json.length > 80 ? `${json.slice(0, 77)}...` : json;
}

export function formatFieldError(e: FieldError): string {
  const value = e.value === undefined || e.type === "Required value" ? "" : `${showValue(e.value)}: `;
  return `${e.path}: ${e.type}: ${value}${e.detail}`;
}

/** Converts a JSON Pointer (`/spec/rules/0/port`) from ajv into a field path (`spec.rules[0].port`). */
export function pointerToPath(pointer: string, root = ""): string {
  let out = root;
  for (const raw of pointer.split("/").slice(1)) {
    const seg = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    if (/^\d+$/.test(seg)) out += `[${seg}]`;
    else out = out === "" ? seg : `${out}.${seg}`;
  }
  return out;
}
