// Cluster access read the way kubectl reads it: kubeconfig files (merged as
// $KUBECONFIG lists are) or the in-cluster service account. Read with `yaml`
// rather than @kubernetes/client-node, whose import alone costs a process about
// 75 MiB of RSS; only users with exec or auth-provider plugins load it, on
// demand (see pluginCredentials).

import { readFileSync } from "node:fs";
import type https from "node:https";
import net from "node:net";
import path from "node:path";
import { parse as parseYaml } from "yaml";
import { parseProxyUrl } from "./proxy-tunnel.js";
import { fileReason } from "./file-reason.js";
import { podNamespace, SERVICE_ACCOUNT_DIR } from "./service-account.js";

/** TLS material for the agent, fixed for the life of the process. */
export interface TlsMaterial {
  readonly ca?: Buffer;
  readonly cert?: Buffer;
  readonly key?: Buffer;
  readonly servername?: string;
  readonly rejectUnauthorized: boolean;
}

/** What one request carries: headers, and (exec plugins only) a client certificate. */
export interface Credentials {
  readonly headers: Readonly<Record<string, string | string[]>>;
  readonly cert?: Buffer;
  readonly key?: Buffer;
}

export interface ClusterAccess {
  /** Where it came from, for messages: the kubeconfig file(s), or "in-cluster". */
  readonly source: string;
  /** The apiserver's URL, without a trailing slash. */
  readonly server: string;
  /** The context's namespace (in-cluster: the pod's), for commands that default to it as kubectl does. */
  readonly namespace?: string;
  readonly tls: TlsMaterial;
  /** The cluster's `proxy-url`: an http:// proxy every connection tunnels through (CONNECT). */
  readonly proxyUrl?: URL;
  /** The kubeconfig user's own `token`, if it has one. */
  readonly token?: string;
  /** Read per request: token files and exec plugins rotate. */
  credentials(): Promise<Credentials>;
}

type Raw = Record<string, unknown>;

/** What a kubeconfig names: its clusters, users and contexts, and the current context. */
interface KubeconfigEntries {
  readonly currentContext?: string;
  readonly clusters: ReadonlyMap<string, Named>;
  readonly users: ReadonlyMap<string, Named>;
  readonly contexts: ReadonlyMap<string, Named>;
}

/** One kubeconfig file, parsed: named entries and their raw fields, paths made absolute. */
export interface KubeconfigDoc extends KubeconfigEntries {
  readonly file: string;
}

/** An entry with the file that defined it, for messages and relative paths. */
export interface Named {
  readonly name: string;
  readonly file: string;
  readonly fields: Raw;
}

/** The merge of several files: which files, in order, and the first definition of each name. */
export interface MergedKubeconfig extends KubeconfigEntries {
  readonly files: readonly string[];
}

/** The current context resolved to its cluster and user (absent user = anonymous). */
export interface SelectedContext {
  readonly context: string;
  readonly namespace?: string;
  readonly cluster: Named;
  readonly user?: Named;
}

const isRecord = (v: unknown): v is Raw => typeof v === "object" && v !== null && !Array.isArray(v);

// Fields that name files; kubectl resolves them against the kubeconfig's directory.
const CLUSTER_PATHS = ["certificate-authority"];
const USER_PATHS = ["client-certificate", "client-key", "tokenFile"];

