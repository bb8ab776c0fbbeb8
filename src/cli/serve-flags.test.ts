import { describe, expect, it } from "vitest";
import { parseServeArgs } from "./serve.js";

const FILES = ["--tls-cert", "c.pem", "--tls-key", "k.pem"];

function parse(args: string[]) {
  const o = parseServeArgs([...FILES, ...args]);
  if (o === "help") throw new Error("help");
  return o;
}

describe("serve's data-plane flags", () => {
  it("leave the debug routes off unless asked for", () => {
    expect(parse([]).debugRoutes).toBe(false);
    expect(parse(["--debug-routes"]).debugRoutes).toBe(true);
  });

  it("space the serve loop's builds 100 ms apart, 1 s while admission is busy, unless told otherwise", () => {
    expect(parse([])).toMatchObject({ xdsPushIntervalMs: 100, xdsBusyPushIntervalMs: 1000 });
    expect(parse(["--xds-push-interval", "0", "--xds-busy-push-interval", "500ms"])).toMatchObject({
      xdsPushIntervalMs: 0,
      xdsBusyPushIntervalMs: 500,
    });
    expect(() => parse(["--xds-busy-push-interval", "soon"])).toThrow("--xds-busy-push-interval");
  });

  it("take a plaintext ADS port and a client CA beside the TLS port, for the xds sink", () => {
    const o = parse([
      "--dataplane",
      "xds",
      "--xds-listen",
      "0.0.0.0:18000",
      "--xds-plaintext-listen",
      "0.0.0.0:18001",
      "--xds-client-ca",
      "proxies.pem",
    ]);
    expect(o).toMatchObject({
      xdsListen: "0.0.0.0:18000",
      xdsPlaintext: false,
      xdsPlaintextListen: "0.0.0.0:18001",
      xdsClientCaFile: "proxies.pem",
    });
  });

  it("take the xds sink's TLS from a managed Secret too (it is reloaded with it)", () => {
    const o = parseServeArgs(["--cert-secret", "edge-system/edge-tls", "--dataplane", "xds"]);
    expect(o).toMatchObject({ dataPlane: "xds", xdsPlaintext: false });
  });

  it("require client certificates on the TLS ADS port whenever a client CA is known", () => {
    const managed = ["--cert-secret", "edge-system/edge-tls", "--dataplane", "xds"];
    // The operator's own CA (--cert-secret), or a file.
    expect(parseServeArgs(managed)).toMatchObject({ xdsClientAuth: "required" });
    expect(parse(["--dataplane", "xds", "--xds-client-ca", "p.pem"])).toMatchObject({
      xdsClientAuth: "required",
    });
    // No CA known (key pair files only), asked not to, or no TLS at all.
    expect(parse(["--dataplane", "xds"])).toMatchObject({ xdsClientAuth: "none" });
    expect(parseServeArgs([...managed, "--xds-client-auth", "none"])).toMatchObject({
      xdsClientAuth: "none",
    });
    expect(parseServeArgs([...managed, "--xds-plaintext"])).toMatchObject({ xdsClientAuth: "none" });
    // The proxies' pair lives beside the serving Secret, in its namespace.
    expect(parseServeArgs([...managed, "--xds-client-cert-secret", "edge-envoy-ads-client"])).toMatchObject({
      certs: { client: { secret: { namespace: "edge-system", name: "edge-envoy-ads-client" } } },
    });
  });

  it.each([
    [["--xds-plaintext-listen", "0.0.0.0:18001"], "--xds-plaintext-listen needs --dataplane xds"],
    [["--dataplane", "memory", "--xds-client-ca", "ca.pem"], "--xds-client-ca needs --dataplane xds"],
    [
      ["--dataplane", "xds", "--xds-plaintext", "--xds-client-ca", "ca.pem"],
      "--xds-client-ca needs TLS on the ADS port: drop --xds-plaintext",
    ],
    [["--dataplane", "xds", "--xds-client-auth", "required"], "--xds-client-auth=required needs a client CA"],
    [
      ["--dataplane", "xds", "--xds-client-auth", "maybe"],
      '--xds-client-auth must be required or none, got "maybe"',
    ],
    [
      ["--dataplane", "xds", "--xds-client-cert-secret", "envoy"],
      "--xds-client-cert-secret needs --cert-secret: the pair is issued by its CA",
    ],
    [
      ["--dataplane", "xds", "--xds-plaintext-listen", "nowhere"],
      '--xds-plaintext-listen must be HOST:PORT, got "nowhere"',
    ],
  ])("refuse %j with a clear reason", (args, message) => {
    expect(() => parse(args)).toThrow(message);
  });
});

describe("serve's --tls-expiry-warning", () => {
  it("defaults to 14 days, takes a duration and refuses anything else", () => {
    expect(parse([]).tlsExpiryWarningMs).toBe(14 * 24 * 3_600_000);
    expect(parse(["--tls-expiry-warning", "720h"]).tlsExpiryWarningMs).toBe(30 * 24 * 3_600_000);
    expect(() => parse(["--tls-expiry-warning", "2 weeks"])).toThrow(
      /--tls-expiry-warning: must be a duration/,
    );
  });
});
