// The translation's golden files, test/golden/xds/CASE/ (inputs: xds-cases.ts):
//  - snapshot.json: the snapshot, what every sink is handed: its version, the
//    outcome per route (what Accepted says), and Envoy's resources in the
//    form the envoy-configmap sink writes to files;
//  - envoy.json: what Envoy receives over ADS from the xds sink, by type;
//  - grpc.json: what a proxyless gRPC client with channels to the hosts in
//    clients.yaml receives, by type.
// The routing model (src/translate/model.ts) has no golden of its own: its
// outcomes, virtual hosts and clusters are what snapshot.json shows.
// UPDATE_GOLDEN=1 (`npm run golden:update`) rewrites them; their diff shows what
// changes for users. Every EdgeRoute example in the docs must be a case's input.

import { createHash } from "node:crypto";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { encodeResource } from "../../src/dataplane/xds/proto-codec.js";
import { TYPE_URL } from "../../src/envoy/envoy-resources.js";
import { adsResources } from "../../src/translate/envoy.js";
import { grpcResources } from "../../src/translate/grpc.js";
import { buildSnapshot } from "../../src/translate/snapshot.js";
import { XdsEncoder } from "../../src/dataplane/xds/resources.js";
import { GOLDEN_NOW, goldenCases, goldenInput, goldenSnapshot, XDS_GOLDEN_DIR } from "../golden/xds-cases.js";
import { envoyReceives, grpcReceives, served, type Received } from "../golden/xds-received.js";

const ROOT = join(import.meta.dirname, "../..");

function expectGolden(name: string, file: string, value: unknown): void {
  const actual = `${JSON.stringify(value, null, 2)}\n`;
  const path = join(XDS_GOLDEN_DIR, name, file);
  if (process.env.UPDATE_GOLDEN === "1") writeFileSync(path, actual);
  expect(actual, `${name}/${file}`).toBe(readFileSync(path, "utf8"));
}

function docFiles(): string[] {
  return ["README.md", ...readdirSync(join(ROOT, "docs")).map((f) => `docs/${f}`)].filter((f) =>
    f.endsWith(".md"),
  );
}

/** Every `kind: EdgeRoute` document in a ```yaml block of README.md and docs/*.md, with where it is. */
function docsExamples(): { readonly where: string; readonly route: unknown }[] {
  const out: { where: string; route: unknown }[] = [];
  for (const file of docFiles()) {
    const text = readFileSync(join(ROOT, file), "utf8");
    for (const block of text.matchAll(/^```ya?ml\n([\s\S]*?)^```/gm))
      for (const doc of parseAllDocuments(block[1] as string)) {
        const js = doc.toJS() as { kind?: string } | null;
        if (js?.kind === "EdgeRoute") out.push({ where: `${file}:${lineOf(text, block.index)}`, route: js });
      }
  }
  return out;
}

function versionOf(json: { readonly "@type": string }): string {
  return createHash("sha256").update(encodeResource(json).value).digest("hex").slice(0, 16);
}

/** By type URL, each resource's name and the version of its bytes, by name: the server picks them in the order asked. */
function byType(received: Received): Record<string, [string, string][]> {
  const out: Record<string, [string, string][]> = {};
  for (const [url, list] of Object.entries(received.resources))
    out[url] = list.map((r): [string, string] => [r.name, r.version]).sort();
  return out;
}

/** The translation's resources of one client kind in the same shape, encoded as the server encodes them. */
function byTypeOf(resources: {
  readonly listeners: readonly { readonly "@type": string; readonly name: string }[];
  readonly routeConfigurations: readonly { readonly "@type": string; readonly name: string }[];
  readonly clusters: readonly { readonly "@type": string; readonly name: string }[];
  readonly clusterLoadAssignments: readonly { readonly "@type": string; readonly cluster_name: string }[];
  readonly secrets?: readonly { readonly "@type": string; readonly name: string }[];
}): Record<string, [string, string][]> {
  const named = (list: readonly { readonly "@type": string; readonly name: string }[]) =>
    list.map((r): [string, string] => [r.name, versionOf(r)]).sort();
  return {
    [TYPE_URL.cluster]: named(resources.clusters),
    [TYPE_URL.clusterLoadAssignment]: resources.clusterLoadAssignments
      .map((r): [string, string] => [r.cluster_name, versionOf(r)])
      .sort(),
    [TYPE_URL.listener]: named(resources.listeners),
    [TYPE_URL.routeConfiguration]: named(resources.routeConfigurations),
    ...(resources.secrets !== undefined && resources.secrets.length > 0
      ? { [TYPE_URL.secret]: named(resources.secrets) }
      : {}),
  };
}

