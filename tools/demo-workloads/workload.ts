// The demo's data-plane workload, one program in two modes:
//
//   node workload.js backend --port 50051 [--host 0.0.0.0] [--name NAME]
//     a gRPC server answering every unary method with its own name (env
//     POD_NAME), so a caller sees which backend a call reached;
//
//   node workload.js client --ads HOST:PORT --node-id ID --target HOST=METHOD ...
//                    [--status-port 8080] [--status-host 0.0.0.0] [--interval-ms 200]
//     a proxyless gRPC client (@grpc/grpc-js-xds) that calls each target on
//     `xds:///HOST` every interval, reads what its own xDS client holds (CSDS),
//     and serves both as JSON on a status port. Its ADS connection runs through
//     a relay in this process that can be cut like a network partition, so a
//     demo can show the operator losing a client while the client keeps
//     serving from the config it holds.
//
// It imports only Node's builtins and gRPC: the image holds nothing else.

import http from "node:http";
import net from "node:net";
import { parseArgs } from "node:util";
import * as grpc from "@grpc/grpc-js";

const identity = (b: Buffer): Buffer => b;

function fail(message: string): never {
  process.stderr.write(`workload: ${message}\n`);
  process.exit(2);
}

function log(line: string): void {
  process.stdout.write(`${line}\n`);
}

function parsePort(what: string, value: string | undefined, fallback: number): number {
  if (value === undefined || value === "") return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65_535) fail(`${what}: ${JSON.stringify(value)} is not a port`);
  return n;
}

// ---------------------------------------------------------------------------
// backend

async function backend(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: { port: { type: "string" }, host: { type: "string" }, name: { type: "string" } },
    strict: true,
  });
  const name = values.name ?? process.env.POD_NAME;
  if (!name) fail("backend: give --name or set POD_NAME");
  const port = parsePort("--port", values.port ?? process.env.PORT, 50051);
  const host = values.host ?? "0.0.0.0";

  const server = new grpc.Server();
  const reply: grpc.handleUnaryCall<Buffer, Buffer> = (_call, done) => done(null, Buffer.from(name));
  // grpc-js finds a call's handler by its path in a Map and answers
  // UNIMPLEMENTED when there is none; it has no fallback handler. The demo's
  // routes name methods the backend cannot know in advance, so every path
  // without a handler of its own gets the one that answers the name.
  const handlers = (server as unknown as { handlers?: unknown }).handlers;
  if (!(handlers instanceof Map)) fail("backend: @grpc/grpc-js keeps its handlers differently than 1.14 did");
  const own = handlers.get.bind(handlers) as (path: string) => unknown;
  handlers.get = (path: string) =>
    own(path) ?? { func: reply, serialize: identity, deserialize: identity, type: "unary", path };

  const bound = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`${host}:${port}`, grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  log(`backend ${name} listening on ${host}:${bound}`);
  const stop = (): void => {
    // Calls in progress finish; a second signal, or 10 s, ends it regardless.
    setTimeout(() => process.exit(0), 10_000).unref();
    server.tryShutdown(() => process.exit(0));
  };
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
}

// ---------------------------------------------------------------------------
// client: the link relay

type LinkState = "up" | "cut";

interface Pair {
  readonly down: net.Socket;
  up: net.Socket | undefined;
  downClosed: boolean;
  upClosed: boolean;
}

/**
 * A TCP relay from loopback to the ADS server that can stand for a network
 * partition. Cut: bytes stop both ways and no socket is closed, so neither
 * end sees a FIN (the server learns only through its own keepalive, as when a
 * node drops off the network); connections made meanwhile are accepted and
 * held without an upstream. Up: held connections get their upstream, paused
 * ones resume, and a pair whose server side closed meanwhile is destroyed on
 * the client's side too, so that the gRPC client reconnects.
 */
class LinkRelay {
  private state: LinkState = "up";
  private readonly pairs = new Set<Pair>();
  private readonly server = net.createServer((down) => this.accept(down));

  constructor(
    private readonly host: string,
    private readonly port: number,
  ) {}

  get link(): LinkState {
    return this.state;
  }

  listen(): Promise<number> {
    return new Promise((resolve, reject) => {
      this.server.once("error", reject);
      this.server.listen(0, "127.0.0.1", () => resolve((this.server.address() as net.AddressInfo).port));
    });
  }

