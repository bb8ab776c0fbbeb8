// The operator's own processes for tests and the demo, started from the build
// in dist/ the way a user runs them: `edge-operator serve` and `edge-operator watch`.

import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import https from "node:https";
import os from "node:os";
import path from "node:path";
import { createCa, issueCertificate } from "../../src/certs/pki.js";
import { freePort, run, supervise, waitFor, type Supervised } from "./process.js";
import { REPO_ROOT } from "./testbin.js";

// EDGE_OPERATOR_CLI: another build (a benchmark comparing an older commit).
export const CLI = process.env.EDGE_OPERATOR_CLI ?? path.join(REPO_ROOT, "dist/src/cli/main.js");

export interface ServeProcess {
  /** https://127.0.0.1:PORT */
  readonly url: string;
  readonly port: number;
  /** The CA that signed the serving certificate, PEM. */
  readonly caPem: string;
  /** The same, base64 of the PEM, as a webhook's caBundle wants it. */
  readonly caBundle: string;
  readonly certFile: string;
  readonly keyFile: string;
  readonly process: Supervised;
  output(): string;
  stop(): Promise<void>;
}

export interface ServeOptions {
  args?: string[];
  /** The entry to run instead of the shipped CLI (a test's, with something injected). */
  cli?: string;
  env?: Record<string, string>;
  /** Reuse this port (to restart a server in place). */
  port?: number;
  /** Reuse this CA and key pair (so registered caBundles stay valid across restarts). */
  tls?: { caPem: string; certFile: string; keyFile: string };
  /** Also append the server's output to this file (or set EDGE_TEST_LOG_DIR). */
  logFile?: string;
}

/**
 * A HOME without a ~/.kube/config for the operator's processes: the commands
 * read it as kubectl does, and a test must reach only the cluster it names,
 * never the one on the developer's laptop.
 */
function emptyHome(): string {
  const home = path.join(os.tmpdir(), "edge-operator-empty-home");
  mkdirSync(home, { recursive: true });
  return home;
}

function assertBuilt(): void {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run 'npm run build' first`);
}

/** GET a path over HTTPS, trusting `caPem`; resolves with the status code, or 0 when it cannot connect. */
export function httpsStatus(url: string, caPem: string): Promise<number> {
  return new Promise((resolve) => {
    const req = https.get(url, { ca: caPem, timeout: 2000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", () => resolve(0));
    req.on("timeout", () => {
      req.destroy();
      resolve(0);
    });
  });
}

export async function startServe(opts: ServeOptions = {}): Promise<ServeProcess> {
  assertBuilt();
  let tls = opts.tls;
  let tmp: string | undefined;
  if (!tls) {
    tmp = mkdtempSync(path.join(os.tmpdir(), "edge-serve-"));
    const ca = createCa({ commonName: "edge-operator-test-ca" });
    const pair = issueCertificate(ca, {
      commonName: "127.0.0.1",
      dnsNames: ["localhost"],
      ips: ["127.0.0.1"],
      usage: "server",
    });
    const certFile = path.join(tmp, "tls.crt");
    const keyFile = path.join(tmp, "tls.key");
    writeFileSync(certFile, pair.cert);
    writeFileSync(keyFile, pair.key);
    writeFileSync(path.join(tmp, "ca.crt"), ca.cert);
    tls = { caPem: ca.cert, certFile, keyFile };
  }
  const port = opts.port ?? (await freePort());
  const proc = supervise(
    "serve",
    process.execPath,
    [
      ...nodeArgs("serve"),
      opts.cli ?? CLI,
      "serve",
      "--listen",
      `127.0.0.1:${port}`,
      "--tls-cert",
      tls.certFile,
      "--tls-key",
      tls.keyFile,
      ...(opts.args ?? []),
    ],
    {
      env: { ...process.env, LOG_LEVEL: process.env.LOG_LEVEL ?? "warn", HOME: emptyHome(), ...opts.env },
      logFile:
        opts.logFile ??
        (process.env.EDGE_TEST_LOG_DIR
          ? path.join(process.env.EDGE_TEST_LOG_DIR, `serve-${port}.log`)
          : undefined),
    },
  );
  const url = `https://127.0.0.1:${port}`;
  const caPem = tls.caPem;
  let exited: number | undefined;
  void proc.exited.then((c) => (exited = c));
  await waitFor(
    "edge-operator serve /readyz",
    async () => {
      if (exited !== undefined)
        throw new Error(`serve exited with code ${exited}:\n${proc.output().slice(-3000)}`);
      return (await httpsStatus(`${url}/readyz`, caPem)) === 200 ? true : undefined;
    },
    30_000,
    50,
  );
  return {
    url,
    port,
    caPem,
    caBundle: Buffer.from(caPem).toString("base64"),
    certFile: tls.certFile,
    keyFile: tls.keyFile,
    process: proc,
    output: () => proc.output(),
    async stop() {
      await proc.stop();
      if (tmp) rmSync(tmp, { recursive: true, force: true });
    },
  };
}

/**
 * Node flags for one subcommand's process alone, from EDGE_<NAME>_NODE_ARGS
 * (a V8 trace of serve in a bench: EDGE_SERVE_NODE_ARGS="--trace-opt --trace-deopt").
 */
function nodeArgs(name: string): string[] {
  const args = process.env[`EDGE_${name.toUpperCase()}_NODE_ARGS`];
  return args ? args.split(" ").filter((a) => a !== "") : [];
}

/** Starts any edge-operator subcommand as a supervised process. */
export function startCli(name: string, args: string[], env: Record<string, string> = {}): Supervised {
  assertBuilt();
  return supervise(name, process.execPath, [...nodeArgs(name), CLI, ...args], {
    env: { ...process.env, LOG_LEVEL: process.env.LOG_LEVEL ?? "warn", HOME: emptyHome(), ...env },
    ...(process.env.EDGE_TEST_LOG_DIR
      ? { logFile: path.join(process.env.EDGE_TEST_LOG_DIR, `${name}-${process.pid}.log`) }
      : {}),
  });
}

/**
 * `edge-operator wait-admission`, as the chart's post-install Job runs it: out
 * of cluster no pod does, so a harness that installs the chart with the
 * finalizer policy waits here before its first create.
 */
export async function waitAdmission(kubeconfig: string, namespace: string): Promise<string> {
  assertBuilt();
  const r = await run(
    process.execPath,
    [CLI, "wait-admission", "--kubeconfig", kubeconfig, "--namespace", namespace, "--timeout", "90s"],
    { timeoutMs: 120_000 },
  );
  if (r.code !== 0) throw new Error(`edge-operator wait-admission exited ${r.code}: ${r.stderr}`);
  return r.stdout.trim();
}
