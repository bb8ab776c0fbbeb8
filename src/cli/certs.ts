import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { describeCertificate, isIssuedBy, keyMatchesCertificate, type KeyPair } from "../certs/pki.js";
import { issueServing, newCa, servingNames, type ServingIdentity } from "../certs/serving.js";
import { UsageError, type Command } from "./command.js";
import { helpFooter } from "./help-footer.js";

const help = `Usage: edge-operator certs [--dns NAME]... [--ip IP]... [--service SVC --namespace NS] [options]

Writes a CA (10 years) and a serving certificate (1 year) it signed, for local
development: ca.crt, ca.key, tls.crt, tls.key. An existing valid CA in the
output directory is reused to issue the new serving certificate, so caBundles
already registered stay valid; --force replaces it.

Options:
  --dns NAME        a DNS name for the certificate (repeatable)
  --ip IP           an IP address for the certificate (repeatable)
  --service SVC     add SVC, SVC.NS, SVC.NS.svc, SVC.NS.svc.cluster.local
  --namespace NS    the Service's namespace (with --service)
  --out DIR         where to write (default certs/)
  --force           replace a valid CA instead of reusing it
  -h, --help        this text
${helpFooter([])}`;

export interface CertsOptions {
  identity: ServingIdentity;
  out: string;
  force: boolean;
}

export function parseCertsArgs(argv: string[]): CertsOptions | "help" {
  const { values } = parseArgs({
    args: argv,
    options: {
      dns: { type: "string", multiple: true },
      ip: { type: "string", multiple: true },
      service: { type: "string" },
      namespace: { type: "string" },
      out: { type: "string", default: "certs" },
      force: { type: "boolean", default: false },
      help: { type: "boolean", short: "h" },
    },
    strict: true,
  });
  if (values.help) return "help";
  const identity: ServingIdentity = {
    ...(values.service !== undefined ? { service: values.service } : {}),
    ...(values.namespace !== undefined ? { namespace: values.namespace } : {}),
    dnsNames: values.dns ?? [],
    ips: values.ip ?? [],
  };
  if (values.service !== undefined && values.namespace === undefined)
    throw new UsageError("--service needs --namespace");
  if (values.namespace !== undefined && values.service === undefined)
    throw new UsageError("--namespace needs --service");
  try {
    servingNames(identity);
  } catch (err) {
    throw new UsageError(`${(err as Error).message} (use --dns, --ip or --service with --namespace)`);
  }
  return { identity, out: values.out, force: values.force };
}

/** The CA in `dir` when it is whole and valid now; a reason when it is there but unusable. */
function existingCa(dir: string, now: Date): KeyPair | { unusable: string } | undefined {
  const certFile = path.join(dir, "ca.crt");
  const keyFile = path.join(dir, "ca.key");
  if (!existsSync(certFile) && !existsSync(keyFile)) return undefined;
  if (!existsSync(certFile) || !existsSync(keyFile))
    return { unusable: `${certFile} and ${keyFile} must both exist` };
  const ca = { cert: readFileSync(certFile, "utf8"), key: readFileSync(keyFile, "utf8") };
  try {
    const info = describeCertificate(ca.cert);
    if (!info.isCa) return { unusable: `${certFile} is not a CA certificate` };
    if (!keyMatchesCertificate(ca.cert, ca.key)) return { unusable: `${keyFile} does not match ${certFile}` };
    if (info.notAfter <= now) return { unusable: `${certFile} expired on ${info.notAfter.toISOString()}` };
  } catch (err) {
    return { unusable: `${certFile}: ${(err as Error).message}` };
  }
  return ca;
}

export interface CertsResult {
  caReused: boolean;
  files: { ca: string; caKey: string; cert: string; key: string };
}

export function writeCerts(opts: CertsOptions, now = new Date()): CertsResult {
  mkdirSync(opts.out, { recursive: true });
  const found = existingCa(opts.out, now);
  let ca: KeyPair;
  let caReused = false;
  if (found && !("unusable" in found) && !opts.force) {
    ca = found;
    caReused = true;
  } else if (found && "unusable" in found && !opts.force) {
    throw new UsageError(`${found.unusable}; pass --force to replace the CA`);
  } else {
    ca = newCa(now);
  }
  const serving = issueServing(ca, opts.identity, now);
  if (!isIssuedBy(ca.cert, serving.cert))
    throw new Error("internal: the serving certificate does not verify");
  const files = {
    ca: path.join(opts.out, "ca.crt"),
    caKey: path.join(opts.out, "ca.key"),
    cert: path.join(opts.out, "tls.crt"),
    key: path.join(opts.out, "tls.key"),
  };
  if (!caReused) {
    writeFileSync(files.caKey, ca.key, { mode: 0o600 });
    writeFileSync(files.ca, ca.cert);
  }
  // Key first: a server watching tls.crt reloads when the cert lands, and the key must already match.
  writeFileSync(files.key, serving.key, { mode: 0o600 });
  writeFileSync(files.cert, serving.cert);
  return { caReused, files };
}

export const certsCommand: Command = {
  help,
  async run(argv) {
    const opts = parseCertsArgs(argv);
    if (opts === "help") {
      process.stdout.write(help);
      return 0;
    }
    const { caReused, files } = writeCerts(opts);
    const names = servingNames(opts.identity);
    const out = [
      `${caReused ? "reused" : "created"} CA   ${files.ca} (key ${files.caKey})`,
      `issued cert ${files.cert} (key ${files.key}) for ${[...names.dnsNames, ...names.ips].join(", ")}`,
      `caBundle:   base64 -w0 ${files.ca}`,
      "",
    ];
    process.stdout.write(out.join("\n"));
    return 0;
  },
};