  set(state: LinkState): void {
    if (state === this.state) return;
    this.state = state;
    if (state === "cut") {
      for (const p of this.pairs) {
        p.down.pause();
        p.up?.pause();
      }
      return;
    }
    for (const p of [...this.pairs]) {
      if (p.downClosed) this.drop(p);
      else if (p.up === undefined) this.connect(p);
      else if (p.upClosed) this.drop(p);
      else {
        // Resume each side only where the other can take it; 'drain' resumes the rest.
        if (!p.up.writableNeedDrain) p.down.resume();
        if (!p.down.writableNeedDrain) p.up.resume();
      }
    }
  }

  close(): void {
    for (const p of this.pairs) this.drop(p);
    this.server.close();
  }

  private accept(down: net.Socket): void {
    const pair: Pair = { down, up: undefined, downClosed: false, upClosed: false };
    this.pairs.add(pair);
    down.on("error", () => undefined);
    down.on("close", () => {
      pair.downClosed = true;
      // While cut, the server must not learn of it: that waits for the link.
      if (this.state === "up") this.drop(pair);
    });
    if (this.state === "cut") down.pause();
    else this.connect(pair);
  }

  private connect(pair: Pair): void {
    const up = net.connect({ host: this.host, port: this.port });
    pair.up = up;
    up.on("error", () => undefined);
    up.on("close", () => {
      pair.upClosed = true;
      if (this.state === "up") this.drop(pair);
    });
    this.forward(pair.down, up);
    this.forward(up, pair.down);
  }

  private forward(from: net.Socket, to: net.Socket): void {
    from.on("data", (chunk: Buffer) => {
      if (!to.write(chunk)) from.pause();
    });
    to.on("drain", () => {
      if (this.state === "up") from.resume();
    });
  }

  /** Destroys both sides: the client sees its connection reset and dials again. */
  private drop(pair: Pair): void {
    this.pairs.delete(pair);
    pair.down.destroy();
    pair.up?.destroy();
  }
}

// ---------------------------------------------------------------------------
// client: what the xDS client holds, read through its own CSDS service

