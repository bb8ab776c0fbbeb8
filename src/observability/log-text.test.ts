import { describe, expect, it } from "vitest";
import { createLogger } from "./logger.js";
import { textLine } from "./log-text.js";

describe("the text log format", () => {
  it("is one line: time, level, message, then the fields as key=value", () => {
    const lines: string[] = [];
    const log = createLogger({
      level: "info",
      format: "text",
      destination: { write: (l: string) => lines.push(l) },
    });
    log.info({ address: "0.0.0.0:9443", routes: 3, note: "two words" }, "serving");
    log.debug("not at info");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z INFO {2}serving address=0.0.0.0:9443 routes=3 note="two words"\n$/,
    );
  });

  it("an error is its type and message, without the stack", () => {
    const lines: string[] = [];
    const log = createLogger({ format: "text", destination: { write: (l: string) => lines.push(l) } });
    log.warn({ err: new TypeError("watch failed") }, "informer");
    expect(lines[0]).toMatch(/ WARN {2}informer err="TypeError: watch failed"\n$/);
    expect(lines[0]?.split("\n")).toHaveLength(2);
  });

  it("a line that is not pino's JSON passes as it is", () => {
    expect(textLine("plain\n")).toBe("plain\n");
  });
});
