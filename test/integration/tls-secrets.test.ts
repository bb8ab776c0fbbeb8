// TLS Secrets on the real apiserver: the metadata-only list and watch of
// `kubernetes.io/tls` Secrets are answered as asked (no `data` on the wire),
// only the Secrets routes reference are read, a renewed Secret replaces what
// the cache holds, and with the operator stack: a route with TLS says
// ResolvedRefs=False/SecretNotFound, then True once its Secret exists, and no
// byte of the key shows in any status, event or log line.
//
// Parts of this need the schema, the translation and SDS on ADS, and say so:
//  - a route's spec.tls is kept only when the CRD's schema has it (SCHEMA_HAS_TLS);
//  - ResolvedRefs is written only when the translation fills each route's TLS
//    outcome (TRANSLATION_FILLS_TLS);
//  - a connected ADS client seeing the renewed Secret within 5 s needs SDS on
//    ADS (ADS_SERVES_TLS_SECRETS).

import { X509Certificate } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCrd } from "../../src/api/crd.js";
import type { EdgeRouteV2 } from "../../src/api/types.js";
import { createCa, issueCertificate, type KeyPair } from "../../src/certs/pki.js";
import type { KubeClient } from "../../src/kube/client.js";
import { PARTIAL_METADATA_ACCEPT, SECRETS_PATH } from "../../src/kube/paths.js";
import { utf8Lines } from "../../src/kube/watch-lines.js";
import { silentLogger } from "../../src/observability/logger.js";
import { ClusterCache } from "../../src/reconcile/cluster-cache.js";
import { TlsSecretContents } from "../../src/reconcile/tls-secret-contents.js";
import { buildSnapshot } from "../../src/translate/snapshot.js";
import { startControlPlane } from "../harness/control-plane.js";
import { startOperatorStack, type OperatorStack } from "../harness/operator-stack.js";
import type { ControlPlane } from "../../tools/testenv/control-plane.js";
import { waitFor } from "../../tools/testenv/process.js";
import { adsSecretClient } from "../harness/sds-client.js";
import { apply, cond, endpointSlice, getRoute, service } from "./routes.js";

const NS = "tls";
const log = silentLogger();

/** The ADS server serves SDS Secrets: a connected client must see a renewal within 5 s. */
const ADS_SERVES_TLS_SECRETS = true;

/** The CRD keeps spec.tls (else the apiserver prunes it). */
const SCHEMA_HAS_TLS = JSON.stringify(buildCrd()).includes('"secretName"');

/** The translation gives each route with TLS its outcome (RouteOutcome.tls). */
const TRANSLATION_FILLS_TLS = (() => {
  const r = tlsRoute("probe", "probe-tls");
  return buildSnapshot([r], new Map()).outcomes[0]?.tls !== undefined;
})();

function tlsRoute(name: string, secretName: string): EdgeRouteV2 {
  return {
    apiVersion: "net.10xdev.io/v2",
    kind: "EdgeRoute",
    metadata: { name, namespace: NS },
    spec: {
      hostnames: [`${name}.example.com`],
      tls: { secretName },
      rules: [
        { matches: [{ path: { type: "PathPrefix", value: "/" } }], backends: [{ name: "shop", port: 8080 }] },
      ],
    },
  };
}

const ca = createCa();
const pairFor = (host: string): KeyPair =>
  issueCertificate(ca, { commonName: host, dnsNames: [host], usage: "server" });

function tlsSecret(name: string, pair: KeyPair, type = "kubernetes.io/tls"): object {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name, namespace: NS },
    type,
    data: {
      "tls.crt": Buffer.from(pair.cert).toString("base64"),
      "tls.key": Buffer.from(pair.key).toString("base64"),
    },
  };
}

/**
 * Creates or replaces a Secret by the API, as cert-manager does. Not with
 * `kubectl apply`: that copies the whole Secret, key included, into the
 * last-applied annotation, which every metadata read then carries.
 */
async function putSecret(secret: object): Promise<void> {
  const name = (secret as { metadata: { name: string } }).metadata.name;
  try {
    await kube.json("POST", `/api/v1/namespaces/${NS}/secrets`, { body: secret });
  } catch (err) {
    if (!String(err).includes("409")) throw err;
    await kube.json("PATCH", `/api/v1/namespaces/${NS}/secrets/${name}`, {
      body: { data: (secret as { data: unknown }).data },
      contentType: "application/merge-patch+json",
    });
  }
}

