// What the demo's xDS client (tools/demo-workloads/workload.ts, `client`
// mode) says on its status port, and the two calls the demo makes to it:
// GET /state, and POST /link to cut its link to the operator or put it back.
// The types restate the workload's answer (it imports nothing of the
// project's); readClientState checks the answer's outline so that a wrong
// port or an old image fails here, in words, not later as an undefined field.

import http from "node:http";

export type LinkState = "up" | "cut";

export type CallResult =
  | { readonly at: number; readonly ok: true; readonly backend: string }
  | { readonly at: number; readonly ok: false; readonly code: number; readonly details: string };

export interface TargetState {
  /** The method called on `xds:///HOST`, e.g. /api.Checkout/Get. */
  readonly method: string;
  readonly ok: number;
  readonly failed: number;
  readonly last: CallResult | null;
  /** Milliseconds since the epoch. */
  readonly lastOkAt: number | null;
  readonly lastFailAt: number | null;
}

export interface HeldChange {
  readonly at: number;
  readonly rdsVersion: string | null;
  /** EdgeRoute keys, `namespace/name`, sorted. */
  readonly routes: readonly string[];
}

export interface ClientState {
  /** The xDS node id the client sends. */
  readonly node: string;
  readonly link: LinkState;
  /** Per target host. */
  readonly targets: Readonly<Record<string, TargetState>>;
  /** What the client's xDS client holds, from its CSDS (not from the server). */
  readonly held: {
    /** Per type, the version_info of its most recently changed resource; null: none held. */
    readonly versions: {
      readonly lds: string | null;
      readonly rds: string | null;
      readonly cds: string | null;
      readonly eds: string | null;
    };
    /** The EdgeRoute keys of every route entry in the route configurations it holds, sorted. */
    readonly routes: readonly string[];
  };
  /** The last 200 changes of `held.routes` or of the RDS version, oldest first. */
  readonly history: readonly HeldChange[];
}

export interface StatusCallOptions {
  /** The whole call's deadline (default 3 s). */
  readonly timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 3_000;
const MAX_ANSWER = 4 * 1024 * 1024;

function request(
  method: "GET" | "POST",
  url: URL,
  body: string | undefined,
  timeoutMs: number,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, {
      method,
      headers: body === undefined ? {} : { "content-type": "application/json" },
    });
    const timer = setTimeout(() => req.destroy(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    req.on("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
    req.on("response", (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on("data", (c: Buffer) => {
        size += c.length;
        if (size > MAX_ANSWER) req.destroy(new Error(`answer over ${MAX_ANSWER} bytes`));
        else chunks.push(c);
      });
      res.on("end", () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") });
      });
      res.on("error", (e) => {
        clearTimeout(timer);
        reject(e);
      });
    });
    req.end(body);
  });
}

async function callStatus(
  what: string,
  method: "GET" | "POST",
  baseUrl: string,
  path: string,
  body: unknown,
  opts: StatusCallOptions,
): Promise<unknown> {
  const url = new URL(path, baseUrl);
  let answer: { status: number; text: string };
  try {
    answer = await request(
      method,
      url,
      body === undefined ? undefined : JSON.stringify(body),
      opts.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    );
  } catch (e) {
    throw new Error(`${what}: ${method} ${url.href}: ${(e as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(answer.text);
  } catch {
    throw new Error(
      `${what}: ${method} ${url.href}: HTTP ${answer.status}, not JSON: ${answer.text.slice(0, 200)}`,
    );
  }
  if (answer.status !== 200) {
    const error = (parsed as { error?: unknown } | null)?.error;
    throw new Error(`${what}: ${method} ${url.href}: HTTP ${answer.status}: ${String(error ?? answer.text)}`);
  }
  return parsed;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The client's state; `baseUrl` is its status port, e.g. http://10.88.0.12:8080. */
export async function readClientState(baseUrl: string, opts: StatusCallOptions = {}): Promise<ClientState> {
  const s = await callStatus("the demo client's state", "GET", baseUrl, "/state", undefined, opts);
  const held = isObject(s) ? s.held : undefined;
  const ok =
    isObject(s) &&
    typeof s.node === "string" &&
    (s.link === "up" || s.link === "cut") &&
    isObject(s.targets) &&
    isObject(held) &&
    isObject(held.versions) &&
    Array.isArray(held.routes) &&
    Array.isArray(s.history);
  if (!ok) throw new Error(`the demo client's state at ${baseUrl}: not the workload's /state shape`);
  return s as unknown as ClientState;
}

/** Cuts the client's link to the operator's ADS server, or puts it back; answers the new state. */
export async function setLink(
  baseUrl: string,
  state: LinkState,
  opts: StatusCallOptions = {},
): Promise<LinkState> {
  const r = await callStatus(`the demo client's link (${state})`, "POST", baseUrl, "/link", { state }, opts);
  const link = isObject(r) ? r.link : undefined;
  if (link !== state)
    throw new Error(`the demo client's link at ${baseUrl}: asked ${state}, it says ${String(link)}`);
  return state;
}
