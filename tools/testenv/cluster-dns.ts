// The cluster's DNS: a small responder on the node IP, port 53, that answers
// A queries for `<service>.<namespace>.svc.cluster.local` with the Service's
// ClusterIP, read from the apiserver. Pods reach Services by name as in any
// cluster (the chart's watcher calls https://<fullname>.<ns>.svc/reconcile).
// Nothing else is resolved and nothing is forwarded: traffic stays here.

import dgram from "node:dgram";

export const CLUSTER_DOMAIN = "cluster.local";

/** The ClusterIP of a Service, or undefined when there is none (headless, or no such Service). */
export type ServiceLookup = (name: string, namespace: string) => Promise<string | undefined>;

export interface ClusterDns {
  stop(): Promise<void>;
}

const TYPE_A = 1;
const CLASS_IN = 1;
const RCODE_NXDOMAIN = 3;
const RCODE_FORMERR = 1;

interface Question {
  name: string;
  type: number;
  /** The question section as received, copied into the answer. */
  raw: Buffer;
}

function readQuestion(msg: Buffer): Question | undefined {
  if (msg.length < 12 || msg.readUInt16BE(4) !== 1) return undefined;
  const labels: string[] = [];
  let at = 12;
  for (;;) {
    const len = msg[at];
    if (len === undefined || len > 63 || at + 1 + len > msg.length) return undefined;
    at += 1;
    if (len === 0) break;
    labels.push(msg.toString("latin1", at, at + len).toLowerCase());
    at += len;
  }
  if (at + 4 > msg.length) return undefined;
  return { name: labels.join("."), type: msg.readUInt16BE(at), raw: msg.subarray(12, at + 4) };
}

function reply(query: Buffer, q: Question | undefined, rcode: number, ip?: string): Buffer {
  const header = Buffer.alloc(12);
  header.writeUInt16BE(query.length >= 2 ? query.readUInt16BE(0) : 0, 0);
  const rd = query.length >= 3 ? (query[2] ?? 0) & 0x01 : 0;
  header[2] = 0x80 | 0x04 | rd; // QR, AA, RD copied
  header[3] = rcode;
  header.writeUInt16BE(q ? 1 : 0, 4);
  header.writeUInt16BE(ip ? 1 : 0, 6);
  const parts: Buffer[] = [header];
  if (q) parts.push(q.raw);
  if (ip) {
    const answer = Buffer.alloc(16);
    answer.writeUInt16BE(0xc00c, 0); // the name: a pointer to the question's
    answer.writeUInt16BE(TYPE_A, 2);
    answer.writeUInt16BE(CLASS_IN, 4);
    answer.writeUInt32BE(5, 6); // TTL: Services come and go during tests
    answer.writeUInt16BE(4, 10);
    ip.split(".").forEach((o, i) => (answer[12 + i] = Number(o)));
    parts.push(answer);
  }
  return Buffer.concat(parts);
}

/** `svc.ns.svc.cluster.local` → [svc, ns]; anything else → undefined. */
export function serviceOf(name: string): [string, string] | undefined {
  const suffix = `.svc.${CLUSTER_DOMAIN}`;
  if (!name.endsWith(suffix)) return undefined;
  const parts = name.slice(0, -suffix.length).split(".");
  return parts.length === 2 && parts[0] && parts[1] ? [parts[0], parts[1]] : undefined;
}

/** Answers one query: exported for the unit test. */
export async function answer(query: Buffer, lookup: ServiceLookup): Promise<Buffer> {
  const q = readQuestion(query);
  if (!q) return reply(query, undefined, RCODE_FORMERR);
  const svc = serviceOf(q.name);
  const ip = svc ? await lookup(svc[0], svc[1]).catch(() => undefined) : undefined;
  if (!ip || !/^\d+\.\d+\.\d+\.\d+$/.test(ip)) return reply(query, q, RCODE_NXDOMAIN);
  // The name exists: an AAAA (or any other type) query gets no records, not NXDOMAIN.
  return reply(query, q, 0, q.type === TYPE_A ? ip : undefined);
}

export function startClusterDns(address: string, lookup: ServiceLookup, port = 53): Promise<ClusterDns> {
  const socket = dgram.createSocket("udp4");
  socket.on("message", (msg, peer) => {
    void answer(msg, lookup).then((r) => socket.send(r, peer.port, peer.address));
  });
  return new Promise((resolve, reject) => {
    socket.once("error", reject);
    socket.bind(port, address, () => {
      socket.off("error", reject);
      resolve({ stop: () => new Promise((r) => socket.close(() => r())) });
    });
  });
}
