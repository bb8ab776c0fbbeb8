// @grpc/grpc-js-xds as a process of its own, driven by JSON lines on stdin
// as hack/xds-go's client is: {"id":1,"call":{"target":"xds:///HOST",
// "method":"/echo.Echo/Call","timeoutMs":2000}} answers
// {"id":1,"ok":true,"backend":"blue-1","ms":3.1} or
// {"id":1,"ok":false,"code":"Unavailable","message":"...","ms":1.2};
// {"id":2,"close":"xds:///HOST"} closes that channel. Its first line is
// {"ready":true}. The bootstrap comes from GRPC_XDS_BOOTSTRAP_CONFIG (read
// once per process); EDGE_DIAL_MAP ("FROM=TO,...") maps backend addresses
// (dial-map.ts). It ends when stdin ends, or after 15 minutes at most.
//
// Usage: GRPC_XDS_BOOTSTRAP_CONFIG='{...}' node --import tsx xds-call-main.ts

import { createInterface } from "node:readline";
import * as grpc from "@grpc/grpc-js";
import { register } from "@grpc/grpc-js-xds";
import { installDialMap } from "./dial-map.js";

const identity = (b: Buffer): Buffer => b;

// Before any channel: grpc-js dials through net.connect.
const dialMap = process.env.EDGE_DIAL_MAP ?? "";
if (dialMap !== "") installDialMap(dialMap);
register();

const maxLifetime = setTimeout(() => {
  process.stderr.write("xds-call-main: ran 15 minutes, the most it may; exiting\n");
  process.exit(3);
}, 15 * 60_000);
maxLifetime.unref();

/** grpc-js's status names (UNAVAILABLE) as grpc-go spells them (Unavailable). */
function codeName(code: number): string {
  const name = grpc.status[code] ?? `Code(${code})`;
  return name
    .toLowerCase()
    .split("_")
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join("");
}

const channels = new Map<string, grpc.Client>();
function channel(target: string): grpc.Client {
  let c = channels.get(target);
  if (c === undefined) {
    c = new grpc.Client(target, grpc.credentials.createInsecure());
    channels.set(target, c);
  }
  return c;
}

function write(v: unknown): void {
  process.stdout.write(`${JSON.stringify(v)}\n`);
}

interface Command {
  id: number;
  call?: { target: string; method?: string; timeoutMs?: number; headers?: Record<string, string> };
  close?: string;
}

function call(id: number, c: NonNullable<Command["call"]>): Promise<void> {
  const start = performance.now();
  const metadata = new grpc.Metadata();
  for (const [k, v] of Object.entries(c.headers ?? {})) metadata.set(k, v);
  return new Promise((resolve) => {
    channel(c.target).makeUnaryRequest(
      c.method ?? "/echo.Echo/Call",
      identity,
      identity,
      Buffer.alloc(0),
      metadata,
      { deadline: Date.now() + (c.timeoutMs ?? 5_000) },
      (err, value) => {
        const ms = performance.now() - start;
        if (err) write({ id, ok: false, code: codeName(err.code), message: err.details, ms });
        else write({ id, ok: true, backend: (value ?? Buffer.alloc(0)).toString(), ms });
        resolve();
      },
    );
  });
}

const running = new Set<Promise<void>>();
write({ ready: true });
for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  if (line.trim() === "") continue;
  let cmd: Command;
  try {
    cmd = JSON.parse(line) as Command;
  } catch (e) {
    write({ id: 0, ok: false, code: "InvalidArgument", message: `not a command: ${String(e)}` });
    continue;
  }
  if (cmd.call !== undefined) {
    const p = call(cmd.id, cmd.call);
    running.add(p);
    void p.then(() => running.delete(p));
  } else if (cmd.close !== undefined) {
    const c = channels.get(cmd.close);
    channels.delete(cmd.close);
    c?.close();
    write(
      c === undefined
        ? { id: cmd.id, ok: false, code: "NotFound", message: `no channel to ${cmd.close}` }
        : { id: cmd.id, ok: true },
    );
  } else write({ id: cmd.id, ok: false, code: "InvalidArgument", message: "a command has call or close" });
}
await Promise.all(running);
for (const c of channels.values()) c.close();
process.exit(0);
