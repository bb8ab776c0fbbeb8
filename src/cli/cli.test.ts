// The command line as a person meets it, every command the same way: --help
// whatever the log settings, one exit-code scheme (0 ok, 1 failed, 2 usage),
// one-line reasons for bad flags and missing files, never a stack.

import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createCa, issueCertificate } from "../certs/pki.js";
import { main } from "./cli.js";

const COMMANDS = ["serve", "watch", "status", "certs", "finalizer", "migrate", "version"];
/** The commands that talk to a cluster: they take --kubeconfig and --context. */
const CLUSTER_COMMANDS = ["serve", "watch", "status", "finalizer", "migrate"];

let out: string;
let err: string;
beforeEach(() => {
  out = "";
  err = "";
  vi.spyOn(process.stdout, "write").mockImplementation((s) => ((out += String(s)), true));
  vi.spyOn(process.stderr, "write").mockImplementation((s) => ((err += String(s)), true));
  // no cluster reachable by default: no kubeconfig anywhere, not in a pod
  vi.stubEnv("KUBECONFIG", "");
  vi.stubEnv("HOME", "/nonexistent-home");
  vi.stubEnv("KUBERNETES_SERVICE_HOST", "");
});
afterEach(() => {
  vi.restoreAllMocks();
  vi.unstubAllEnvs();
});

/** `edge-operator ARGS`: the exit status, and what it wrote. */
async function run(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const code = await main(args);
  return { code, out, err };
}

