import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SNAPSHOT_KEY } from "../reconcile/protocol.js";
import { keyEvents } from "./key-events.js";
import { WorkQueue } from "./work-queue.js";

const route = (name: string, service: string, path = "/") => ({
  metadata: { namespace: "shop", name, resourceVersion: "1" },
  spec: { rules: [{ matches: [{ path: { value: path } }], backends: [{ name: service, port: 80 }] }] },
});

/** What the events put in a real work queue (no snapshot hold-off), in the order a worker takes them. */
function drain(queue: WorkQueue): string[] {
  const out: string[] = [];
  for (;;) {
    const k = queue.tryGet("route") ?? queue.tryGet("snapshot");
    if (k === undefined) return out;
    out.push(k);
    queue.done(k);
  }
}

const newQueue = () => new WorkQueue({ snapshotHoldOffMs: 0 });

describe("keyEvents", () => {
  it("turns what the first lists find into the snapshot key alone, whatever the routes and Services", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(
          fc.tuple(fc.stringMatching(/^[a-z][a-z0-9-]{0,12}$/), fc.integer({ min: 0, max: 5 })),
          {
            selector: ([name]) => name,
            maxLength: 60,
          },
        ),
        (routes) => {
          const queue = newQueue();
          const events = keyEvents(queue);
          for (const [name, svc] of routes) events.onRoute("ADDED", route(name, `svc-${svc}`), true);
          for (let s = 0; s < 6; s++) events.onService(`shop/svc-${s}`, true);
          expect(drain(queue)).toEqual(routes.length > 0 ? [SNAPSHOT_KEY] : []);
        },
      ),
    );
  });

  it("after the lists, a route seen created or changed is its own key and the snapshot's", () => {
    const queue = newQueue();
    const events = keyEvents(queue);
    events.onRoute("ADDED", route("a", "web"), true);
    drain(queue);
    events.onRoute("ADDED", route("b", "web"), false);
    expect(drain(queue)).toEqual(["shop/b", SNAPSHOT_KEY]);
    events.onRoute("MODIFIED", route("a", "web", "/new"), false);
    expect(drain(queue)).toEqual(["shop/a", SNAPSHOT_KEY]);
    // Deleted with no finalizer to hold it: the snapshot key alone (a route key would find it gone).
    events.onRoute("DELETED", route("a", "web"), false);
    expect(drain(queue)).toEqual([SNAPSHOT_KEY]);
  });

  it("a delete is one snapshot key: the deletionTimestamp queues it, the finalizer going and the object going queue nothing", () => {
    const queue = newQueue();
    const events = keyEvents(queue);
    const live = {
      ...route("a", "web"),
      metadata: { ...route("a", "web").metadata, finalizers: ["net.10xdev.io/deprogram"] },
    };
    events.onRoute("ADDED", live, true);
    drain(queue);
    const deleting = { ...live, metadata: { ...live.metadata, deletionTimestamp: "2026-12-02T00:00:00Z" } };
    events.onRoute("MODIFIED", deleting, false);
    expect(drain(queue)).toEqual([SNAPSHOT_KEY]);
    const released = { ...deleting, metadata: { ...deleting.metadata, finalizers: [] } };
    events.onRoute("MODIFIED", released, false);
    events.onRoute("DELETED", released, false);
    expect(drain(queue)).toEqual([]);
    // Its name used again: a new route, keyed as any other.
    events.onRoute("ADDED", live, false);
    expect(drain(queue)).toEqual(["shop/a", SNAPSHOT_KEY]);
    // A route first seen terminating (a watcher started mid-delete) still gets the snapshot key.
    events.onRoute("ADDED", { ...deleting, metadata: { ...deleting.metadata, name: "b" } }, true);
    expect(drain(queue)).toEqual([SNAPSHOT_KEY]);
  });

  it("past the route-key budget a change is left to the snapshot key, which every change queues", () => {
    const queue = newQueue();
    let tokens = 2;
    let folded = 0;
    const events = keyEvents(queue, {
      budget: { tryTake: () => tokens-- > 0 },
      onFolded: () => folded++,
    });
    for (const n of ["a", "b", "c", "d"]) events.onRoute("ADDED", route(n, "web"), false);
    // Two route keys spent the budget; the snapshot key, queued once, judges all four.
    expect(drain(queue)).toEqual(["shop/a", "shop/b", SNAPSHOT_KEY]);
    expect(folded).toBe(2);
    events.onService("shop/web", false);
    expect(drain(queue)).toEqual([SNAPSHOT_KEY]);
    expect(folded).toBe(6);
  });

  it("a status-only change (same spec) is no work, listed or not", () => {
    const queue = newQueue();
    const events = keyEvents(queue);
    events.onRoute("ADDED", route("a", "web"), true);
    drain(queue);
    const statusWritten = { ...route("a", "web"), status: { conditions: [] } };
    events.onRoute("MODIFIED", statusWritten, false);
    expect(drain(queue)).toEqual([]);
  });

  it("a Service changed after the lists re-enqueues exactly its routes; one listed, only the snapshot", () => {
    const queue = newQueue();
    const events = keyEvents(queue);
    for (let i = 0; i < 10; i++) events.onRoute("ADDED", route(`r${i}`, `svc-${i % 3}`), true);
    drain(queue);
    events.onService("shop/svc-1", true);
    expect(drain(queue)).toEqual([SNAPSHOT_KEY]);
    events.onService("shop/svc-1", false);
    expect(drain(queue)).toEqual(["shop/r1", "shop/r4", "shop/r7", SNAPSHOT_KEY]);
    events.onService("shop/unused", false);
    expect(drain(queue)).toEqual([]);
  });

  it("a route listed, then changed, is judged with its new spec: the index follows it", () => {
    const queue = newQueue();
    const events = keyEvents(queue);
    events.onRoute("ADDED", route("a", "old"), true);
    events.onRoute("MODIFIED", route("a", "new"), false);
    drain(queue);
    events.onService("shop/old", false);
    expect(drain(queue)).toEqual([]);
    events.onService("shop/new", false);
    expect(drain(queue)).toEqual(["shop/a", SNAPSHOT_KEY]);
  });
});
