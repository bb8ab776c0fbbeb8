// The xds sink: DataPlane.program(snapshot) serves the snapshot over ADS and
// answers once the connected clients have answered it, so that `Programmed`
// says what the clients hold, not what was offered (docs/architecture.md):
//  - every connected client ACKed it → taken;
//  - a client NACKed it → Rejected, with the client's words; clients keep the
//    version they had, so nothing that served stops serving;
//  - no client connected → NoDataPlane: nothing serves any route, and so
//    nothing still serves a deleted one (its finalizer may go);
//  - no answer from every client within the wait → Pending.

import type { Snapshot } from "../../envoy/snapshot.js";
import type { Logger } from "../../observability/logger.js";
import { errorMessage, type DataPlane, type ProgramOptions, type ProgramResult } from "../dataplane.js";
import { judgeRevision, type ReadRevision } from "../read-revision.js";
import { AdsServer } from "./ads-server.js";
import type { AdsTls } from "./ads-tls.js";
import { XdsEncoder } from "./resources.js";
import type { StreamReport } from "./stream.js";

export interface XdsDataPlaneOptions {
  /** Absent: plaintext. */
  readonly tls?: AdsTls;
  /** How long program() waits for every client's answer (default 10 s). */
  readonly ackTimeoutMs?: number;
  readonly log?: Logger;
}

export const DEFAULT_ACK_TIMEOUT_MS = 10_000;

export class XdsDataPlane implements DataPlane {
  readonly kind = "xds";
  readonly keepsServing = true;
  readonly server: AdsServer;
  private readonly encoder = new XdsEncoder();
  /** When the inputs of the snapshot served were read. */
  private held: ReadRevision | undefined;

  constructor(private readonly opts: XdsDataPlaneOptions = {}) {
    this.server = new AdsServer({
      ...(opts.tls ? { tls: opts.tls } : {}),
      ...(opts.log ? { log: opts.log } : {}),
    });
  }

  /** Starts the ADS server; answers the bound port. */
  listen(host: string, port: number): Promise<number> {
    return this.server.listen(host, port);
  }

  stop(): void {
    this.server.stop();
  }

  // No await between the revision check and serve(): one process, one step.
  async program(snapshot: Snapshot, opts: ProgramOptions = {}): Promise<ProgramResult> {
    opts.signal?.throwIfAborted();
    const { version } = snapshot;
    const same = this.server.current()?.version === version;
    // Never go back to a snapshot read before the one served (issue 12 item 2).
    const verdict = judgeRevision(opts.read, this.held, same);
    if (!verdict.take) return { ok: false, version, reason: "Superseded", message: verdict.message };
    let pushed = false;
    if (!same) {
      try {
        this.server.serve(this.encoder.encode(snapshot));
      } catch (err) {
        return {
          ok: false,
          version,
          reason: "PushFailed",
          message: "the snapshot could not be encoded for xDS (details in the operator's log)",
          detail: `encoding snapshot ${version}: ${errorMessage(err)}`,
        };
      }
      pushed = true;
    }
    this.held = verdict.record;
    const timeoutMs = this.opts.ackTimeoutMs ?? DEFAULT_ACK_TIMEOUT_MS;
    const settled = await this.server.settled(timeoutMs);
    switch (settled.kind) {
      case "synced":
        return { ok: true, version, pushed };
      case "none":
        return {
          ok: false,
          version,
          reason: "NoDataPlane",
          message: "no xDS client is connected: nothing serves this route yet",
          detail: `no xDS client is connected to take snapshot ${version}`,
          unserved: true,
        };
      case "rejected":
        return { ok: false, version, reason: "Rejected", message: settled.message, detail: settled.message };
      case "pending":
        return {
          ok: false,
          version,
          reason: "Pending",
          message: `not every connected xDS client ACKed the version that holds this route within ${timeoutMs / 1000}s`,
          detail: `snapshot ${version} not ACKed by every connected xDS client within ${timeoutMs / 1000}s`,
        };
    }
  }

  /** The version every connected client holds; undefined with none connected, or while they differ. */
  async current(): Promise<string | undefined> {
    return this.server.verdict().kind === "synced" ? this.server.current()?.version : undefined;
  }

  clients(): StreamReport[] {
    return this.server.clients();
  }
}
