// One attack on the operator's ports, in a process of its own so its work does
// not slow the probe that measures the server (abuse.bench.ts). Each runs for
// at most SECONDS and prints one JSON line of what the server did to it.
//
//   delta-names  HOST ADS_PORT CA_FILE   one Delta stream subscribing to 1,000,000
//                                        route-configuration names, 100,000 a request
//   delta-streams HOST ADS_PORT CA_FILE  64 Delta streams from one address, each
//                                        subscribing to 9,000 route-configuration names
//   idle-ads     HOST ADS_PORT           12,000 idle TCP connections to the ADS port
//   idle-https   HOST HTTPS_PORT CA_FILE 12,000 TLS connections to the HTTPS port, no request
//   slow-body    HOST HTTPS_PORT CA_FILE five chunked POSTs to /validate trickling 21 MB each
//
// Connections come from 127.0.0.2-127.0.0.201 (every 127/8 address is this
// host's on Linux), so a per-address cap alone does not stop them.

import { readFileSync } from "node:fs";
import https from "node:https";
import { connect, type Socket } from "node:net";
import tls from "node:tls";
import * as grpc from "@grpc/grpc-js";
import { TYPE_URL } from "../src/envoy/envoy-resources.js";
import { deltaStream } from "../test/xds/raw-ads-client.js";

const SECONDS = Number(process.env.SECONDS ?? 20);
const CONNECTIONS = Number(process.env.CONNECTIONS ?? 12_000);
const deadline = Date.now() + SECONDS * 1000;
const source = (i: number) => `127.0.0.${2 + (i % 200)}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function report(o: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(o)}\n`);
}

async function deltaNames(host: string, port: number, ca: string): Promise<void> {
  const client = new grpc.Client(`${host}:${port}`, grpc.credentials.createSsl(Buffer.from(ca)), {
    "grpc.max_receive_message_length": 256 * 1024 * 1024,
  });
  const s = deltaStream(client);
  let ended: { code?: number; details?: string } | undefined;
  const t0 = Date.now();
  s.call.on("error", (e: grpc.ServiceError) => (ended = { code: e.code, details: e.details.slice(0, 200) }));
  s.send({ node: { id: "attacker", cluster: "x" }, type_url: TYPE_URL.routeConfiguration });
  let sent = 0;
  for (let batch = 0; batch < 10 && !ended && Date.now() < deadline; batch++) {
    const names = Array.from({ length: 100_000 }, (_, i) => `edge/h${batch * 100_000 + i}.attack.example`);
    s.send({ type_url: TYPE_URL.routeConfiguration, resource_names_subscribe: names });
    sent += names.length;
    await sleep(200);
  }
  while (!ended && Date.now() < deadline) await sleep(100);
  report({ attack: "delta-names", sent, endedAfterMs: ended ? Date.now() - t0 : undefined, ...ended });
  s.end();
  client.close();
}

async function deltaStreams(host: string, port: number, ca: string): Promise<void> {
  const outcomes: Record<string, number> = {};
  const note = (k: string) => (outcomes[k] = (outcomes[k] ?? 0) + 1);
  const clients: grpc.Client[] = [];
  for (let k = 0; k < 64 && Date.now() < deadline; k++) {
    // A connection of its own each (no shared subchannel), all from the one address 127.0.0.1.
    const client = new grpc.Client(`${host}:${port}`, grpc.credentials.createSsl(Buffer.from(ca)), {
      "grpc.max_receive_message_length": 256 * 1024 * 1024,
      "grpc.use_local_subchannel_pool": 1,
    });
    clients.push(client);
    const s = deltaStream(client);
    const names = Array.from({ length: 9_000 }, (_, i) => `edge/s${k}-${i}.attack.example`);
    const outcome = new Promise<string>((resolve) => {
      s.call.on("error", (e: grpc.ServiceError) => resolve(grpc.status[e.code] ?? String(e.code)));
      s.next(10_000).then(
        () => resolve("served"),
        () => resolve("no answer"),
      );
    });
    s.send({
      node: { id: `attacker-${k}`, cluster: "x" },
      type_url: TYPE_URL.routeConfiguration,
      resource_names_subscribe: names,
    });
    note(await outcome);
  }
  while (Date.now() < deadline) await sleep(200);
  report({ attack: "delta-streams", streams: clients.length, outcomes });
  for (const c of clients) c.close();
}