/** Every form of the key a leak could take: its PEM body lines, the PEM's base64, the DER's. */
function keyNeedles(pair: KeyPair): string[] {
  const body = pair.key.split("\n").filter((l) => l && !l.startsWith("-----"));
  return [
    ...body.filter((l) => l.length >= 32).map((l) => l.slice(0, 32)),
    Buffer.from(pair.key).toString("base64").slice(0, 40),
  ];
}

let cp: ControlPlane;
let kube: KubeClient;

beforeAll(async () => {
  cp = await startControlPlane();
  kube = cp.kube();
  expect((await cp.kubectl(["create", "namespace", NS])).code).toBe(0);
});

afterAll(async () => {
  await cp?.stop();
});

describe("the metadata-only watch of TLS Secrets, on the real apiserver", () => {
  it("lists PartialObjectMetadata of kubernetes.io/tls Secrets only, with no data", async () => {
    const listed = pairFor("listed.example.com");
    await putSecret(tlsSecret("listed", listed));
    await putSecret(tlsSecret("opaque", pairFor("opaque.example.com"), "Opaque"));
    const list = await kube.json<{ kind: string; items: { metadata: { name: string }; data?: unknown }[] }>(
      "GET",
      SECRETS_PATH,
      { query: { fieldSelector: "type=kubernetes.io/tls" }, accept: PARTIAL_METADATA_ACCEPT.list },
    );
    expect(list.kind).toBe("PartialObjectMetadataList");
    const names = list.items.map((i) => i.metadata.name);
    expect(names).toContain("listed");
    expect(names).not.toContain("opaque");
    expect(list.items.every((i) => i.data === undefined)).toBe(true);
    // managedFields name the fields (f:tls.key); nothing of their values comes.
    for (const needle of keyNeedles(listed)) expect(JSON.stringify(list)).not.toContain(needle);
  });

  it("watches PartialObjectMetadata, with no data", async () => {
    const ac = new AbortController();
    const res: IncomingMessage = await kube.stream(SECRETS_PATH, {
      query: { watch: true, fieldSelector: "type=kubernetes.io/tls", resourceVersion: "0" },
      accept: PARTIAL_METADATA_ACCEPT.watch,
      signal: ac.signal,
      timeoutMs: 20_000,
    });
    const first = await (async () => {
      for await (const line of utf8Lines(res)) return line;
      return "";
    })();
    ac.abort();
    const ev = JSON.parse(first) as { type: string; object: { kind: string; data?: unknown } };
    expect(ev.object.kind).toBe("PartialObjectMetadata");
    expect(ev.object.data).toBeUndefined();
  });

  it("reads only the referenced Secret, and again when it is renewed", async () => {
    const first = pairFor("renew.example.com");
    await putSecret(tlsSecret("renew", first));
    await putSecret(tlsSecret("unrelated", pairFor("unrelated.example.com")));
    const reads: string[] = [];
    const counting: KubeClient = {
      json: (method, path, opts) => {
        if (path.includes("/secrets/")) reads.push(path);
        return kube.json(method, path, opts);
      },
      stream: (path, opts) => kube.stream(path, opts),
    };
    let changes = 0;
    const contents = new TlsSecretContents({ client: counting, log, onChange: () => changes++ });
    contents.start();
    try {
      contents.reference(`${NS}/renew`);
      await waitFor("the Secret's contents", async () =>
        contents.secrets().has(`${NS}/renew`) ? true : undefined,
      );
      expect(contents.secrets().get(`${NS}/renew`)).toEqual({
        certificate: first.cert,
        privateKey: first.key,
      });
      expect(contents.exists(`${NS}/unrelated`)).toBe(true);
      expect(contents.exists(`${NS}/opaque`)).toBe(false);

      const renewed = pairFor("renew.example.com");
      await putSecret(tlsSecret("renew", renewed));
      await waitFor("the renewed contents", async () =>
        contents.secrets().get(`${NS}/renew`)?.certificate === renewed.cert ? true : undefined,
      );
      expect(new Set(reads)).toEqual(new Set([`/api/v1/namespaces/${NS}/secrets/renew`]));

      const before = changes;
      await putSecret(tlsSecret("unrelated", pairFor("unrelated.example.com")));
      await new Promise((r) => setTimeout(r, 500));
      expect(changes).toBe(before);
    } finally {
      await contents.stop();
    }
  });
});

