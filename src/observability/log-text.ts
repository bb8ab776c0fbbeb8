// The text log format: pino's JSON line turned into one line a person reads
// in a terminal, `TIME LEVEL message key=value ...`, without pino-pretty.

const LEVEL_NAMES: Record<number, string> = {
  10: "TRACE",
  20: "DEBUG",
  30: "INFO",
  40: "WARN",
  50: "ERROR",
  60: "FATAL",
};

// What every line carries and the text form says otherwise or leaves out.
const OMIT = new Set(["level", "time", "msg", "pid", "hostname", "name"]);

function value(v: unknown): string {
  if (typeof v === "string") return /^[^\s"=]+$/.test(v) ? v : JSON.stringify(v);
  if (typeof v === "number" || typeof v === "boolean" || v === null) return String(v);
  return JSON.stringify(v);
}

/** `{type, message}` of a serialized Error, as one field: the stack is for the json format. */
function errorText(v: unknown): string {
  if (typeof v !== "object" || v === null) return value(v);
  const e = v as { type?: unknown; message?: unknown };
  const type = typeof e.type === "string" ? e.type : "Error";
  return value(`${type}: ${typeof e.message === "string" ? e.message : ""}`);
}

/** One JSON line from pino → one text line; a line that is not JSON passes unchanged. */
export function textLine(json: string): string {
  let doc: unknown;
  try {
    doc = JSON.parse(json);
  } catch {
    return json;
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) return json;
  const rec = doc as Record<string, unknown>;
  const time = typeof rec.time === "number" ? new Date(rec.time).toISOString() : "";
  const level = typeof rec.level === "number" ? (LEVEL_NAMES[rec.level] ?? String(rec.level)) : "";
  const fields = Object.entries(rec)
    .filter(([k]) => !OMIT.has(k))
    .map(([k, v]) => `${k}=${k === "err" ? errorText(v) : value(v)}`);
  const msg = typeof rec.msg === "string" ? rec.msg : "";
  return `${[time, level.padEnd(5), msg, ...fields].filter((s) => s !== "").join(" ")}\n`;
}
