// `kubectl explain` on the real apiserver, as a user reads the API: every
// field of both versions, spec and status, shows a description, the one that
// src/api/schema.ts writes. Checked twice: in the OpenAPI v3 document that
// kubectl reads (/openapi/v3/apis/net.10xdev.io/VERSION), and in kubectl
// explain's own output, one object at a time, for every field that
// `--recursive` lists.
//
// kubectl 1.36 resolves `edgeroutes.v2.net.10xdev.io.spec` to the preferred
// version and then finds no field "spec" (the version is not read from the
// name), so the version is chosen with --api-version, as kubectl's help says.

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify as toYaml } from "yaml";
import { buildCrd } from "../../src/api/crd.js";
import { isRecord } from "../../src/api/is-record.js";
import { objectSchema } from "../../src/api/schema.js";
import { GROUP, KIND, PLURAL, VERSIONS, type Version } from "../../src/api/types.js";
import { startControlPlane } from "../harness/control-plane.js";
import { schemaNodes, undescribed } from "../harness/undescribed.js";
import type { ControlPlane } from "../../tools/testenv/control-plane.js";
import { waitFor } from "../../tools/testenv/process.js";

let cp: ControlPlane;
/**
 * kubectl's discovery cache for this test, made once the CRD is published:
 * `kubectl wait` right after the apply can cache a discovery without the
 * group, and explain then answers "couldn't find resource" from that cache
 * (HOME's cache is keyed by host and port, so an old apiserver's may be there too).
 */
let cacheDir: string | undefined;

