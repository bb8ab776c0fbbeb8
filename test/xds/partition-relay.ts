// A TCP relay on loopback that can stand for a network partition: cut, bytes
// stop both ways and no socket is closed (no FIN reaches either side, as when
// a link or a node goes away); up, held connections flow again, and a pair
// whose server side closed meanwhile is closed on the client's side too.

import net from "node:net";

export interface PartitionRelay {
  readonly port: number;
  cut(): void;
  up(): void;
  close(): Promise<void>;
}

interface Pair {
  readonly inbound: net.Socket;
  outbound: net.Socket | undefined;
  serverGone: boolean;
}

export async function startPartitionRelay(target: number): Promise<PartitionRelay> {
  const pairs = new Set<Pair>();
  let isCut = false;

  const join = (pair: Pair): void => {
    const outbound = net.connect(target, "127.0.0.1");
    pair.outbound = outbound;
    outbound.on("error", () => undefined);
    pair.inbound.on("error", () => undefined);
    outbound.on("close", () => {
      pair.serverGone = true;
      if (!isCut) pair.inbound.destroy();
    });
    pair.inbound.on("close", () => {
      pairs.delete(pair);
      if (!isCut) outbound.destroy();
    });
    pair.inbound.pipe(outbound);
    outbound.pipe(pair.inbound);
  };

  const server = net.createServer((inbound) => {
    const pair: Pair = { inbound, outbound: undefined, serverGone: false };
    pairs.add(pair);
    // A connection made while cut waits, unanswered, for the link to come back.
    if (isCut) inbound.pause();
    else join(pair);
  });
  const port = await new Promise<number>((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve((server.address() as net.AddressInfo).port)),
  );
  return {
    port,
    cut() {
      isCut = true;
      for (const p of pairs) {
        p.inbound.unpipe();
        p.outbound?.unpipe();
        p.inbound.pause();
        p.outbound?.pause();
      }
    },
    up() {
      isCut = false;
      for (const p of [...pairs]) {
        if (p.outbound === undefined) {
          p.inbound.resume();
          join(p);
        } else if (p.serverGone) {
          p.inbound.destroy();
        } else {
          p.inbound.pipe(p.outbound);
          p.outbound.pipe(p.inbound);
          p.inbound.resume();
          p.outbound.resume();
        }
      }
    },
    close: () =>
      new Promise((resolve) => {
        for (const p of pairs) {
          p.inbound.destroy();
          p.outbound?.destroy();
        }
        server.close(() => resolve());
      }),
  };
}
