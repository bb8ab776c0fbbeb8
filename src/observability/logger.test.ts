import { describe, expect, it } from "vitest";
import { createLogger } from "./logger.js";

describe("createLogger", () => {
  it("logs an Error under err with its type, message, stack and cause", () => {
    const lines: string[] = [];
    const log = createLogger({ level: "info", destination: { write: (line: string) => lines.push(line) } });
    const cause = new Error("connection refused");
    log.warn({ err: new TypeError("watch failed", { cause }) }, "informer: watch failed");
    const { err } = JSON.parse(lines[0] ?? "{}") as {
      err?: { type?: string; message?: string; stack?: string };
    };
    expect(err?.type).toBe("TypeError");
    // pino's err serializer folds the cause into both.
    expect(err?.message).toBe("watch failed: connection refused");
    expect(err?.stack).toContain("logger.test.ts");
    expect(err?.stack).toContain("caused by: Error: connection refused");
  });
});
