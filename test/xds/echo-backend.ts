// Real gRPC backends on loopback for the xDS tests: each answers
// /echo.Echo/Call, /echo.Echo/CallMore and /other.Other/Call with its own
// name, so a test sees which backend a call reached; any other method is
// UNIMPLEMENTED.

import * as grpc from "@grpc/grpc-js";

const identity = (b: Buffer): Buffer => b;

export const ECHO_METHOD = "/echo.Echo/Call";
export const OTHER_METHOD = "/other.Other/Call";
/** A method whose path starts with ECHO_METHOD's: what tells a whole-path regex from a prefix. */
export const LONGER_METHOD = "/echo.Echo/CallMore";

function unary(path: string): grpc.MethodDefinition<Buffer, Buffer> {
  return {
    path,
    requestStream: false,
    responseStream: false,
    requestSerialize: identity,
    requestDeserialize: identity,
    responseSerialize: identity,
    responseDeserialize: identity,
  };
}

export interface EchoBackend {
  readonly name: string;
  readonly port: number;
  readonly calls: () => number;
  stop(): void;
}

export interface EchoBackendOptions {
  /** Answer each call this long after it came (for a client's timeouts); default at once. */
  readonly delayMs?: number;
  /** Fail this many first calls with this code (for a client's retries); default none. */
  readonly failFirst?: { readonly calls: number; readonly code: grpc.status };
}

export async function startEchoBackend(name: string, opts: EchoBackendOptions = {}): Promise<EchoBackend> {
  const server = new grpc.Server();
  let calls = 0;
  const answer = (callback: grpc.sendUnaryData<Buffer>): void => callback(null, Buffer.from(name));
  const reply: grpc.handleUnaryCall<Buffer, Buffer> = (_call, callback) => {
    calls++;
    if (opts.failFirst !== undefined && calls <= opts.failFirst.calls) {
      callback({ code: opts.failFirst.code, details: `${name} fails call ${calls}` });
      return;
    }
    if (opts.delayMs === undefined) answer(callback);
    else setTimeout(() => answer(callback), opts.delayMs);
  };
  server.addService(
    { Call: unary(ECHO_METHOD), CallMore: unary(LONGER_METHOD) },
    { Call: reply, CallMore: reply },
  );
  server.addService({ Call: unary(OTHER_METHOD) }, { Call: reply });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  return { name, port, calls: () => calls, stop: () => server.forceShutdown() };
}

/** A unary call that answers the backend's name, or the error's code and text. */
export function callEcho(
  client: grpc.Client,
  opts: { method?: string; headers?: Record<string, string>; deadlineMs?: number } = {},
): Promise<{ ok: true; backend: string } | { ok: false; code: number; details: string }> {
  const metadata = new grpc.Metadata();
  for (const [k, v] of Object.entries(opts.headers ?? {})) metadata.set(k, v);
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      opts.method ?? ECHO_METHOD,
      identity,
      identity,
      Buffer.alloc(0),
      metadata,
      { deadline: Date.now() + (opts.deadlineMs ?? 5_000) },
      (err, value) => {
        if (err) resolve({ ok: false, code: err.code, details: err.details });
        else resolve({ ok: true, backend: (value ?? Buffer.alloc(0)).toString() });
      },
    );
  });
}
