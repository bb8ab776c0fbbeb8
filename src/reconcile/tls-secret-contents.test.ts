// The referenced TLS Secrets' contents, against a scripted apiserver: a
// metadata-only list and watch, and GETs of single Secrets. What is asserted
// is what a user of the cache sees: which contents it holds, when its stamp
// moves, what it asked the apiserver for, and what 10,000 unrelated Secrets cost.
// The real apiserver's answers to these requests: test/integration/tls-secrets.test.ts.

import { PassThrough } from "node:stream";
import type { IncomingMessage } from "node:http";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { afterEach, describe, expect, it } from "vitest";
import type { KubeClient, RequestOptions } from "../kube/client.js";
import { KubeError } from "../kube/client.js";
import { PARTIAL_METADATA_ACCEPT } from "../kube/paths.js";
import { silentLogger } from "../observability/logger.js";
import { TlsSecretContents } from "./tls-secret-contents.js";

interface Stored {
  rv: string;
  type: string;
  crt: string;
  key: string;
}

const b64 = (s: string): string => Buffer.from(s).toString("base64");

/** Secrets in a map; a list answers metadata only, a watch is a stream the test writes events to. */
class SecretApi implements KubeClient {
  readonly secrets = new Map<string, Stored>();
  readonly gets: string[] = [];
  readonly lists: { accept: string | undefined; fieldSelector: unknown }[] = [];
  readonly watchAccepts: (string | undefined)[] = [];
  watches: PassThrough[] = [];
  failGets = 0;
  private version = 10;

  put(key: string, crt: string, k: string, type = "kubernetes.io/tls"): string {
    const rv = String(++this.version);
    const before = this.secrets.has(key);
    this.secrets.set(key, { rv, type, crt, key: k });
    if (type === "kubernetes.io/tls") this.event(before ? "MODIFIED" : "ADDED", key, rv);
    return rv;
  }

  remove(key: string): void {
    const rv = String(++this.version);
    this.secrets.delete(key);
    this.event("DELETED", key, rv);
  }

  private event(type: string, key: string, rv: string): void {
    const [namespace, name] = key.split("/");
    const line = JSON.stringify({
      type,
      object: { kind: "PartialObjectMetadata", metadata: { namespace, name, resourceVersion: rv } },
    });
    for (const w of this.watches) w.write(`${line}\n`);
  }

  json<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    if (path === "/api/v1/secrets") {
      this.lists.push({ accept: opts.accept, fieldSelector: opts.query?.fieldSelector });
      const items = [...this.secrets]
        .filter(([, s]) => s.type === "kubernetes.io/tls")
        .map(([k, s]) => {
          const [namespace, name] = k.split("/");
          return { metadata: { namespace, name, resourceVersion: s.rv } };
        });
      return Promise.resolve({ items, metadata: { resourceVersion: String(this.version) } } as T);
    }
    const m = /^\/api\/v1\/namespaces\/([^/]+)\/secrets\/([^/]+)$/.exec(path);
    if (method === "GET" && m) {
      const key = `${m[1]}/${m[2]}`;
      this.gets.push(key);
      if (this.failGets > 0) {
        this.failGets--;
        return Promise.reject(new KubeError(500, "InternalError", `GET ${path}: 500 boom`, {}));
      }
      const s = this.secrets.get(key);
      if (!s) return Promise.reject(new KubeError(404, "NotFound", `GET ${path}: 404`, {}));
      return Promise.resolve({
        metadata: { namespace: m[1], name: m[2], resourceVersion: s.rv },
        type: s.type,
        data: { "tls.crt": b64(s.crt), "tls.key": b64(s.key) },
      } as T);
    }
    return Promise.reject(new Error(`unexpected ${method} ${path}`));
  }

  stream(_path: string, opts: RequestOptions & { signal: AbortSignal }): Promise<IncomingMessage> {
    this.watchAccepts.push(opts.accept);
    const s = new PassThrough();
    this.watches.push(s);
    opts.signal.addEventListener("abort", () => s.destroy(), { once: true });
    return Promise.resolve(s as unknown as IncomingMessage);
  }
}

async function until(check: () => boolean, ms = 3000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 5));
  }
}

const started: TlsSecretContents[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((c) => c.stop()));
});

function contents(api: SecretApi, extra: { concurrency?: number } = {}) {
  const changes = { count: 0 };
  const c = new TlsSecretContents({
    client: api,
    log: silentLogger(),
    onChange: () => changes.count++,
    retryBaseMs: 10,
    retryMaxMs: 20,
    ...extra,
  });
  started.push(c);
  c.start();
  return { c, changes };
}

