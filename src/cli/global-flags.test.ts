import { describe, expect, it } from "vitest";
import { asksForHelp, logSettings, takeGlobalFlags } from "./global-flags.js";

describe("takeGlobalFlags", () => {
  it("takes --log-level and --log-format from anywhere, with = or a separate value, up to --", () => {
    expect(takeGlobalFlags(["--log-level", "debug", "serve", "--listen", ":1", "--log-format=text"])).toEqual(
      {
        argv: ["serve", "--listen", ":1"],
        flags: { logLevel: "debug", logFormat: "text" },
      },
    );
    expect(takeGlobalFlags(["certs", "--", "--log-level", "x"]).argv).toEqual([
      "certs",
      "--",
      "--log-level",
      "x",
    ]);
  });

  it("a flag without its value is a usage error", () => {
    expect(() => takeGlobalFlags(["serve", "--log-level"])).toThrow("--log-level: needs a value");
    expect(() => takeGlobalFlags(["serve", "--log-format", "--help"])).toThrow("--log-format: needs a value");
  });
});

describe("logSettings", () => {
  it("the flag beats the environment, which beats the default", () => {
    expect(logSettings({}, {})).toEqual({ level: "info", format: "json" });
    expect(logSettings({}, { LOG_LEVEL: "debug", LOG_FORMAT: "text" })).toEqual({
      level: "debug",
      format: "text",
    });
    expect(
      logSettings({ logLevel: "warn", logFormat: "json" }, { LOG_LEVEL: "debug", LOG_FORMAT: "text" }),
    ).toEqual({
      level: "warn",
      format: "json",
    });
  });

  it("a bad value names where it came from", () => {
    expect(() => logSettings({}, { LOG_LEVEL: "verbose" })).toThrow(
      /^LOG_LEVEL: must be one of trace, debug/,
    );
    expect(() => logSettings({ logLevel: "loud" }, {})).toThrow(/^--log-level: must be one of/);
    expect(() => logSettings({}, { LOG_FORMAT: "pretty" })).toThrow(
      'LOG_FORMAT: must be one of json, text, got "pretty"',
    );
  });
});

describe("asksForHelp", () => {
  it("help and version requests, wherever -h stands", () => {
    for (const argv of [
      [],
      ["help"],
      ["version"],
      ["--version"],
      ["serve", "-h"],
      ["finalizer", "release", "--help"],
    ])
      expect(asksForHelp(argv)).toBe(true);
    expect(asksForHelp(["serve", "--listen", ":1"])).toBe(false);
    expect(asksForHelp(["certs", "--", "--help"])).toBe(false);
  });
});
