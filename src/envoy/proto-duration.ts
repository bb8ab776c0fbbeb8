// Milliseconds as a protobuf Duration in its proto3 JSON form, which is what
// Envoy's JSON config takes for a timeout.

/** 90000 → `90s`, 500 → `0.500s`: proto3 JSON uses 0, 3, 6 or 9 fractional digits. */
export function protoDuration(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  const rest = ms % 1000;
  return rest === 0 ? `${seconds}s` : `${seconds}.${String(rest).padStart(3, "0")}s`;
}