describe("--help", () => {
  it.each(COMMANDS)("%s --help prints its help and exits 0, even with LOG_LEVEL=verbose", async (name) => {
    vi.stubEnv("LOG_LEVEL", "verbose");
    const r = await run(name, "--help");
    expect(r).toMatchObject({ code: 0, err: "" });
    expect(r.out).toMatch(/^Usage: edge-operator /);
    // the same footer everywhere: global flags, environment, exit status
    for (const text of ["--log-level LEVEL", "--log-format FMT", "Environment:", "LOG_LEVEL", "LOG_FORMAT"])
      expect(r.out).toContain(text);
    expect(r.out).toMatch(/Exit status:\n {2}0 {2}done\n {2}1 {2}failed: .*\n {2}2 {2}usage: /);
  });

  it.each(CLUSTER_COMMANDS)("%s --help names --kubeconfig, --context and what they read", async (name) => {
    const { out: help } = await run(name, "--help");
    for (const text of ["--kubeconfig FILE", "--context NAME", "~/.kube/config", "KUBECONFIG", "HOME"])
      expect(help).toContain(text);
    expect(help).toContain("KUBERNETES_SERVICE_HOST");
  });

  it("the top-level help lists every command and the exit status", async () => {
    const r = await run("--help");
    expect(r.code).toBe(0);
    for (const name of COMMANDS) expect(r.out).toMatch(new RegExp(`^  ${name} `, "m"));
    expect(r.out).toContain("Exit status:");
  });

  it("every environment variable the product reads is in the help of a command", async () => {
    const src = path.join(path.dirname(fileURLToPath(import.meta.url)), "..");
    const names = new Set<string>();
    const files = readdirSync(src, { recursive: true, encoding: "utf8" }).filter(
      (f) => f.endsWith(".ts") && !f.endsWith(".test.ts"),
    );
    for (const f of files) {
      const text = readFileSync(path.join(src, f), "utf8");
      for (const m of text.matchAll(/\benv(?:\.|\[")([A-Z][A-Z0-9_]+)/g)) names.add(m[1] ?? "");
      // names held in constants: `export const X_ENV = "NAME"`
      for (const m of text.matchAll(/_ENV = "([A-Z][A-Z0-9_]+)"/g)) names.add(m[1] ?? "");
    }
    expect(names.size).toBeGreaterThan(8);
    let helps = "";
    for (const name of COMMANDS) helps += (await run(name, "--help")).out;
    const missing = [...names].filter((n) => !new RegExp(`^ {2}${n} `, "m").test(helps));
    expect(missing).toEqual([]);
  });
});

describe("exit status", () => {
  it.each(COMMANDS)("%s: an unknown flag is a usage error, exit 2, in one line", async (name) => {
    const args = name === "finalizer" ? ["finalizer", "release", "--bogus"] : [name, "--bogus"];
    const r = await run(...args);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(new RegExp(`^edge-operator ${name}: Unknown option '--bogus'.*\\n$`));
  });

  it.each([
    ["a missing flag value", ["status", "--output"]],
    ["a bad choice", ["status", "-o", "wide"]],
    ["a bad address", ["serve", "--listen", "nowhere", "--tls-cert", "c", "--tls-key", "k"]],
    ["a bad address of another flag", ["serve", "--xds-listen", "x", "--tls-cert", "c", "--tls-key", "k"]],
    ["a bad duration", ["watch", "--reconcile-url", "https://x", "--resync", "soon"]],
    ["a bad number", ["migrate", "--page-size", "0"]],
    ["a missing argument", ["finalizer", "release", "--reason", "gone"]],
    ["an unknown command", ["serv"]],
    ["a bad --log-level", ["status", "--log-level", "verbose"]],
    ["a bad --log-format", ["certs", "--dns", "x", "--log-format=pretty"]],
  ])("%s is exit 2 with one line", async (_what, args) => {
    const r = await run(...args);
    expect(r.code).toBe(2);
    expect(r.err.split("\n")).toHaveLength(2);
    expect(r.err).not.toMatch(/\n\s+at /);
  });

  it.each(["serve", "watch", "status", "migrate"])(
    "%s with LOG_LEVEL=verbose says so in one line and exits 2",
    async (name) => {
      vi.stubEnv("LOG_LEVEL", "verbose");
      const r = await run(name);
      expect(r.code).toBe(2);
      expect(r.err).toBe(
        'edge-operator: LOG_LEVEL: must be one of trace, debug, info, warn, error, fatal, silent, got "verbose"\n',
      );
    },
  );

  it.each([
    [
      ["serve", "--tls-cert", "/nope/tls.crt", "--tls-key", "/nope/tls.key"],
      "--tls-cert /nope/tls.crt: no such file",
    ],
    [["status", "--kubeconfig", "/nope/config"], "kubeconfig /nope/config: no such file"],
    [["migrate", "--kubeconfig", "/nope/config"], "kubeconfig /nope/config: no such file"],
    [
      ["finalizer", "release", "a/b", "--reason", "x", "--kubeconfig", "/nope/config"],
      "kubeconfig /nope/config: no such file",
    ],
    [
      ["watch", "--reconcile-url", "https://x", "--kubeconfig", "/nope/config"],
      "kubeconfig /nope/config: no such file",
    ],
  ])("a missing file: %j is one line naming it, exit 2", async (args, reason) => {
    const r = await run(...args);
    expect(r.code).toBe(2);
    expect(r.err).toBe(`edge-operator ${args[0]}: ${reason}\n`);
    expect(r.err).not.toContain("ENOENT");
  });

  it("a certificate or key that cannot be used is named before anything starts", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "cli-test-"));
    try {
      const ca = createCa();
      const pair = issueCertificate(ca, { commonName: "x", dnsNames: ["x"], usage: "server" });
      const file = (name: string, text: string) => (
        writeFileSync(path.join(dir, name), text),
        path.join(dir, name)
      );
      const cert = file("tls.crt", pair.cert);
      const other = file("other.key", ca.key);
      const junk = file("junk.pem", "not PEM\n");
      const serve = (c: string, k: string) =>
        run("serve", "--listen", "127.0.0.1:0", "--tls-cert", c, "--tls-key", k);
      expect(await serve(junk, other)).toMatchObject({
        code: 2,
        err: `edge-operator serve: --tls-cert ${junk}: not a PEM certificate\n`,
      });
      err = "";
      expect(await serve(cert, other)).toMatchObject({
        code: 2,
        err: `edge-operator serve: --tls-key ${other}: not the private key of --tls-cert ${cert}\n`,
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("no cluster to talk to is a usage error that says where to give one", async () => {
    const r = await run("status");
    expect(r.code).toBe(2);
    expect(r.err).toMatch(
      /^edge-operator status: no cluster access: pass --kubeconfig, set KUBECONFIG, write ~\/.kube\/config/,
    );
  });

  it("global flags may stand anywhere, as kubectl's do", async () => {
    expect((await run("--log-level", "debug", "version")).code).toBe(0);
    expect((await run("version", "--log-format=text")).code).toBe(0);
  });
});

describe("version", () => {
  it("--version and version print package.json's version and the image's commit", async () => {
    const pkg = JSON.parse(
      readFileSync(path.join(path.dirname(fileURLToPath(import.meta.url)), "../../package.json"), "utf8"),
    ) as { version: string };
    vi.stubEnv("EDGE_OPERATOR_COMMIT", "");
    expect((await run("--version")).out).toBe(`edge-operator ${pkg.version} (commit unknown)\n`);
    out = "";
    vi.stubEnv("EDGE_OPERATOR_COMMIT", "3f2a9c1d0e");
    expect((await run("version")).out).toBe(`edge-operator ${pkg.version} (commit 3f2a9c1d0e)\n`);
    out = "";
    expect(JSON.parse((await run("version", "-o", "json")).out)).toEqual({
      version: pkg.version,
      commit: "3f2a9c1d0e",
    });
  });

  it("a commit that is not a git id is not believed", async () => {
    vi.stubEnv("EDGE_OPERATOR_COMMIT", "$(git rev-parse HEAD)");
    expect((await run("--version")).out).toMatch(/\(commit unknown\)\n$/);
  });
});