function lineOf(text: string, index: number): number {
  return text.slice(0, index).split("\n").length;
}

describe("xds golden files", () => {
  const cases = goldenCases();

  it("covers the cases the design names", () => {
    for (const name of [
      "single-route",
      "weighted-canary",
      "header-matches",
      "exact-vs-prefix",
      "wildcard-host",
      "conflict-oldest-wins",
      "partial-conflict",
      "missing-endpoints",
      "timeouts",
      "tls-single-host",
      "tls-many-hosts",
      "tls-conflict",
      "tls-missing-secret",
      "tls-bad-certificate",
      "tls-redirect-vs-allow",
      "docs-install-tls",
    ])
      expect(cases).toContain(name);
  });

  it("has every EdgeRoute example of the docs as a case's input", () => {
    const examples = docsExamples();
    // Each `kind: EdgeRoute` line of the docs is an example read: none hides in a block of another kind.
    const lines = docFiles().reduce(
      (n, f) => n + (readFileSync(join(ROOT, f), "utf8").match(/^kind: EdgeRoute$/gm)?.length ?? 0),
      0,
    );
    expect(examples.length).toBe(lines);
    expect(examples.length).toBeGreaterThanOrEqual(3);
    const inputs = cases.flatMap((name) => goldenInput(name).written);
    const missing = examples.filter(
      (e) => !inputs.some((r) => JSON.stringify(r) === JSON.stringify(e.route)),
    );
    expect(missing.map((e) => e.where)).toEqual([]);
  });

  for (const name of cases) {
    it(name, () => {
      const snapshot = goldenSnapshot(name);
      const { version, outcomes, resources } = snapshot;
      // `secrets` shows only where a case has some: the cases without TLS read as before it.
      const { secrets, ...withoutSecrets } = resources;
      expectGolden(name, "snapshot.json", {
        version,
        outcomes,
        resources: secrets.length > 0 ? resources : withoutSecrets,
      });
      const xds = served(snapshot);
      expectGolden(name, "envoy.json", envoyReceives(xds));
      expectGolden(name, "grpc.json", grpcReceives(xds, goldenInput(name).grpcHosts));
    });
  }

  it("serves, byte for byte, what the translation's steps make: adsResources to Envoy, grpcResources to gRPC", () => {
    for (const name of cases) {
      const snapshot = goldenSnapshot(name);
      const xds = served(snapshot);
      const ads = adsResources(snapshot.resources);
      const hosts = goldenInput(name).grpcHosts;
      expect(byType(envoyReceives(xds)), name).toEqual(byTypeOf(ads));
      expect(byType(grpcReceives(xds, hosts)), name).toEqual(byTypeOf(grpcResources(ads, hosts)));
    }
  });

  it("holds whole resources: each one's JSON encodes to the bytes its version was taken of", () => {
    for (const name of cases)
      for (const file of ["envoy.json", "grpc.json"]) {
        const golden = JSON.parse(readFileSync(join(XDS_GOLDEN_DIR, name, file), "utf8")) as Received;
        for (const list of Object.values(golden.resources))
          for (const r of list)
            expect(versionOf(r.resource as { "@type": string }), `${name}/${file} ${r.name}`).toBe(r.version);
      }
  });

  it("rotation: a renewed Secret changes the snapshot's version and only the Secret resource's own", () => {
    const { routes, endpoints, secrets } = goldenInput("tls-single-host");
    const renewed = new Map(secrets);
    renewed.set("shop/shop-tls", {
      certificate: readFileSync(join(ROOT, "test/fixtures/tls/shop-renewed.crt"), "utf8"),
      privateKey: readFileSync(join(ROOT, "test/fixtures/tls/shop-renewed.key"), "utf8"),
    });
    const build = (s: typeof secrets) => buildSnapshot(routes, endpoints, { now: GOLDEN_NOW }, s);
    const [before, after] = [build(secrets), build(renewed)];
    expect(after.version).not.toBe(before.version);
    expect(after.outcomes).toEqual(before.outcomes);
    // One encoder, as the xds sink keeps it from push to push.
    const encoder = new XdsEncoder();
    const versions = (x: ReturnType<XdsEncoder["encode"]>) =>
      Object.fromEntries(
        [...x.types].flatMap(([url, t]) => t.list.map((r) => [`${url} ${r.name}`, r.version] as const)),
      );
    const [a, b] = [versions(encoder.encode(before)), versions(encoder.encode(after))];
    const changed = Object.keys(a).filter((k) => a[k] !== b[k]);
    expect(Object.keys(b).sort()).toEqual(Object.keys(a).sort());
    expect(changed).toEqual([`${TYPE_URL.secret} shop/shop-tls`]);
  });
});