/** Parses one kubeconfig's text. Pure: `file` only names it and anchors relative paths. */
export function parseKubeconfig(text: string, file: string): KubeconfigDoc {
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (e) {
    throw new Error(`${file}: not valid YAML: ${(e as Error).message.split("\n")[0]}`);
  }
  if (doc === null || doc === undefined) doc = {};
  if (!isRecord(doc)) throw new Error(`${file}: not a kubeconfig (expected a mapping at the top)`);
  const dir = path.dirname(path.resolve(file));
  const entries = (list: string, inner: string, paths: string[]): Map<string, Named> => {
    const out = new Map<string, Named>();
    const value = doc[list];
    if (value === undefined || value === null) return out;
    if (!Array.isArray(value)) throw new Error(`${file}: ${list}: must be a list`);
    value.forEach((item: unknown, i) => {
      if (!isRecord(item) || typeof item.name !== "string" || item.name === "") {
        throw new Error(`${file}: ${list}[${i}].name: missing`);
      }
      const body = item[inner] ?? {};
      if (!isRecord(body)) throw new Error(`${file}: ${list}[${i}].${inner}: must be a mapping`);
      const fields: Raw = { ...body };
      for (const p of paths) {
        const v = fields[p];
        if (typeof v === "string" && v !== "" && !path.isAbsolute(v)) fields[p] = path.join(dir, v);
      }
      // client-go resolves a relative exec command only when it names a path, not a $PATH lookup.
      if (isRecord(fields.exec) && typeof fields.exec.command === "string") {
        const cmd = fields.exec.command;
        if (cmd.includes(path.sep) && !path.isAbsolute(cmd)) {
          fields.exec = { ...fields.exec, command: path.join(dir, cmd) };
        }
      }
      // Within one file kubectl rejects duplicates; the first one is what it would use.
      if (!out.has(item.name)) out.set(item.name, { name: item.name, file, fields });
    });
    return out;
  };
  const current = doc["current-context"];
  return {
    file,
    ...(typeof current === "string" && current !== "" ? { currentContext: current } : {}),
    clusters: entries("clusters", "cluster", CLUSTER_PATHS),
    users: entries("users", "user", USER_PATHS),
    contexts: entries("contexts", "context", []),
  };
}

/** Merges as kubectl merges a $KUBECONFIG list: the first file to set a name, or current-context, wins. */
export function mergeKubeconfigs(docs: readonly KubeconfigDoc[]): MergedKubeconfig {
  const clusters = new Map<string, Named>();
  const users = new Map<string, Named>();
  const contexts = new Map<string, Named>();
  let currentContext: string | undefined;
  for (const d of docs) {
    currentContext ??= d.currentContext;
    for (const [into, from] of [
      [clusters, d.clusters],
      [users, d.users],
      [contexts, d.contexts],
    ] as const) {
      for (const [name, e] of from) if (!into.has(name)) into.set(name, e);
    }
  }
  return {
    files: docs.map((d) => d.file),
    ...(currentContext ? { currentContext } : {}),
    clusters,
    users,
    contexts,
  };
}

/**
 * The current context's cluster and user (or those of `contextName`, kubectl's
 * --context), or a one-line reason naming the file(s).
 */
export function selectCurrentContext(merged: MergedKubeconfig, contextName?: string): SelectedContext {
  const where = merged.files.join(path.delimiter);
  const name = contextName ?? merged.currentContext;
  if (!name) throw new Error(`${where}: no current-context is set (pass --context)`);
  const context = merged.contexts.get(name);
  if (!context)
    throw new Error(
      contextName !== undefined
        ? `${where}: no context named "${name}"`
        : `${where}: current-context "${name}" names no context`,
    );
  const ns = str(context.fields, "namespace");
  const namespace = ns ? { namespace: ns } : {};
  const clusterName = context.fields.cluster;
  if (typeof clusterName !== "string" || clusterName === "") {
    throw new Error(`${context.file}: context "${name}" names no cluster`);
  }
  const cluster = merged.clusters.get(clusterName);
  if (!cluster) throw new Error(`${where}: cluster "${clusterName}" was not found for context "${name}"`);
  const userName = context.fields.user;
  if (typeof userName !== "string" || userName === "") return { context: name, ...namespace, cluster };
  const user = merged.users.get(userName);
  if (!user) throw new Error(`${where}: user "${userName}" was not found for context "${name}"`);
  return { context: name, ...namespace, cluster, user };
}

const str = (r: Raw, k: string): string | undefined => {
  const v = r[k];
  return typeof v === "string" && v !== "" ? v : undefined;
};

function readOrFail(file: string, what: string): Buffer {
  try {
    return readFileSync(file);
  } catch (e) {
    throw new Error(`${what} ${file}: ${fileReason(e)}`);
  }
}

/** `X-data` (base64) or the file `X`, read now: TLS material does not change under a running agent. */
function material(entry: Named, kind: string, field: string): Buffer | undefined {
  const data = str(entry.fields, `${field}-data`);
  if (data) return Buffer.from(data, "base64");
  const file = str(entry.fields, field);
  return file ? readOrFail(file, `${entry.file}: ${kind} "${entry.name}": ${field}`) : undefined;
}