describe("TlsSecretContents", () => {
  it("lists and watches metadata only, of kubernetes.io/tls Secrets", async () => {
    const api = new SecretApi();
    api.put("a/one", "C1", "K1");
    const { c } = contents(api);
    // Ready as soon as the list is in: a watch with no events must not hold it back.
    let ready = false;
    void c.whenReady().then(() => (ready = true));
    await until(() => ready, 500);
    await until(() => c.listed() && api.watches.length > 0);
    expect(api.lists[0]).toEqual({
      accept: PARTIAL_METADATA_ACCEPT.list,
      fieldSelector: "type=kubernetes.io/tls",
    });
    expect(api.watchAccepts[0]).toBe(PARTIAL_METADATA_ACCEPT.watch);
    expect(c.exists("a/one")).toBe(true);
    expect(c.exists("a/two")).toBe(false);
    expect(api.gets).toEqual([]); // nothing referenced, nothing read
  });

  it("says it is ready without a first list after its patience, so routes without TLS are still served", async () => {
    const api = new SecretApi();
    api.json = () =>
      Promise.reject(new KubeError(403, "Forbidden", "GET /api/v1/secrets: 403 forbidden", {}));
    let changes = 0;
    const c = new TlsSecretContents({
      client: api,
      log: silentLogger(),
      onChange: () => changes++,
      listPatienceMs: 50,
    });
    started.push(c);
    c.start();
    expect(c.ready()).toBe(false);
    await until(() => c.ready());
    expect(changes).toBe(1);
    expect(c.exists("a/one")).toBeUndefined();
    expect(c.secrets().size).toBe(0);
  });

  it("says undefined for existence before the first list", () => {
    const api = new SecretApi();
    const c = new TlsSecretContents({ client: api, log: silentLogger(), onChange: () => undefined });
    expect(c.exists("a/one")).toBeUndefined();
    expect(c.ready()).toBe(false);
  });

  it("reads a referenced Secret, again when it is renewed, and lets it go when no route references it", async () => {
    const api = new SecretApi();
    api.put("a/one", "C1", "K1");
    api.put("a/other", "X", "Y");
    const { c, changes } = contents(api);
    c.reference("a/one");
    await until(() => c.ready() && c.secrets().has("a/one"));
    expect(c.secrets().get("a/one")).toEqual({ certificate: "C1", privateKey: "K1" });
    expect(c.secrets().has("a/other")).toBe(false);
    expect(api.gets).toEqual(["a/one"]);

    const before = changes.count;
    api.put("a/other", "X2", "Y2"); // unrelated: no read, no change
    await new Promise((r) => setTimeout(r, 30));
    expect(changes.count).toBe(before);
    expect(api.gets).toEqual(["a/one"]);

    api.put("a/one", "C2", "K2"); // renewed
    await until(() => c.secrets().get("a/one")?.certificate === "C2");
    expect(changes.count).toBeGreaterThan(before);

    const afterRenew = changes.count;
    api.put("a/one", "C2", "K2"); // a label moved it; same contents
    await until(() => api.gets.length === 3);
    await new Promise((r) => setTimeout(r, 20));
    expect(changes.count).toBe(afterRenew);

    c.unreference("a/one");
    expect(c.secrets().has("a/one")).toBe(false);
  });

  it("keeps a Secret that two routes reference until both let go", async () => {
    const api = new SecretApi();
    api.put("a/one", "C1", "K1");
    const { c } = contents(api);
    c.reference("a/one");
    c.reference("a/one");
    await until(() => c.secrets().has("a/one"));
    c.unreference("a/one");
    expect(c.secrets().has("a/one")).toBe(true);
    c.unreference("a/one");
    expect(c.secrets().has("a/one")).toBe(false);
  });

  it("sees a referenced Secret appear and disappear, and ignores one of another type", async () => {
    const api = new SecretApi();
    const { c, changes } = contents(api);
    c.reference("a/one");
    await until(() => c.ready());
    expect(c.secrets().size).toBe(0);
    api.put("a/one", "C1", "K1", "Opaque");
    await new Promise((r) => setTimeout(r, 30));
    expect(c.secrets().size).toBe(0);
    expect(api.gets).toEqual([]);
    api.secrets.delete("a/one");
    api.put("a/one", "C1", "K1");
    await until(() => c.secrets().has("a/one"));
    const n = changes.count;
    api.remove("a/one");
    await until(() => !c.secrets().has("a/one"));
    expect(changes.count).toBe(n + 1);
    expect(c.exists("a/one")).toBe(false);
  });

  it("retries a failed read with backoff, and a failure does not hold readiness back", async () => {
    const api = new SecretApi();
    api.put("a/one", "C1", "K1");
    api.failGets = 2;
    const { c } = contents(api);
    c.reference("a/one");
    await until(() => c.ready());
    await until(() => c.secrets().has("a/one"));
    expect(api.gets).toEqual(["a/one", "a/one", "a/one"]);
  });

  it("reads at most `concurrency` Secrets at once", async () => {
    const api = new SecretApi();
    for (let i = 0; i < 20; i++) api.put(`a/s${i}`, `C${i}`, `K${i}`);
    let inFlight = 0;
    let most = 0;
    const json = api.json.bind(api);
    api.json = async <T>(method: string, path: string, opts?: RequestOptions): Promise<T> => {
      if (!path.includes("/namespaces/")) return json<T>(method, path, opts);
      inFlight++;
      most = Math.max(most, inFlight);
      await new Promise((r) => setTimeout(r, 5));
      inFlight--;
      return json<T>(method, path, opts);
    };
    const { c } = contents(api, { concurrency: 3 });
    for (let i = 0; i < 20; i++) c.reference(`a/s${i}`);
    await until(() => c.secrets().size === 20);
    expect(most).toBeLessThanOrEqual(3);
    expect(await c.whenSettled(100)).toBe(true);
  });

  it("holds 10,000 unrelated TLS Secrets' metadata in well under 10 MiB", async () => {
    setFlagsFromString("--expose_gc");
    const gc = runInNewContext("gc") as () => void;
    const api = new SecretApi();
    // Names as long as real ones (namespace and a name of 40 characters).
    for (let i = 0; i < 10_000; i++)
      api.put(`team-${i % 50}/certificate-for-some-application-${String(i).padStart(6, "0")}`, "C", "K");
    gc();
    const before = process.memoryUsage().heapUsed;
    const { c } = contents(api);
    c.reference("team-0/certificate-for-some-application-000000");
    await until(() => c.ready() && c.metadataCount() === 10_000 && c.secrets().size === 1, 10_000);
    gc();
    const delta = process.memoryUsage().heapUsed - before;
    expect(c.metadataCount()).toBe(10_000);
    expect(delta).toBeLessThan(10 * 1024 * 1024);
  });
});
