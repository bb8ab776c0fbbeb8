// How the server stops on SIGTERM without failing a request that was already
// on its way (an admission that fails with EOF is a failed kubectl apply, with
// failurePolicy Fail). In order:
//   1. readiness fails (the caller does that), and every response from now on
//      says Connection: close, so pooled clients reconnect (kube-proxy then
//      picks another pod) instead of sending more on this one;
//   2. the listener keeps accepting for `delayMs`: endpoints and kube-proxy
//      rules take seconds to drop a terminating pod, and a connection refused
//      meanwhile is a failed request;
//   3. the listener closes; requests in flight finish;
//   4. for up to `idleWaitMs` the clients may still use, and then close, their
//      kept-alive connections themselves: the apiserver pools webhook
//      connections by the Service's name, so it keeps sending on the ones it
//      holds to a pod whose endpoint is gone, and each one's next answer says
//      Connection: close (found by the real cluster's helm-upgrade e2e);
//   5. only then are idle keep-alive connections closed; whatever still runs
//      at `drainMs` after the listener closed is cut.
// Node's own server.close() closes idle connections at once (Node 19+), in
// step 3, where a client may have just written a request on one: hence this.

import type { Server as HttpServer, IncomingMessage, ServerResponse } from "node:http";
import net from "node:net";

export interface GracefulStopOptions {
  /** Step 2: how long the listener keeps accepting after the stop begins. */
  delayMs: number;
  /** Step 4: how long clients may keep using, then close, their kept-alive connections. */
  idleWaitMs?: number;
  /** Step 3: how long requests in flight may run after the listener closed. */
  drainMs: number;
}

export interface GracefulStop {
  /** Call first thing for every request: counts it, and marks its response when stopping. */
  track(req: IncomingMessage, res: ServerResponse): void;
  readonly stopping: boolean;
  readonly inFlight: number;
  stop(opts: GracefulStopOptions): Promise<void>;
}

export function gracefulStop(server: HttpServer): GracefulStop {
  let stopping = false;
  let inFlight = 0;
  let idle: (() => void) | undefined;
  const open = new Set<net.Socket>();
  server.on("connection", (socket: net.Socket) => {
    open.add(socket);
    socket.once("close", () => open.delete(socket));
  });

  return {
    get stopping() {
      return stopping;
    },
    get inFlight() {
      return inFlight;
    },
    track(_req, res) {
      inFlight++;
      if (stopping) res.setHeader("Connection", "close");
      res.once("close", () => {
        inFlight--;
        if (inFlight === 0) idle?.();
      });
    },
    async stop({ delayMs, idleWaitMs = 0, drainMs }) {
      stopping = true;
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      // The listening socket only: net.Server's close, not http.Server's, which also closes idle connections.
      const closed = new Promise<void>((resolve) => net.Server.prototype.close.call(server, () => resolve()));
      const cut = setTimeout(() => server.closeAllConnections(), drainMs);
      cut.unref();
      if (inFlight > 0) await new Promise<void>((resolve) => (idle = resolve));
      const deadline = Date.now() + idleWaitMs;
      while (open.size > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
      server.closeIdleConnections();
      await closed;
      clearTimeout(cut);
    },
  };
}
