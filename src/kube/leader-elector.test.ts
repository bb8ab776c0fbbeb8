// The LeaderElector's timing, against a fake Lease store that keeps the
// apiserver's optimistic concurrency and can hang on cue (a real apiserver
// cannot be made to stall for exactly one candidate). Short durations keep it
// fast; every wait is bounded. Failover between processes against the real
// apiserver is in test/integration/watcher.test.ts.

import { afterEach, describe, expect, it } from "vitest";
import { silentLogger } from "../observability/logger.js";
import { apiError, FakeKube, notFound, type Call } from "../../test/fixtures/fake-kube.js";
import { LeaderElector, microTime, type Lease } from "./lease.js";

const LEASES = "/apis/coordination.k8s.io/v1/namespaces/edge/leases";
const PATH = `${LEASES}/watcher`;

/** One Lease with resourceVersions; `hang` stalls every request until it is lifted. */
class LeaseStore {
  lease: Lease | undefined;
  private rv = 1;
  hanging: (() => void)[] | undefined;
  /** When the lease was last written by the elector under test. */
  lastWrite = 0;

  kube(): FakeKube {
    const kube = new FakeKube();
    kube.intercept = (call: Call) => {
      if (this.hanging)
        return new Promise((_, reject) => this.hanging?.push(() => reject(new Error("hung up"))));
      return this.answer(call);
    };
    return kube;
  }

  hang(): void {
    this.hanging = [];
  }

  lift(): void {
    for (const cut of this.hanging ?? []) cut();
    this.hanging = undefined;
  }

  /** Another candidate writes the lease, as a successful take over would. */
  takenBy(holder: string): void {
    const spec = this.lease?.spec ?? {};
    const now = microTime(Date.now());
    this.write({
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: { name: "watcher", namespace: "edge" },
      spec: {
        ...spec,
        holderIdentity: holder,
        acquireTime: now,
        renewTime: now,
        leaseTransitions: (spec.leaseTransitions ?? 0) + 1,
      },
    });
  }

  private write(lease: Lease): Lease {
    this.lease = { ...lease, metadata: { ...lease.metadata, resourceVersion: String(++this.rv) } };
    return this.lease;
  }

  private async answer(call: Call): Promise<unknown> {
    if (call.method === "GET" && call.path === PATH) {
      if (!this.lease) throw notFound(PATH);
      return structuredClone(this.lease);
    }
    if (call.method === "POST" && call.path === LEASES) {
      if (this.lease) throw apiError(409, "AlreadyExists");
      this.lastWrite = Date.now();
      return this.write(call.body as Lease);
    }
    if (call.method === "PUT" && call.path === PATH) {
      const body = call.body as Lease;
      if (body.metadata.resourceVersion !== this.lease?.metadata.resourceVersion)
        throw apiError(409, "Conflict");
      this.lastWrite = Date.now();
      return this.write(body);
    }
    throw new Error(`the lease store does not answer ${call.method} ${call.path}`);
  }
}

const electors: LeaderElector[] = [];
let store: LeaseStore;
afterEach(async () => {
  store?.lift();
  await Promise.all(electors.splice(0).map((e) => e.stop()));
});

const DURATION = 1000;
const DEADLINE = 600;
const RETRY = 100;

function elector(identity: string, events: string[]): LeaderElector {
  const e = new LeaderElector({
    client: store.kube(),
    namespace: "edge",
    name: "watcher",
    identity,
    log: silentLogger(),
    leaseDurationMs: DURATION,
    renewDeadlineMs: DEADLINE,
    retryPeriodMs: RETRY,
    onStartedLeading: () => events.push(`started ${Date.now()}`),
    onStoppedLeading: () => events.push(`stopped ${Date.now()}`),
  });
  electors.push(e);
  return e;
}

async function until(what: string, cond: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const kinds = (events: string[]): string[] => events.map((e) => e.split(" ")[0] as string);
const timeOf = (event: string | undefined): number => Number(event?.split(" ")[1]);

describe("LeaderElector", () => {
  it("takes a free lease, renews it every retry period, and empties the holder on stop", async () => {
    store = new LeaseStore();
    const events: string[] = [];
    const e = elector("a", events);
    e.start();
    await until("leading", () => e.isLeader());
    const first = store.lease?.spec?.renewTime;
    await until("a renewal", () => store.lease?.spec?.renewTime !== first);
    expect(store.lease?.spec?.holderIdentity).toBe("a");
    await e.stop();
    expect(kinds(events)).toEqual(["started", "stopped"]);
    expect(store.lease?.spec?.holderIdentity).toBeUndefined();
  });

  it("stops leading when renewals hang past the renew deadline, before the lease could pass to anyone else", async () => {
    store = new LeaseStore();
    const events: string[] = [];
    const e = elector("a", events);
    e.start();
    await until("leading", () => e.isLeader());
    await until("a renewal", () => store.lastWrite > 0);
    store.hang();
    const lastRenewal = store.lastWrite;
    await until("leadership to end", () => !e.isLeader(), 3000);
    const stoppedAfter = timeOf(events.find((x) => x.startsWith("stopped"))) - lastRenewal;
    // Not before the deadline (a slow renewal is not a lost one), and well
    // before another candidate may take the lease (the full duration).
    expect(stoppedAfter).toBeGreaterThanOrEqual(DEADLINE);
    expect(stoppedAfter).toBeLessThan(DURATION);
    expect(kinds(events)).toEqual(["started", "stopped"]);
  });

  it("steps down when another holder took the lease, and takes it back only once that holder has been silent for the lease duration", async () => {
    store = new LeaseStore();
    const events: string[] = [];
    const e = elector("a", events);
    e.start();
    await until("leading", () => e.isLeader());
    store.takenBy("b");
    const takenAt = Date.now();
    await until("stepping down", () => !e.isLeader(), 2000);
    expect(e.holder).toBe("b");
    // b never renews: a takes over once it has seen no change for b's lease duration.
    await until("leading again", () => e.isLeader(), 5000);
    const back = timeOf(events.filter((x) => x.startsWith("started"))[1]);
    expect(back - takenAt).toBeGreaterThanOrEqual(DURATION);
    expect(kinds(events)).toEqual(["started", "stopped", "started"]);
    expect(store.lease?.spec?.holderIdentity).toBe("a");
    expect(store.lease?.spec?.leaseTransitions).toBe(2);
  });

  it("never leads while another holder keeps renewing", async () => {
    store = new LeaseStore();
    store.takenBy("b");
    const events: string[] = [];
    const e = elector("a", events);
    e.start();
    const renewing = setInterval(() => {
      const lease = store.lease as Lease;
      store.lease = {
        ...lease,
        spec: { ...lease.spec, renewTime: microTime(Date.now()) },
        metadata: { ...lease.metadata, resourceVersion: `${lease.metadata.resourceVersion}x` },
      };
    }, RETRY);
    try {
      await new Promise((r) => setTimeout(r, DURATION * 2));
      expect(e.isLeader()).toBe(false);
      expect(events).toEqual([]);
    } finally {
      clearInterval(renewing);
    }
  });
});
