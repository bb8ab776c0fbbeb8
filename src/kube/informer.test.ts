// The informer's failure paths, against a scripted HTTP server: a real
// apiserver cannot be made to go silent mid-stream or to answer 410 on cue.
// The happy path runs against the real one in test/integration/watcher.test.ts.

import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { silentLogger } from "../observability/logger.js";
import { Informer, type EventType } from "./informer.js";
import { kubeClient } from "./client.js";
import type { ClusterAccess } from "./kubeconfig.js";

interface Obj {
  metadata: { namespace: string; name: string; resourceVersion: string };
}
const obj = (name: string, rv: string): Obj => ({ metadata: { namespace: "ns", name, resourceVersion: rv } });

type WatchScript = (res: http.ServerResponse, query: URLSearchParams) => void;

/**
 * What failed inside a server callback (an assertion about the request, say):
 * `until` throws it at once, so it fails the test as itself, not as a timeout.
 */
const serverFailures: unknown[] = [];

/** Serves `GET /things`: lists from `lists`, watches from `watches`, one per request, in order. */
async function scriptedServer(lists: (Obj[] | number)[], watches: WatchScript[]) {
  const seen: { watch: boolean; query: URLSearchParams }[] = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "", "http://x");
    const watch = url.searchParams.get("watch") === "true";
    seen.push({ watch, query: url.searchParams });
    if (watch) {
      const script = watches.shift();
      if (!script) return void res.writeHead(500).end("{}");
      res.writeHead(200, { "content-type": "application/json" });
      res.flushHeaders();
      try {
        script(res, url.searchParams);
      } catch (err) {
        serverFailures.push(err);
        res.destroy();
      }
      return;
    }
    const list = lists.shift();
    if (list === undefined || typeof list === "number") {
      return void res.writeHead(typeof list === "number" ? list : 500).end('{"message":"scripted failure"}');
    }
    const rv = String(Math.max(0, ...list.map((o) => Number(o.metadata.resourceVersion))));
    res
      .writeHead(200, { "content-type": "application/json" })
      .end(JSON.stringify({ metadata: { resourceVersion: rv }, items: list }));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const access: ClusterAccess = {
    source: "test",
    server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    tls: { rejectUnauthorized: true },
    credentials: () => Promise.resolve({ headers: {} }),
  };
  return { server, seen, client: kubeClient(access) };
}

const event = (res: http.ServerResponse, type: string, object: unknown): void => {
  res.write(`${JSON.stringify({ type, object })}\n`);
};

const log = silentLogger();
const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0)) await c();
  // A failure no `until` saw still fails the test that caused it.
  const missed = serverFailures.splice(0);
  if (missed.length > 0) throw missed[0];
});

function start(
  client: ReturnType<typeof kubeClient>,
  opts: Partial<ConstructorParameters<typeof Informer>[0]> = {},
) {
  const events: string[] = [];
  const inf = new Informer({
    name: "things",
    path: "/things",
    client,
    log,
    backoffBaseMs: 20,
    backoffMaxMs: 100,
    onEvent: (type: EventType, o) => events.push(`${type} ${o.metadata?.name as string}`),
    ...opts,
  });
  inf.start();
  cleanup.push(() => inf.stop());
  return { inf, events };
}