/**
 * A token read from a file, re-read once it is older than `maxAgeMs` (client-go
 * and client-node both use a minute): bound service-account tokens rotate.
 */
export function fileToken(file: string, what: string, maxAgeMs = 60_000): () => string {
  let cached = readOrFail(file, what).toString("utf8").trim();
  let readAt = Date.now();
  return () => {
    if (Date.now() - readAt >= maxAgeMs) {
      try {
        cached = readFileSync(file, "utf8").trim();
      } catch {
        // keep the last token: the kubelet swaps the file while rotating
      }
      readAt = Date.now();
    }
    return cached;
  };
}

export interface AccessOptions {
  /** How long a token read from a file is trusted before it is read again. */
  tokenMaxAgeMs?: number;
}

/** Cluster access for a selected context: reads the TLS files now, and credentials per request. */
export function accessFromContext(
  selected: SelectedContext,
  source: string,
  opts: AccessOptions = {},
): ClusterAccess {
  const { cluster } = selected;
  const server = str(cluster.fields, "server");
  if (!server) throw new Error(`${cluster.file}: cluster "${cluster.name}" has no server`);
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    throw new Error(`${cluster.file}: cluster "${cluster.name}": server ${server} is not a URL`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    throw new Error(`${cluster.file}: cluster "${cluster.name}": server ${server} is not http(s)`);
  }
  const servername = str(cluster.fields, "tls-server-name");
  const ca = material(cluster, "cluster", "certificate-authority");
  const u = selected.user;
  const cert = u ? material(u, "user", "client-certificate") : undefined;
  const key = u ? material(u, "user", "client-key") : undefined;
  if (u && (cert === undefined) !== (key === undefined)) {
    throw new Error(
      `${u.file}: user "${u.name}" has ${cert ? "a client certificate but no client-key" : "a client key but no client-certificate"}`,
    );
  }
  const tls: TlsMaterial = {
    ...(ca ? { ca } : {}),
    ...(cert ? { cert } : {}),
    ...(key ? { key } : {}),
    ...(servername ? { servername } : {}),
    rejectUnauthorized: cluster.fields["insecure-skip-tls-verify"] !== true,
  };
  const token = u ? str(u.fields, "token") : undefined;
  const proxy = str(cluster.fields, "proxy-url");
  const proxyUrl = proxy ? parseProxyUrl(proxy, `${cluster.file}: cluster "${cluster.name}"`) : undefined;
  return {
    source,
    server: server.replace(/\/+$/, ""),
    ...(selected.namespace ? { namespace: selected.namespace } : {}),
    tls,
    ...(proxyUrl ? { proxyUrl } : {}),
    ...(token ? { token } : {}),
    credentials: u ? userCredentials(u, server, opts) : () => Promise.resolve({ headers: {} }),
  };
}

function userCredentials(u: Named, server: string, opts: AccessOptions): () => Promise<Credentials> {
  const f = u.fields;
  const extra: Record<string, string | string[]> = {};
  const as = str(f, "as");
  if (as) extra["impersonate-user"] = as;
  const groups = f["as-groups"];
  if (Array.isArray(groups) && groups.length > 0) extra["impersonate-group"] = groups.map(String);

  if (isRecord(f.exec) || isRecord(f["auth-provider"])) {
    const plugin = pluginCredentials(u, server);
    return async () => {
      const c = await plugin();
      return { ...c, headers: { ...c.headers, ...extra } };
    };
  }
  const tokenFile = str(f, "tokenFile");
  const token = str(f, "token");
  const username = str(f, "username");
  let authorization: () => string | undefined = () => undefined;
  // client-go prefers the file to an inline token: it is the one that rotates.
  if (tokenFile) {
    const read = fileToken(tokenFile, `${u.file}: user "${u.name}": tokenFile`, opts.tokenMaxAgeMs);
    authorization = () => `Bearer ${read()}`;
  } else if (token) {
    authorization = () => `Bearer ${token}`;
  } else if (username) {
    const basic = `Basic ${Buffer.from(`${username}:${str(f, "password") ?? ""}`).toString("base64")}`;
    authorization = () => basic;
  }
  return () => {
    const a = authorization();
    return Promise.resolve({ headers: a ? { ...extra, authorization: a } : extra });
  };
}

