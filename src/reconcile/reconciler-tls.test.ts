// ResolvedRefs and the Accepted message of routes with TLS, from the TLS
// outcome the snapshot gives each route. The outcomes are made here (a
// pipeline whose build adds them), so the reconcile's side is tested on its
// own: what it writes, when it removes the condition, which events it records,
// and that it hands the referenced Secrets' contents to the build.

import { describe, expect, it } from "vitest";
import { FINALIZER, type EdgeRouteV2 } from "../api/types.js";
import { MemoryDataPlane } from "../dataplane/memory.js";
import { silentLogger } from "../observability/logger.js";
import { FakeKube, notFound } from "../../test/fixtures/fake-kube.js";
import type { Snapshot, TlsOutcome, TlsSecrets } from "../translate/snapshot.js";
import { kubeEventRecorder } from "./events.js";
import { SNAPSHOT_KEY } from "./protocol.js";
import { Reconciler } from "./reconciler.js";
import { SnapshotPipeline, type BuildInputs } from "./snapshot-pipeline.js";

const log = silentLogger();
const KEY_PEM = "-----BEGIN PRIVATE KEY-----\nTUFURVJJQUwtT0YtVEhFLUtFWQ==\n-----END PRIVATE KEY-----\n";

function tlsRoute(name: string, secretName: string | undefined): EdgeRouteV2 {
  return {
    apiVersion: "net.10xdev.io/v2",
    kind: "EdgeRoute",
    metadata: {
      namespace: "shop",
      name,
      uid: `uid-${name}`,
      creationTimestamp: "2026-01-01T00:00:00Z",
      finalizers: [FINALIZER],
    },
    spec: {
      hostnames: [`${name}.example.com`, `www.${name}.example.com`],
      rules: [
        {
          matches: [{ path: { type: "PathPrefix", value: "/" } }],
          backends: [{ name: "checkout", port: 80 }],
        },
      ],
      ...(secretName ? { tls: { secretName } } : {}),
    },
  };
}

/** A pipeline whose builds carry the TLS outcome `tls` says for each route with TLS, and that keeps what it was given. */
class TlsPipeline extends SnapshotPipeline {
  secretsSeen: TlsSecrets[] = [];
  constructor(private readonly tls: (key: string) => TlsOutcome) {
    super();
  }
  override snapshot(inputs: BuildInputs): Snapshot {
    this.secretsSeen.push(inputs.secrets ?? new Map());
    const built = super.snapshot(inputs);
    const withTls = new Set(
      inputs.live.filter((r) => r.spec.tls).map((r) => `${r.metadata.namespace}/${r.metadata.name}`),
    );
    return {
      ...built,
      outcomes: built.outcomes.map((o) => (withTls.has(o.key) ? { ...o, tls: this.tls(o.key) } : o)),
    };
  }
}

function setup(tls: (key: string) => TlsOutcome) {
  const kube = new FakeKube();
  kube.services.push({ metadata: { namespace: "shop", name: "checkout" }, spec: { ports: [{ port: 80 }] } });
  const secrets = new Map<string, object>();
  kube.intercept = (call) => {
    const m = /^\/api\/v1\/namespaces\/([^/]+)\/secrets\/([^/]+)$/.exec(call.path);
    if (!m) return undefined;
    const s = secrets.get(`${m[1]}/${m[2]}`);
    return s ? Promise.resolve(s) : Promise.reject(notFound(call.path));
  };
  const pipeline = new TlsPipeline(tls);
  const reconciler = new Reconciler(kube, new MemoryDataPlane(), kubeEventRecorder(kube, log), log, {
    snapshots: pipeline,
  });
  return { kube, secrets, pipeline, reconciler };
}

const conditions = (r: EdgeRouteV2 | undefined): string[] =>
  (r?.status?.conditions ?? []).map((c) => `${c.type}=${c.status}(${c.reason})`);

const missing: TlsOutcome = {
  refs: { resolved: false, reason: "SecretNotFound", message: "Secret shop/shop-tls does not exist" },
  served: [],
  notServed: [
    { hostname: "shop.example.com", message: "its Secret shop/shop-tls does not exist" },
    { hostname: "www.shop.example.com", message: "its Secret shop/shop-tls does not exist" },
  ],
};
const resolved: TlsOutcome = {
  refs: { resolved: true },
  served: ["shop.example.com", "www.shop.example.com"],
  notServed: [],
};

