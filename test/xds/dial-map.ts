// A dial map for a Node gRPC client in a process of its own: backends on
// loopback are published in EndpointSlices under TEST-NET-1 addresses
// (192.0.2.x, never routed; the apiserver refuses loopback ones), and the
// client's TCP connections to exactly those addresses go to the address the
// map names instead. Any other address but loopback (the ADS server) is
// refused. grpc-js dials every subchannel with `net.connect({host, port})`,
// looked up on the module at call time, so replacing it here is enough.
//
// The map's form: "FROM=TO,FROM=TO" (IP addresses), as hack/xds-go's
// XDS_GO_DIAL_MAP.

import net from "node:net";

export function parseDialMap(spec: string): Map<string, string> {
  const m = new Map<string, string>();
  for (const pair of spec.split(",")) {
    const [from, to, ...rest] = pair.trim().split("=");
    if (rest.length > 0 || !from || !to || net.isIP(from) === 0 || net.isIP(to) === 0)
      throw new Error(`dial map: ${JSON.stringify(pair)} is not FROM=TO with two IP addresses`);
    m.set(from, to);
  }
  return m;
}

/** Replaces net.connect and net.createConnection in this process; for a child process only. */
export function installDialMap(spec: string): void {
  const map = parseDialMap(spec);
  const original = net.connect;
  const mapped = function (this: unknown, ...args: unknown[]): net.Socket {
    const first = args[0];
    if (typeof first === "object" && first !== null && "host" in first && "port" in first) {
      const host = String((first as { host: unknown }).host);
      const to = map.get(host);
      if (to !== undefined) args[0] = { ...first, host: to };
      else if (host !== "127.0.0.1" && host !== "localhost" && host !== "::1") {
        const socket = new net.Socket();
        const port = String((first as { port: unknown }).port);
        process.nextTick(() =>
          socket.destroy(new Error(`dial map: ${host}:${port} is not in the map (${spec})`)),
        );
        return socket;
      }
    }
    return (original as (...a: unknown[]) => net.Socket).apply(this, args);
  };
  (net as { connect: unknown }).connect = mapped;
  (net as { createConnection: unknown }).createConnection = mapped;
}