async function idle(host: string, port: number, ca: string | undefined): Promise<void> {
  const sockets: Socket[] = [];
  let opened = 0;
  let closedByServer = 0;
  let failed = 0;
  const one = (i: number) =>
    new Promise<void>((resolve) => {
      const onUp = () => {
        opened++;
        resolve();
      };
      const raw = connect({ host, port, localAddress: source(i) }, ca ? undefined : onUp);
      const s: Socket = ca ? tls.connect({ socket: raw, ca }, onUp) : raw;
      s.on("error", () => {
        failed++;
        resolve();
      });
      s.on("close", () => closedByServer++);
      s.resume();
      sockets.push(s);
    });
  // 200 at a time: a flood, not one burst the kernel's backlog drops.
  for (let i = 0; i < CONNECTIONS && Date.now() < deadline; i += 200)
    await Promise.all(Array.from({ length: Math.min(200, CONNECTIONS - i) }, (_, k) => one(i + k)));
  const up = Date.now();
  while (Date.now() < deadline) await sleep(200);
  const open = sockets.filter((s) => !s.destroyed).length;
  report({
    attack: ca ? "idle-https" : "idle-ads",
    tried: CONNECTIONS,
    opened,
    failed,
    closedByServer,
    openAtEnd: open,
    heldMs: Date.now() - up,
  });
  for (const s of sockets) s.destroy();
}

async function slowBody(host: string, port: number, ca: string): Promise<void> {
  const agent = new https.Agent({ ca, keepAlive: false, maxSockets: Infinity });
  const statuses: (number | string)[] = [];
  const chunk = Buffer.alloc(64 * 1024, " ");
  const one = (i: number) =>
    new Promise<void>((resolve) => {
      const req = https.request(
        {
          host,
          port,
          path: "/validate",
          method: "POST",
          agent,
          localAddress: source(i),
          headers: { "content-type": "application/json", "transfer-encoding": "chunked" },
        },
        (res) => {
          statuses.push(res.statusCode ?? 0);
          res.resume();
          res.on("end", resolve);
        },
      );
      req.on("error", (e) => {
        statuses.push(e.message.slice(0, 60));
        resolve();
      });
      req.write(
        '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"x","object":{"pad":"',
      );
      let sent = 0;
      // 21 MB over the attack's seconds: about 1 MB/s per connection.
      const perTick = Math.ceil((21 * 1024 * 1024) / (SECONDS * 10));
      const tick = setInterval(() => {
        if (Date.now() > deadline || sent > 21 * 1024 * 1024 || req.destroyed) {
          clearInterval(tick);
          if (!req.destroyed) req.end('"}}}');
          return;
        }
        for (let n = 0; n < perTick; n += chunk.length) req.write(chunk);
        sent += perTick;
      }, 100);
    });
  // Again and again: a trickler that is cut off comes back.
  let rounds = 0;
  while (Date.now() < deadline) {
    rounds++;
    await Promise.all([0, 1, 2, 3, 4].map((i) => one(i + rounds * 5)));
  }
  const counts: Record<string, number> = {};
  for (const s of statuses) counts[String(s)] = (counts[String(s)] ?? 0) + 1;
  report({ attack: "slow-body", rounds, answers: counts });
}

const [kind, host = "127.0.0.1", portText = "0", caFile] = process.argv.slice(2);
const port = Number(portText);
const ca = caFile ? readFileSync(caFile, "utf8") : undefined;
const attacks: Record<string, () => Promise<void>> = {
  "delta-names": () => deltaNames(host, port, ca ?? ""),
  "delta-streams": () => deltaStreams(host, port, ca ?? ""),
  "idle-ads": () => idle(host, port, undefined),
  "idle-https": () => idle(host, port, ca),
  "slow-body": () => slowBody(host, port, ca ?? ""),
};
const attack = kind ? attacks[kind] : undefined;
if (!attack) {
  process.stderr.write(`usage: abuse-attack.ts ${Object.keys(attacks).join("|")} HOST PORT [CA_FILE]\n`);
  process.exit(2);
}
attack().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
