import { beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { EnvoyProtos } from "../../test/envoy/envoy-proto.js";
import { goldenCases, goldenSnapshot } from "../../test/golden/xds-cases.js";
import { XDS_FILES } from "../envoy/envoy-resources.js";
import { BOOTSTRAP_FILE, envoyBootstrap, envoyFiles } from "./envoy-files.js";

let protos: EnvoyProtos;
beforeAll(() => {
  protos = EnvoyProtos.load();
});

describe("the files Envoy reads", () => {
  it("every DiscoveryResponse decodes as one, with its resources, and round-trips", () => {
    for (const name of goldenCases()) {
      const snapshot = goldenSnapshot(name);
      const files = envoyFiles(snapshot);
      for (const file of Object.values(XDS_FILES)) {
        const doc = JSON.parse(files[file] as string) as {
          version_info: string;
          type_url: string;
          resources: { "@type": string }[];
        };
        expect(doc.version_info).toBe(snapshot.version);
        for (const r of doc.resources) expect(r["@type"]).toBe(doc.type_url);
        expect(protos.check("envoy.service.discovery.v3.DiscoveryResponse", doc), `${name} ${file}`).toEqual(
          [],
        );
        const back = protos.roundTrip("envoy.service.discovery.v3.DiscoveryResponse", doc) as {
          resources?: unknown[];
        };
        // proto3 JSON leaves out an empty list.
        expect({ ...back, resources: back.resources ?? [] }).toEqual(doc);
      }
    }
  });

  it("the bootstrap is a valid Bootstrap that reads LDS and CDS from the watched directory", () => {
    const files = envoyFiles(goldenSnapshot("single-route"), { dir: "/xds" });
    const bootstrap = parse(files[BOOTSTRAP_FILE] as string) as unknown;
    expect(bootstrap).toEqual(envoyBootstrap({ dir: "/xds" }));
    expect(protos.check("envoy.config.bootstrap.v3.Bootstrap", bootstrap)).toEqual([]);
    expect(protos.roundTrip("envoy.config.bootstrap.v3.Bootstrap", bootstrap)).toEqual(bootstrap);
    expect(bootstrap).toMatchObject({
      dynamic_resources: {
        lds_config: { path_config_source: { path: "/xds/lds.json", watched_directory: { path: "/xds" } } },
        cds_config: { path_config_source: { path: "/xds/cds.json", watched_directory: { path: "/xds" } } },
      },
    });
  });

  it("never carry TLS: no HTTPS listener, no https/HOST, no Secret, no key byte", () => {
    for (const name of goldenCases().filter((n) => n.startsWith("tls-") || n === "docs-install-tls")) {
      const snapshot = goldenSnapshot(name);
      const text = Object.values(envoyFiles(snapshot)).join("\n");
      expect(text, name).not.toMatch(/PRIVATE KEY|BEGIN CERTIFICATE|transport_sockets\.tls|"https"|https\//);
      for (const s of snapshot.resources.secrets)
        expect(text).not.toContain(s.tls_certificate.private_key.inline_string.split("\n")[1]);
    }
  });
});