async function until(what: string, cond: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    const failure = serverFailures.shift();
    if (failure !== undefined) throw failure;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe("Informer", () => {
  it("lists, watches from the list's resourceVersion, and relists on 410 with deletes for what went", async () => {
    const { server, seen, client } = await scriptedServer(
      [
        [obj("a", "5"), obj("b", "10")],
        [obj("a", "5"), obj("c", "21")],
      ],
      [
        (res, q) => {
          expect(q.get("resourceVersion")).toBe("10");
          event(res, "ADDED", obj("c", "11"));
          event(res, "ERROR", {
            kind: "Status",
            code: 410,
            reason: "Expired",
            message: "too old resource version",
          });
        },
        (res, q) => {
          expect(q.get("resourceVersion")).toBe("21");
          event(res, "DELETED", obj("a", "22"));
        },
      ],
    );
    cleanup.push(async () => void server.close());
    const { inf, events } = start(client);
    await until("the second watch's event", () => events.includes("DELETED a"));
    // b went while the watch was broken: the relist reports it gone; c changed.
    expect(events).toEqual(["ADDED a", "ADDED b", "ADDED c", "MODIFIED c", "DELETED b", "DELETED a"]);
    expect(inf.keys()).toEqual(["ns/c"]);
    expect(inf.stats.lists).toBe(2);
    expect(seen.filter((s) => s.watch).every((s) => s.query.get("allowWatchBookmarks") === "true")).toBe(
      true,
    );
  });

  it("gives up a stream that stays silent past its timeout and watches again without listing", async () => {
    const { server, seen, client } = await scriptedServer(
      [[obj("a", "7")]],
      [
        (res) => event(res, "BOOKMARK", { metadata: { resourceVersion: "9" } }), // then silence
        (res) => event(res, "ADDED", obj("b", "12")),
      ],
    );
    cleanup.push(async () => {
      server.closeAllConnections();
      server.close();
    });
    const started = Date.now();
    const { inf, events } = start(client, { watchTimeoutSeconds: 1, idleGraceMs: 300 });
    await until("the second watch", () => events.includes("ADDED b"));
    const watches = seen.filter((s) => s.watch);
    expect(watches[0]?.query.get("timeoutSeconds")).toBe("1");
    // From the bookmark's resourceVersion, after the 1 s timeout and the grace.
    expect(watches[1]?.query.get("resourceVersion")).toBe("9");
    expect(Date.now() - started).toBeGreaterThanOrEqual(1300);
    expect(inf.stats.lists).toBe(1);
    expect(inf.stats.failures).toBe(1);
  });

  it("says how far it has read (list, events, bookmarks) apart from the newest object it saw", async () => {
    const { server, client } = await scriptedServer(
      [[obj("a", "5"), obj("b", "10")]],
      [
        (res) => {
          event(res, "ADDED", obj("c", "11"));
          event(res, "BOOKMARK", { metadata: { resourceVersion: "30" } });
        },
      ],
    );
    cleanup.push(async () => {
      server.closeAllConnections();
      server.close();
    });
    const progress: string[] = [];
    const { inf } = start(client, { onResourceVersion: (rv) => progress.push(rv) });
    await until("the bookmark", () => inf.resourceVersion() === "30");
    expect(progress).toEqual(["10", "11", "30"]);
    // A bookmark carries no object: another cache that saw c has seen everything this one saw.
    expect(inf.newestObjectResourceVersion()).toBe("11");
  });

  it("lists through 500 and 503: the client retries them, the informer sees no failure", async () => {
    const { server, seen, client } = await scriptedServer([500, 503, [obj("a", "3")]], [(res) => void res]);
    cleanup.push(async () => {
      server.closeAllConnections();
      server.close();
    });
    const { inf, events } = start(client);
    await inf.waitForSync();
    expect(events).toEqual(["ADDED a"]);
    expect(seen.filter((s) => !s.watch)).toHaveLength(3);
    expect(inf.stats.failures).toBe(0);
    expect(inf.hasSynced()).toBe(true);
  });

  it("retries a list that keeps failing past the client's deadline with its own backoff", async () => {
    const { server, client } = await scriptedServer([400, 400, [obj("a", "3")]], [(res) => void res]);
    cleanup.push(async () => {
      server.closeAllConnections();
      server.close();
    });
    const { inf, events } = start(client);
    await inf.waitForSync();
    expect(events).toEqual(["ADDED a"]);
    expect(inf.stats.failures).toBe(2);
  });

  it("decodes a character split between two chunks of the watch stream", async () => {
    const name = "caf\u00e9-\u{1F600}";
    const line = Buffer.from(
      `${JSON.stringify({ type: "ADDED", object: { metadata: { namespace: "ns", name, resourceVersion: "4" } } })}\n`,
    );
    const cut = line.indexOf(Buffer.from("\u{1F600}")) + 2; // inside the 4-byte emoji
    const { server, client } = await scriptedServer(
      [[]],
      [
        (res) => {
          res.write(line.subarray(0, cut));
          setTimeout(() => res.write(line.subarray(cut)), 50);
        },
      ],
    );
    cleanup.push(async () => {
      server.closeAllConnections();
      server.close();
    });
    const { events } = start(client);
    await until("the event", () => events.length > 0);
    expect(events).toEqual([`ADDED ${name}`]);
  });

  it("waits before listing again after 410 Gone, longer each time it repeats", async () => {
    const gone = (res: http.ServerResponse): void =>
      event(res, "ERROR", { kind: "Status", code: 410, reason: "Expired", message: "too old" });
    const { server, client } = await scriptedServer(
      [[obj("a", "1")], [obj("a", "1")], [obj("a", "1")], [obj("a", "1")]],
      [gone, gone, gone, (res) => void res],
    );
    const listedAt: number[] = [];
    server.on("request", (req: http.IncomingMessage) => {
      if (!req.url?.includes("watch=true")) listedAt.push(Date.now());
    });
    cleanup.push(async () => {
      server.closeAllConnections();
      server.close();
    });
    const { inf } = start(client, { backoffBaseMs: 200, backoffMaxMs: 2000 });
    await until("the fourth list", () => listedAt.length >= 4, 10_000);
    const gaps = listedAt.slice(1).map((t, i) => t - (listedAt[i] ?? t));
    // Jittered into the upper half of 200, 400, 800 ms.
    expect(gaps[0]).toBeGreaterThanOrEqual(100);
    expect(gaps[1]).toBeGreaterThanOrEqual(200);
    expect(gaps[2]).toBeGreaterThanOrEqual(400);
    expect(inf.stats.relists).toBe(3);
  });
});