// grpc-js-xds reports a resource's type without the type.googleapis.com/ prefix.
const TYPES = {
  "envoy.config.listener.v3.Listener": "lds",
  "envoy.config.route.v3.RouteConfiguration": "rds",
  "envoy.config.cluster.v3.Cluster": "cds",
  "envoy.config.endpoint.v3.ClusterLoadAssignment": "eds",
} as const;
type TypeKey = (typeof TYPES)[keyof typeof TYPES];
const typeOf = (typeUrl: string): TypeKey | undefined =>
  (TYPES as Record<string, TypeKey | undefined>)[typeUrl.replace(/^type\.googleapis\.com\//, "")];
const FETCH_CLIENT_STATUS = "/envoy.service.status.v3.ClientStatusDiscoveryService/FetchClientStatus";

/** GenericXdsConfig as @grpc/proto-loader decodes it (keepCase, longs and enums as strings). */
interface GenericXdsConfig {
  type_url: string;
  name: string;
  version_info: string;
  client_status: string;
  xds_config?: { type_url: string; value: Buffer } | null;
  last_updated?: { seconds: string; nanos: number } | null;
}
interface ClientStatusResponse {
  config: { generic_xds_configs: GenericXdsConfig[] }[];
}

/**
 * grpc-js-xds registers CSDS (envoy.service.status.v3) as a gRPC admin
 * service and keeps the state it reports to itself; the way to it is a server
 * with the admin services, which this process calls over loopback. The method
 * definitions (with grpc-js-xds's own protobuf codecs) are taken as the admin
 * services are added, so no proto is loaded here.
 */
class AdminServer extends grpc.Server {
  readonly methods = new Map<string, grpc.MethodDefinition<unknown, unknown>>();
  override addService(
    service: grpc.ServiceDefinition,
    implementation: grpc.UntypedServiceImplementation,
  ): void {
    for (const m of Object.values(service)) this.methods.set(m.path, m);
    super.addService(service, implementation);
  }
}

async function startCsds(): Promise<{ fetch(): Promise<ClientStatusResponse>; close(): void }> {
  const server = new AdminServer();
  grpc.addAdminServicesToServer(server);
  const method = server.methods.get(FETCH_CLIENT_STATUS);
  if (!method) throw new Error("grpc-js-xds registered no CSDS admin service (was register() called?)");
  // Loopback only: nothing outside this process needs it.
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  return {
    fetch: () =>
      new Promise((resolve, reject) =>
        client.makeUnaryRequest(
          FETCH_CLIENT_STATUS,
          method.requestSerialize,
          method.responseDeserialize,
          { node_matchers: [] },
          new grpc.Metadata(),
          { deadline: Date.now() + 1_000 },
          (err, value) => (err ? reject(err) : resolve(value as ClientStatusResponse)),
        ),
      ),
    close: () => {
      client.close();
      server.forceShutdown();
    },
  };
}

/** Protobuf wire format, just enough to read names out of a RouteConfiguration. */
function* protoFields(buf: Buffer): Generator<{ field: number; bytes: Buffer | undefined }> {
  let i = 0;
  const varint = (): number => {
    let v = 0;
    for (let mul = 1; ; mul *= 128) {
      if (i >= buf.length) throw new Error("truncated varint");
      const b = buf[i++] as number;
      v += (b & 0x7f) * mul;
      if (b < 0x80) return v;
    }
  };
  while (i < buf.length) {
    const tag = varint();
    const field = Math.floor(tag / 8);
    switch (tag & 7) {
      case 0:
        varint();
        yield { field, bytes: undefined };
        break;
      case 1:
        i += 8;
        yield { field, bytes: undefined };
        break;
      case 2: {
        const n = varint();
        if (i + n > buf.length) throw new Error("truncated field");
        yield { field, bytes: buf.subarray(i, i + n) };
        i += n;
        break;
      }
      case 5:
        i += 4;
        yield { field, bytes: undefined };
        break;
      default:
        throw new Error(`unsupported wire type ${tag & 7}`);
    }
  }
}

/** The names of a RouteConfiguration's route entries (virtual_hosts = 2, routes = 3, Route.name = 14). */
function routeEntryNames(routeConfiguration: Buffer): string[] {
  const names: string[] = [];
  for (const vh of protoFields(routeConfiguration)) {
    if (vh.field !== 2 || !vh.bytes) continue;
    for (const route of protoFields(vh.bytes)) {
      if (route.field !== 3 || !route.bytes) continue;
      for (const f of protoFields(route.bytes))
        if (f.field === 14 && f.bytes) names.push(f.bytes.toString("utf8"));
    }
  }
  return names;
}

/**
 * The EdgeRoute a route entry came from: the operator names entries
 * `namespace/name/rN/mM` (rule N, match M); a name of another form is kept whole.
 */
function edgeRouteKey(entryName: string): string {
  const parts = entryName.split("/");
  return parts.length >= 3 ? `${parts[0]}/${parts[1]}` : entryName;
}

interface Held {
  versions: Record<TypeKey, string | null>;
  routes: string[];
}

interface HistoryEntry {
  at: number;
  rdsVersion: string | null;
  routes: string[];
}

const HISTORY_LIMIT = 200;

class HeldConfig {
  held: Held = { versions: { lds: null, rds: null, cds: null, eds: null }, routes: [] };
  readonly history: HistoryEntry[] = [];
  /** Per route configuration, the EdgeRoute keys of the version last ACKed. */
  private readonly routesOf = new Map<string, string[]>();

  update(response: ClientStatusResponse): void {
    const versions: Held["versions"] = { lds: null, rds: null, cds: null, eds: null };
    const newest: Partial<Record<TypeKey, number>> = {};
    const present = new Set<string>();
    for (const config of response.config) {
      for (const r of config.generic_xds_configs) {
        const type = typeOf(r.type_url);
        // A NACKed resource keeps the version (and the config) it had: both still count as held.
        if (!type || (r.client_status !== "ACKED" && r.client_status !== "NACKED")) continue;
        // grpc-js-xds moves a resource's version only when its content changes; a type's
        // version is therefore that of its most recently changed resource.
        const at = r.last_updated ? Number(r.last_updated.seconds) * 1000 + r.last_updated.nanos / 1e6 : 0;
        if ((newest[type] ?? -1) < at) {
          newest[type] = at;
          versions[type] = r.version_info;
        }
        if (type !== "rds") continue;
        present.add(r.name);
        if (r.client_status === "ACKED" && r.xds_config?.value) {
          try {
            this.routesOf.set(r.name, [...new Set(routeEntryNames(r.xds_config.value).map(edgeRouteKey))]);
          } catch (e) {
            process.stderr.write(`workload: route configuration ${r.name}: ${(e as Error).message}\n`);
          }
        }
      }
    }
    for (const name of this.routesOf.keys()) if (!present.has(name)) this.routesOf.delete(name);
    const routes = [...new Set([...this.routesOf.values()].flat())].sort();
    const changed =
      versions.rds !== this.held.versions.rds || routes.join("\n") !== this.held.routes.join("\n");
    this.held = { versions, routes };
    if (changed) {
      this.history.push({ at: Date.now(), rdsVersion: versions.rds, routes });
      if (this.history.length > HISTORY_LIMIT) this.history.shift();
    }
  }
}

// ---------------------------------------------------------------------------
// client: the call loop

type LastResult =
  { at: number; ok: true; backend: string } | { at: number; ok: false; code: number; details: string };

interface TargetState {
  method: string;
  ok: number;
  failed: number;
  last: LastResult | null;
  lastOkAt: number | null;
  lastFailAt: number | null;
}

interface Target {
  readonly host: string;
  readonly client: grpc.Client;
  readonly state: TargetState;
  inFlight: boolean;
}

const CALL_DEADLINE_MS = 1_000;

function call(target: Target): void {
  if (target.inFlight) return;
  target.inFlight = true;
  target.client.makeUnaryRequest(
    target.state.method,
    identity,
    identity,
    Buffer.alloc(0),
    new grpc.Metadata(),
    { deadline: Date.now() + CALL_DEADLINE_MS },
    (err, value) => {
      target.inFlight = false;
      const at = Date.now();
      const s = target.state;
      if (err) {
        s.failed++;
        s.lastFailAt = at;
        s.last = { at, ok: false, code: err.code, details: err.details };
      } else {
        s.ok++;
        s.lastOkAt = at;
        s.last = { at, ok: true, backend: (value ?? Buffer.alloc(0)).toString("utf8") };
      }
    },
  );
}

// ---------------------------------------------------------------------------
// client: the status endpoint

const BODY_LIMIT = 1024;

function sendJson(
  res: http.ServerResponse,
  status: number,
  body: unknown,
  headers: http.OutgoingHttpHeaders = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
    "cache-control": "no-store",
    ...headers,
  });
  res.end(text);
}