/**
 * exec (client.authentication.k8s.io) and auth-provider users: not
 * reimplemented. client-node runs the plugin and caches what it returns; it is
 * imported here, on first use, so that only processes whose kubeconfig needs a
 * plugin (laptops with cloud credentials) pay its ~75 MiB.
 */
function pluginCredentials(u: Named, server: string): () => Promise<Credentials> {
  type Delegate = { applyToHTTPSOptions(o: https.RequestOptions): Promise<void> };
  let delegate: Promise<Delegate> | undefined;
  const load = async (): Promise<Delegate> => {
    const { KubeConfig } = await import("@kubernetes/client-node");
    const config = new KubeConfig();
    config.loadFromOptions({
      // TLS is the agent's business; client-node only builds the Authorization
      // header (and, for some plugins, a client certificate). It refuses http:
      // servers unless TLS checks are off.
      clusters: [{ name: "c", server, skipTLSVerify: server.startsWith("http:") }],
      users: [{ name: "u", exec: u.fields.exec, authProvider: u.fields["auth-provider"] }],
      contexts: [{ name: "x", cluster: "c", user: "u" }],
      currentContext: "x",
    });
    return config;
  };
  return async () => {
    if (!delegate) {
      delegate = load();
      // a failed import or bad plugin config is retried on the next request
      delegate.catch(() => (delegate = undefined));
    }
    const o: https.RequestOptions = {};
    await (await delegate).applyToHTTPSOptions(o);
    const headers: Record<string, string | string[]> = {};
    for (const [k, v] of Object.entries(o.headers ?? {})) {
      if (typeof v === "string" || typeof v === "number") headers[k.toLowerCase()] = String(v);
      else if (Array.isArray(v)) headers[k.toLowerCase()] = v.map(String);
    }
    const asBuffer = (v: unknown): Buffer | undefined =>
      Buffer.isBuffer(v) ? v : typeof v === "string" ? Buffer.from(v) : undefined;
    const cert = asBuffer(o.cert);
    const key = asBuffer(o.key);
    return { headers, ...(cert && key ? { cert, key } : {}) };
  };
}

export interface LoadOptions extends AccessOptions {
  /** Files that do not exist are left out, as kubectl does for a $KUBECONFIG list. */
  skipMissing?: boolean;
  /** kubectl's --context: this context instead of current-context. */
  context?: string;
}

/** Reads and merges kubeconfig files, the first to name an entry winning. */
export function loadKubeconfigFiles(files: readonly string[], opts: LoadOptions = {}): ClusterAccess {
  const docs: KubeconfigDoc[] = [];
  for (const file of files) {
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (opts.skipMissing && code === "ENOENT") continue;
      throw new Error(`kubeconfig ${file}: ${fileReason(e)}`);
    }
    docs.push(parseKubeconfig(text, file));
  }
  if (docs.length === 0) throw new Error(`${files.join(path.delimiter)}: no kubeconfig file exists`);
  const merged = mergeKubeconfigs(docs);
  return accessFromContext(
    selectCurrentContext(merged, opts.context),
    merged.files.join(path.delimiter),
    opts,
  );
}

export interface InClusterOptions extends AccessOptions {
  /** Where ca.crt and token are (the kubelet mounts them here). */
  serviceAccountDir?: string;
  env?: NodeJS.ProcessEnv;
}

/** The pod's own service account, on the apiserver address Kubernetes injects. */
export function inClusterAccess(opts: InClusterOptions = {}): ClusterAccess {
  const env = opts.env ?? process.env;
  const dir = opts.serviceAccountDir ?? SERVICE_ACCOUNT_DIR;
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port) {
    throw new Error("in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must both be set");
  }
  const ca = readOrFail(path.join(dir, "ca.crt"), "in-cluster: service account CA");
  const token = fileToken(path.join(dir, "token"), "in-cluster: service account token", opts.tokenMaxAgeMs);
  const namespace = podNamespace(path.join(dir, "namespace"));
  return {
    source: "in-cluster",
    ...(namespace ? { namespace } : {}),
    server: `https://${net.isIPv6(host) ? `[${host}]` : host}:${port}`,
    tls: { ca, rejectUnauthorized: true },
    credentials: () => Promise.resolve({ headers: { authorization: `Bearer ${token()}` } }),
  };
}