describe.runIf(SCHEMA_HAS_TLS)("a route's TLS Secret, through the cache and the operator", () => {
  let stack: OperatorStack;
  let cache: ClusterCache;
  let ads: Awaited<ReturnType<typeof adsSecretClient>> | undefined;
  const stopCache = new AbortController();

  beforeAll(async () => {
    stack = await startOperatorStack(cp, { storageVersion: "v2" });
    await apply(cp, service("shop", NS), endpointSlice("shop", ["10.0.0.1"], NS));
    cache = new ClusterCache({ client: kube, log });
    cache.start(stopCache.signal);
    await cache.waitForSync();
  });

  afterAll(async () => {
    stopCache.abort();
    await ads?.close();
    await stack?.stop();
  });

  const pair = pairFor("shop.example.com");

  it.runIf(TRANSLATION_FILLS_TLS)(
    "says ResolvedRefs=False/SecretNotFound until the Secret exists",
    async () => {
      await apply(cp, tlsRoute("shop", "shop-tls"));
      await waitFor("ResolvedRefs=False(SecretNotFound)", async () =>
        cond(await getRoute(cp, "shop", NS), "ResolvedRefs") === "False(SecretNotFound)" ? true : undefined,
      );
      expect(cache.tlsSecretExists(NS, "shop-tls")).toBe(false);
    },
  );

  it("holds the referenced Secret's contents in the cache, and the renewed ones after a renewal", async () => {
    await apply(cp, tlsRoute("shop", "shop-tls"));
    await putSecret(tlsSecret("shop-tls", pair));
    await waitFor("the cache to hold the Secret", async () =>
      cache.secrets().get(`${NS}/shop-tls`)?.certificate === pair.cert ? true : undefined,
    );
    expect(cache.tlsSecretExists(NS, "shop-tls")).toBe(true);
    if (ADS_SERVES_TLS_SECRETS) {
      ads = await adsSecretClient(cp, NS, "shop-tls");
      await ads.seen(pair.cert, 30_000);
    }
    const stamp = cache.inputs();
    const renewed = pairFor("shop.example.com");
    await putSecret(tlsSecret("shop-tls", renewed));
    await waitFor("the cache to hold the renewed Secret", async () =>
      cache.secrets().get(`${NS}/shop-tls`)?.certificate === renewed.cert ? true : undefined,
    );
    expect(cache.inputs()).not.toBe(stamp);
    expect(new X509Certificate(cache.secrets().get(`${NS}/shop-tls`)?.certificate ?? "").serialNumber).toBe(
      new X509Certificate(renewed.cert).serialNumber,
    );
    // The renewal reaches a connected proxy within seconds: the issue's 5 s.
    if (ads) expect(await ads.seen(renewed.cert, 5_000)).toBeLessThan(5_000);
  });

  it.runIf(TRANSLATION_FILLS_TLS)("says ResolvedRefs=True once the Secret exists", async () => {
    await waitFor("ResolvedRefs=True(ResolvedRefs)", async () =>
      cond(await getRoute(cp, "shop", NS), "ResolvedRefs") === "True(ResolvedRefs)" ? true : undefined,
    );
  });

  it("lets no byte of a key into a status, an event or the server's log", async () => {
    const routes = await cp.kubectl(["get", "edgeroutes.v2.net.10xdev.io", "-n", NS, "-o", "json"]);
    const events = await cp.kubectl(["get", "events", "-n", NS, "-o", "json"]);
    const written = `${routes.stdout}\n${events.stdout}\n${stack.serve.output()}\n${ads?.output() ?? ""}`;
    expect(written).not.toContain("PRIVATE KEY");
    const current = cache.secrets().get(`${NS}/shop-tls`);
    for (const needle of [
      ...keyNeedles(pair),
      ...(current ? keyNeedles({ cert: "", key: current.privateKey }) : []),
    ])
      expect(written).not.toContain(needle);
  });
});