describe("Reconciler, TLS", () => {
  it("says ResolvedRefs=False/SecretNotFound, then True once the Secret resolves, after Accepted and Programmed", async () => {
    let outcome = missing;
    const { kube, reconciler } = setup(() => outcome);
    kube.addRoute(tlsRoute("shop", "shop-tls"));
    await reconciler.reconcile(SNAPSHOT_KEY);
    const r1 = kube.route("shop/shop");
    expect(conditions(r1)).toEqual([
      "Accepted=True(Valid)",
      "Programmed=True(Synced)",
      "ResolvedRefs=False(SecretNotFound)",
    ]);
    const refs = r1?.status?.conditions?.find((c) => c.type === "ResolvedRefs");
    expect(refs?.message).toBe("Secret shop/shop-tls does not exist");
    const accepted = r1?.status?.conditions?.find((c) => c.type === "Accepted");
    expect(accepted?.message).toContain(
      "shop.example.com not served over HTTPS (its Secret shop/shop-tls does not exist)",
    );
    expect(kube.events).toContainEqual(
      expect.objectContaining({ type: "Warning", reason: "SecretNotFound", name: "shop" }),
    );

    outcome = resolved;
    await reconciler.reconcile(SNAPSHOT_KEY);
    const r2 = kube.route("shop/shop");
    expect(conditions(r2)).toEqual([
      "Accepted=True(Valid)",
      "Programmed=True(Synced)",
      "ResolvedRefs=True(ResolvedRefs)",
    ]);
    expect(r2?.status?.conditions?.find((c) => c.type === "Accepted")?.message).toBe(
      "the route is valid and its Services exist",
    );
    expect(kube.events).toContainEqual(expect.objectContaining({ type: "Normal", reason: "ResolvedRefs" }));

    // Unchanged: nothing written.
    const writes = kube.count("PATCH", "/status");
    await reconciler.reconcile(SNAPSHOT_KEY);
    expect(kube.count("PATCH", "/status")).toBe(writes);
  });

  it("removes ResolvedRefs when the route's TLS is removed, and writes none on a route without TLS", async () => {
    const { kube, reconciler } = setup(() => resolved);
    kube.addRoute(tlsRoute("shop", "shop-tls"));
    kube.addRoute(tlsRoute("plain", undefined));
    await reconciler.reconcile(SNAPSHOT_KEY);
    expect(conditions(kube.route("shop/shop"))).toContain("ResolvedRefs=True(ResolvedRefs)");
    expect(conditions(kube.route("shop/plain"))).toEqual(["Accepted=True(Valid)", "Programmed=True(Synced)"]);

    const stored = kube.route("shop/shop") as EdgeRouteV2;
    kube.routes.set("shop/shop", { ...stored, spec: tlsRoute("shop", undefined).spec });
    await reconciler.reconcile(SNAPSHOT_KEY);
    expect(conditions(kube.route("shop/shop"))).toEqual(["Accepted=True(Valid)", "Programmed=True(Synced)"]);
  });

  it("says InvalidCertificate with the outcome's words", async () => {
    const { kube, reconciler } = setup(() => ({
      refs: {
        resolved: false,
        reason: "InvalidCertificate",
        message: "the certificate expired at 2025-01-01T00:00:00Z",
      },
      served: [],
      notServed: [{ hostname: "shop.example.com", message: "the certificate expired" }],
    }));
    kube.addRoute(tlsRoute("shop", "shop-tls"));
    await reconciler.reconcile(SNAPSHOT_KEY);
    const c = kube.route("shop/shop")?.status?.conditions?.find((x) => x.type === "ResolvedRefs");
    expect(c).toMatchObject({
      status: "False",
      reason: "InvalidCertificate",
      message: "the certificate expired at 2025-01-01T00:00:00Z",
    });
  });

  it("reads the referenced Secret (and only it) for the build, and no key byte reaches a status or an event", async () => {
    const { kube, secrets, pipeline, reconciler } = setup(() => missing);
    secrets.set("shop/shop-tls", {
      metadata: { namespace: "shop", name: "shop-tls", resourceVersion: "7" },
      type: "kubernetes.io/tls",
      data: {
        "tls.crt": Buffer.from("CERT").toString("base64"),
        "tls.key": Buffer.from(KEY_PEM).toString("base64"),
      },
    });
    secrets.set("shop/unrelated", { metadata: { name: "unrelated" }, type: "kubernetes.io/tls", data: {} });
    kube.addRoute(tlsRoute("shop", "shop-tls"));
    await reconciler.reconcile(SNAPSHOT_KEY);
    const seen = pipeline.secretsSeen.at(-1);
    expect([...(seen?.keys() ?? [])]).toEqual(["shop/shop-tls"]);
    expect(seen?.get("shop/shop-tls")).toEqual({ certificate: "CERT", privateKey: KEY_PEM });
    expect(kube.calls.filter((c) => c.path.includes("/secrets")).map((c) => c.path)).toEqual([
      "/api/v1/namespaces/shop/secrets/shop-tls",
    ]);
    const written =
      JSON.stringify([...kube.routes.values()].map((r) => r.status)) + JSON.stringify(kube.events);
    for (const needle of [
      "TUFURVJJQUwtT0YtVEhFLUtFWQ",
      "PRIVATE KEY",
      Buffer.from(KEY_PEM).toString("base64"),
    ])
      expect(written).not.toContain(needle);
  });
});