function readBody(req: http.IncomingMessage): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size > BODY_LIMIT) {
        req.removeAllListeners("data");
        req.pause();
        resolve(undefined);
        return;
      }
      chunks.push(c);
    });
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

// No authentication: this is a demo pod's status port, reached only on the
// cluster's pod network (or loopback, out of cluster), and the worst a caller
// can do is cut this one client's link to the operator.
function statusServer(state: () => unknown, relay: LinkRelay): http.Server {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? "").split("?")[0];
    if (path === "/state") {
      if (req.method !== "GET") return sendJson(res, 405, { error: "use GET /state" }, { allow: "GET" });
      return sendJson(res, 200, state());
    }
    if (path === "/link") {
      if (req.method !== "POST")
        return sendJson(res, 405, { error: 'use POST /link with {"state":"cut"|"up"}' }, { allow: "POST" });
      readBody(req).then(
        (body) => {
          if (body === undefined)
            return sendJson(res, 413, { error: `body over ${BODY_LIMIT} bytes` }, { connection: "close" });
          let parsed: unknown;
          try {
            parsed = JSON.parse(body);
          } catch {
            return sendJson(res, 400, { error: "body is not JSON" });
          }
          const want = (parsed as { state?: unknown } | null)?.state;
          if (want !== "cut" && want !== "up")
            return sendJson(res, 400, { error: 'body must be {"state":"cut"} or {"state":"up"}' });
          relay.set(want);
          log(`link ${want}`);
          return sendJson(res, 200, { link: relay.link });
        },
        () => sendJson(res, 400, { error: "could not read the body" }),
      );
      return;
    }
    sendJson(res, 404, { error: `no ${path}: GET /state, POST /link` });
  });
  server.headersTimeout = 5_000;
  server.requestTimeout = 10_000;
  return server;
}

// ---------------------------------------------------------------------------
// client

const METHOD = /^\/[^/\s]+\/[^/\s]+$/;

