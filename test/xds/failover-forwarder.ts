// A TCP forwarder on loopback in front of several ADS servers, as a Service in
// front of the server replicas is: each new connection goes to the first
// target that accepts it, so a client whose server died reconnects (its own
// reconnect logic) and lands on a live one. gRPC's xDS client takes one
// server address in its bootstrap and does not fall over to a second one.

import net from "node:net";

export interface FailoverForwarder {
  readonly port: number;
  /** Which target each open connection went to. */
  connections(): number[];
  close(): Promise<void>;
}

function connect(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, "127.0.0.1");
    s.once("connect", () => resolve(s));
    s.once("error", reject);
  });
}

export async function startFailoverForwarder(targets: readonly number[]): Promise<FailoverForwarder> {
  const open = new Map<net.Socket, number>();
  const server = net.createServer((inbound) => {
    inbound.pause();
    void (async () => {
      for (const port of targets) {
        try {
          const outbound = await connect(port);
          open.set(inbound, port);
          const end = () => {
            open.delete(inbound);
            inbound.destroy();
            outbound.destroy();
          };
          for (const s of [inbound, outbound]) {
            s.on("error", end);
            s.on("close", end);
          }
          inbound.pipe(outbound);
          outbound.pipe(inbound);
          inbound.resume();
          return;
        } catch {
          // Not listening (killed): try the next one.
        }
      }
      inbound.destroy();
    })();
  });
  const port = await new Promise<number>((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve((server.address() as net.AddressInfo).port)),
  );
  return {
    port,
    connections: () => [...open.values()],
    close: () =>
      new Promise((resolve) => {
        for (const s of open.keys()) s.destroy();
        server.close(() => resolve());
      }),
  };
}