async function kubectl(args: string[]): Promise<string> {
  const r = await cp.kubectl(cacheDir ? [...args, `--cache-dir=${cacheDir}`] : args);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(" ")}: exit ${r.code}: ${r.stderr}`);
  return r.stdout;
}

/** The EdgeRoute schema of one version, as the apiserver publishes it. */
async function publishedSchema(version: Version): Promise<Record<string, unknown>> {
  const doc: unknown = JSON.parse(await kubectl(["get", "--raw", `/openapi/v3/apis/${GROUP}/${version}`]));
  const name = `${GROUP.split(".").reverse().join(".")}.${version}.${KIND}`;
  const schemas = isRecord(doc) && isRecord(doc.components) ? doc.components.schemas : undefined;
  const schema = isRecord(schemas) ? schemas[name] : undefined;
  if (!isRecord(schema)) throw new Error(`the OpenAPI v3 document of ${version} has no ${name}`);
  return schema;
}

interface ExplainedField {
  readonly name: string;
  readonly type: string;
  readonly description: string;
}

const FIELD_LINE = /^( *)([A-Za-z][A-Za-z0-9]*)\t<([^>]+)>/;

/** `--recursive`: the tree of field paths (dot-separated, as explain takes them) and their types. */
function recursiveFields(out: string): Map<string, string> {
  const fields = new Map<string, string>();
  const stack: string[] = [];
  const body = out.slice(out.indexOf("FIELDS:\n") + "FIELDS:\n".length);
  for (const line of body.split("\n")) {
    const m = FIELD_LINE.exec(line);
    if (!m) continue;
    const depth = (m[1] ?? "").length / 2 - 1;
    stack.length = depth;
    stack.push(m[2] ?? "");
    fields.set(stack.join("."), m[3] ?? "");
  }
  return fields;
}

/** One object's FIELDS: each child with its type and the description kubectl prints under it. */
function explainedFields(out: string): ExplainedField[] {
  const fields: { name: string; type: string; lines: string[] }[] = [];
  const body = out.slice(out.indexOf("FIELDS:\n") + "FIELDS:\n".length);
  for (const line of body.split("\n")) {
    const m = FIELD_LINE.exec(line);
    if (m && m[1] === "  ") fields.push({ name: m[2] ?? "", type: m[3] ?? "", lines: [] });
    else if (line.startsWith("    ")) fields.at(-1)?.lines.push(line.trim());
  }
  return fields.map((f) => ({ name: f.name, type: f.type, description: f.lines.join(" ").trim() }));
}

const oneLine = (s: string) => s.replace(/\s+/g, " ").trim();

describe("kubectl explain on the real apiserver", () => {
  beforeAll(async () => {
    cp = await startControlPlane();
    const r = await cp.kubectl(["apply", "-f", "-"], { input: toYaml(buildCrd()) });
    if (r.code !== 0) throw new Error(`the CRD was refused: ${r.stderr}`);
    await kubectl(["wait", "--for=condition=Established", `crd/${PLURAL}.${GROUP}`, "--timeout=60s"]);
    // The OpenAPI document follows the CRD a moment after it is Established.
    for (const v of VERSIONS)
      await waitFor(`the ${v} OpenAPI v3 document`, async () => publishedSchema(v), 30_000, 250);
    cacheDir = await mkdtemp(join(tmpdir(), "explain-cache-"));
  });

  afterAll(async () => {
    await cp?.stop();
    if (cacheDir) await rm(cacheDir, { recursive: true, force: true });
  });

  it.each(VERSIONS)(
    "%s: the OpenAPI v3 document kubectl reads has a description on every field",
    async (v) => {
      const schema = await publishedSchema(v);
      expect(undescribed(schema)).toEqual([]);
      // ...and holds every field of the source: none was dropped on the way.
      const source = [...schemaNodes(objectSchema(v))].map(([p]) => p).filter((p) => p !== "");
      const published = [...schemaNodes(schema)].map(([p]) => p).filter((p) => p !== "");
      expect(published.sort()).toEqual(source.sort());
      for (const [path, node] of schemaNodes(objectSchema(v)))
        if (path !== "metadata" && node.description !== undefined)
          expect([...schemaNodes(schema)].find(([p]) => p === path)?.[1].description, `${v} ${path}`).toBe(
            node.description,
          );
    },
  );

  it.each(VERSIONS)(
    "%s: explain --recursive lists spec and status, and explain shows each field's description from schema.ts",
    async (v) => {
      const api = `--api-version=${GROUP}/${v}`;
      const tree = recursiveFields(await kubectl(["explain", PLURAL, api, "--recursive"]));
      // ObjectMeta is the apiserver's, described by Kubernetes itself.
      const ours = [...tree].filter(([p]) => p !== "metadata" && !p.startsWith("metadata."));
      expect(ours.map(([p]) => p)).toEqual(expect.arrayContaining(["spec", "status.conditions.type"]));

      const source = new Map(
        // A field's own description, not its items' (explain lists a list field by its own).
        [...schemaNodes(objectSchema(v))]
          .filter(([p]) => !p.endsWith("[]"))
          .map(([p, n]) => [p.replaceAll("[]", ""), String(n.description)]),
      );
      const seen = new Set<string>();
      const parents = ["", ...ours.filter(([, type]) => type.endsWith("Object")).map(([p]) => p)];
      for (const parent of parents) {
        const fields = explainedFields(
          await kubectl(["explain", parent ? `${PLURAL}.${parent}` : PLURAL, api]),
        );
        for (const f of fields) {
          const path = parent ? `${parent}.${f.name}` : f.name;
          if (path === "metadata") continue;
          // kubectl prints "<no description>" where a field has none.
          expect(f.description, `kubectl explain ${PLURAL}.${path} ${api} shows no description`).not.toMatch(
            /^$|^<no description>$/,
          );
          expect(oneLine(f.description), path).toBe(oneLine(source.get(path) ?? ""));
          seen.add(path);
        }
      }
      // Every field --recursive lists was shown with its description.
      expect([...seen].sort()).toEqual(ours.map(([p]) => p).sort());
    },
  );

  it("the issue's command, spelt as kubectl takes it: explain edgeroutes.spec --recursive for v2", async () => {
    const out = await kubectl(["explain", `${PLURAL}.spec`, `--api-version=${GROUP}/v2`, "--recursive"]);
    for (const f of ["hostnames", "rules", "matches", "path", "headers", "backends", "port", "tls"])
      expect(out).toMatch(new RegExp(`^ +${f}\\t<`, "m"));
    const port = await kubectl([
      "explain",
      `${PLURAL}.spec.rules.backends.port`,
      `--api-version=${GROUP}/v2`,
    ]);
    expect(oneLine(port)).toContain("not the pod's targetPort");
  });
});