async function client(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      ads: { type: "string" },
      "node-id": { type: "string" },
      target: { type: "string", multiple: true },
      "status-port": { type: "string" },
      "status-host": { type: "string" },
      "interval-ms": { type: "string" },
    },
    strict: true,
  });
  const env = process.env;
  const ads = values.ads ?? env.ADS_ADDRESS;
  const colon = ads?.lastIndexOf(":") ?? -1;
  if (!ads || colon <= 0) fail(`client: --ads HOST:PORT is required (got ${JSON.stringify(ads ?? "")})`);
  const adsHost = ads.slice(0, colon).replace(/^\[(.*)\]$/, "$1");
  const adsPort = parsePort("--ads", ads.slice(colon + 1), 0);
  if (adsPort === 0) fail(`client: --ads ${ads}: the port must be 1..65535`);
  const nodeId = values["node-id"] ?? env.NODE_ID ?? env.POD_NAME;
  if (!nodeId) fail("client: --node-id is required (or NODE_ID, or POD_NAME)");
  const targetSpecs = values.target ?? (env.TARGETS ? env.TARGETS.split(",") : []);
  if (targetSpecs.length === 0) fail("client: give at least one --target HOST=METHOD");
  const targetsByHost = new Map<string, string>();
  for (const spec of targetSpecs) {
    const eq = spec.indexOf("=");
    const host = spec.slice(0, eq).trim();
    const method = spec.slice(eq + 1).trim();
    if (eq <= 0 || !METHOD.test(method))
      fail(`client: --target ${JSON.stringify(spec)} is not HOST=/package.Service/Method`);
    if (targetsByHost.has(host)) fail(`client: --target ${host} is given twice`);
    targetsByHost.set(host, method);
  }
  const statusPort = parsePort("--status-port", values["status-port"] ?? env.STATUS_PORT, 8080);
  const statusHost = values["status-host"] ?? env.STATUS_HOST ?? "0.0.0.0";
  const intervalMs = Number(values["interval-ms"] ?? env.INTERVAL_MS ?? 200);
  if (!Number.isInteger(intervalMs) || intervalMs < 10 || intervalMs > 60_000)
    fail(`client: --interval-ms must be an integer in 10..60000`);

  const relay = new LinkRelay(adsHost, adsPort);
  const relayPort = await relay.listen();
  // The bootstrap is read once, when the first xds:/// channel is made, so it
  // is set before grpc-js-xds is even loaded; a bootstrap file would win over it.
  delete process.env.GRPC_XDS_BOOTSTRAP;
  process.env.GRPC_XDS_BOOTSTRAP_CONFIG = JSON.stringify({
    xds_servers: [
      {
        server_uri: `127.0.0.1:${relayPort}`,
        channel_creds: [{ type: "insecure" }],
        server_features: ["xds_v3"],
      },
    ],
    node: { id: nodeId, locality: {} },
  });
  const xds = await import("@grpc/grpc-js-xds");
  xds.register();
  const csds = await startCsds();

  const targets: Target[] = [...targetsByHost].map(([host, method]) => ({
    host,
    client: new grpc.Client(`xds:///${host}`, grpc.credentials.createInsecure()),
    state: { method, ok: 0, failed: 0, last: null, lastOkAt: null, lastFailAt: null },
    inFlight: false,
  }));
  const held = new HeldConfig();
  let csdsInFlight = false;
  let csdsError = "";
  const readHeld = (): void => {
    if (csdsInFlight) return;
    csdsInFlight = true;
    csds
      .fetch()
      .then(
        (r) => {
          held.update(r);
          csdsError = "";
        },
        (e: Error) => {
          // Said once per kind of failure, not every interval.
          if (e.message !== csdsError) process.stderr.write(`workload: CSDS: ${e.message}\n`);
          csdsError = e.message;
        },
      )
      .finally(() => (csdsInFlight = false));
  };
  const tick = (): void => {
    for (const t of targets) call(t);
    readHeld();
  };
  tick();
  const timer = setInterval(tick, intervalMs);

  const state = () => ({
    node: nodeId,
    link: relay.link,
    targets: Object.fromEntries(targets.map((t) => [t.host, t.state])),
    held: held.held,
    history: held.history,
  });
  const status = statusServer(state, relay);
  const boundStatus = await new Promise<number>((resolve, reject) => {
    status.once("error", reject);
    status.listen(statusPort, statusHost, () => resolve((status.address() as net.AddressInfo).port));
  });
  log(`client ${nodeId}: ADS ${adsHost}:${adsPort} through the relay on 127.0.0.1:${relayPort}`);
  log(`status http://${statusHost}:${boundStatus}`);

  const stop = (): void => {
    clearInterval(timer);
    for (const t of targets) t.client.close();
    csds.close();
    relay.close();
    status.close();
    status.closeAllConnections();
    process.exit(0);
  };
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
}

// ---------------------------------------------------------------------------

const USAGE = `usage:
  workload backend [--port 50051] [--host 0.0.0.0] [--name NAME]   (env PORT, POD_NAME)
  workload client --ads HOST:PORT --node-id ID --target HOST=/pkg.Service/Method [--target ...]
                  [--status-port 8080] [--status-host 0.0.0.0] [--interval-ms 200]
                  (env ADS_ADDRESS, NODE_ID or POD_NAME, TARGETS=a,b, STATUS_PORT, STATUS_HOST, INTERVAL_MS)`;

const [mode, ...rest] = process.argv.slice(2);
try {
  if (mode === "backend") await backend(rest);
  else if (mode === "client") await client(rest);
  else if (mode === "--help" || mode === "-h") log(USAGE);
  else fail(`the mode is backend or client (got ${JSON.stringify(mode ?? "")})\n${USAGE}`);
} catch (e) {
  fail((e as Error).message);
}
