// The conversion webhook on the real control plane: the CRD serves v1 and v2,
// stores v1, and sends every ConversionReview to `edge-operator serve` by URL.
// No admission webhooks are registered here.

import fc from "fast-check";
import { mutateRoute } from "../../src/webhooks/mutate.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CustomObjectsApi } from "@kubernetes/client-node";
import { parse, stringify as toYaml } from "yaml";
import { buildCrd } from "../../src/api/crd.js";
import {
  GROUP,
  PLURAL,
  V2_SPEC_ANNOTATION,
  type EdgeRoute,
  type EdgeRouteSpecV1,
  type EdgeRouteSpecV2,
} from "../../src/api/types.js";
import { isV1Expressible, projectV1, specV2Of } from "../../src/conversion/convert.js";
import { specV1, specV2 } from "../fixtures/route-arbitraries.js";
import { startControlPlane } from "../harness/control-plane.js";
import type { ControlPlane } from "../../tools/testenv/control-plane.js";
import { startServe, type ServeProcess } from "../../tools/testenv/operator.js";

const NS = "conv";
let cp: ControlPlane;
let serve: ServeProcess;

async function kubectl(args: string[], input?: string): Promise<string> {
  const r = await cp.kubectl(args, input === undefined ? {} : { input });
  if (r.code !== 0)
    throw new Error(
      `kubectl ${args.join(" ")} failed (${r.code}): ${r.stderr}\nserve output:\n${serve.output().slice(-2000)}`,
    );
  return r.stdout;
}

async function getAs(version: "v1" | "v2", name: string): Promise<EdgeRoute> {
  return parse(
    await kubectl(["get", `${PLURAL}.${version}.${GROUP}`, name, "-n", NS, "-o", "yaml"]),
  ) as EdgeRoute;
}

beforeAll(async () => {
  cp = await startControlPlane();
  serve = await startServe();
  const crd = buildCrd({ conversion: { url: `${serve.url}/convert`, caBundle: serve.caBundle } });
  await kubectl(["apply", "-f", "-"], toYaml(crd));
  await kubectl(["wait", "--for=condition=Established", `crd/${PLURAL}.${GROUP}`, "--timeout=60s"]);
  await kubectl(["create", "namespace", NS]);
});

afterAll(async () => {
  await serve?.stop();
  await cp?.stop();
});

const twoRules: EdgeRouteSpecV2 = {
  hostnames: ["shop.example.com", "*.shop.example.com"],
  rules: [
    {
      matches: [{ path: { type: "PathPrefix", value: "/api" }, headers: [{ name: "x-canary", value: "1" }] }],
      backends: [
        { name: "checkout", port: 8080, weight: 90 },
        { name: "checkout-canary", port: 8080, weight: 10 },
      ],
      timeout: "1500ms",
    },
    {
      matches: [{ path: { type: "Exact", value: "/healthz" } }],
      backends: [{ name: "web", port: 80, weight: 1 }],
    },
  ],
};

/** The spec as /mutate would default it, which the CRD schema's defaults must match. */
function withV2Defaults(spec: EdgeRouteSpecV2): EdgeRouteSpecV2 {
  const mutated = mutateRoute({ apiVersion: `${GROUP}/v2`, metadata: {}, spec }, "CREATE") as {
    spec: EdgeRouteSpecV2;
  };
  return mutated.spec;
}

describe("EdgeRoute v1 and v2 served side by side", () => {
  it("kubectl applies a v1 and a v2 object and reads each in both versions", async () => {
    const v1Spec: EdgeRouteSpecV1 = {
      host: "shop.example.com",
      pathPrefix: "/api",
      service: "checkout",
      port: 8080,
      timeoutSeconds: 15,
    };
    await kubectl(
      ["apply", "-f", "-"],
      [
        {
          apiVersion: `${GROUP}/v1`,
          kind: "EdgeRoute",
          metadata: { name: "made-in-v1", namespace: NS, labels: { app: "shop" } },
          spec: v1Spec,
        },
        {
          apiVersion: `${GROUP}/v2`,
          kind: "EdgeRoute",
          metadata: { name: "made-in-v2", namespace: NS, labels: { app: "shop" } },
          spec: twoRules,
        },
      ]
        .map((o) => toYaml(o))
        .join("---\n"),
    );

    const a1 = await getAs("v1", "made-in-v1");
    expect(a1.apiVersion).toBe(`${GROUP}/v1`);
    expect(a1.spec).toStrictEqual(v1Spec);
    const a2 = await getAs("v2", "made-in-v1");
    expect(a2.apiVersion).toBe(`${GROUP}/v2`);
    expect(a2.spec).toStrictEqual({
      hostnames: ["shop.example.com"],
      rules: [
        {
          matches: [{ path: { type: "PathPrefix", value: "/api" } }],
          backends: [{ name: "checkout", port: 8080, weight: 1 }],
          timeout: "15s",
        },
      ],
    });
    expect(a2.metadata.uid).toBe(a1.metadata.uid);
    expect(a2.metadata.labels).toStrictEqual({ app: "shop" });

    const b2 = await getAs("v2", "made-in-v2");
    // Stored as the CRD defaults it: the header match's type is Exact (Gateway API's default).
    expect(b2.spec).toStrictEqual(withV2Defaults(twoRules));
    expect(b2.metadata.annotations?.[V2_SPEC_ANNOTATION]).toBeUndefined();
    const b1 = await getAs("v1", "made-in-v2");
    expect(b1.spec).toStrictEqual({
      host: "shop.example.com",
      pathPrefix: "/api",
      service: "checkout",
      port: 8080,
      timeoutSeconds: 2,
    });
    expect(JSON.parse(b1.metadata.annotations?.[V2_SPEC_ANNOTATION] ?? "null")).toStrictEqual(
      withV2Defaults(twoRules),
    );
  });

  it("a v2 object with two rules and weights, patched through v1, keeps the second rule and the weights", async () => {
    const name = "weighted";
    await kubectl(
      ["apply", "-f", "-"],
      toYaml({
        apiVersion: `${GROUP}/v2`,
        kind: "EdgeRoute",
        metadata: { name, namespace: NS },
        spec: twoRules,
      }),
    );
    expect(((await getAs("v1", name)).spec as EdgeRouteSpecV1).port).toBe(8080);

    await kubectl([
      "patch",
      `${PLURAL}.v1.${GROUP}`,
      name,
      "-n",
      NS,
      "--type",
      "merge",
      "-p",
      JSON.stringify({ spec: { port: 9090 } }),
    ]);

    const v1 = await getAs("v1", name);
    expect(v1.spec).toMatchObject({ port: 9090, service: "checkout" });
    const v2 = await getAs("v2", name);
    const stored = withV2Defaults(twoRules);
    expect(v2.spec).toStrictEqual({
      ...stored,
      rules: [
        {
          ...stored.rules[0],
          backends: [
            { name: "checkout", port: 9090, weight: 90 },
            { name: "checkout-canary", port: 8080, weight: 10 },
          ],
        },
        stored.rules[1],
      ],
    });
    expect(v2.metadata.annotations?.[V2_SPEC_ANNOTATION]).toBeUndefined();
  });

  it("a v2 edit of what v1 cannot see is stored in the annotation and bumps generation", async () => {
    const name = "weighted";
    const before = await getAs("v2", name);
    await kubectl([
      "patch",
      `${PLURAL}.v2.${GROUP}`,
      name,
      "-n",
      NS,
      "--type",
      "json",
      "-p",
      JSON.stringify([{ op: "replace", path: "/spec/rules/1/backends/0/port", value: 8081 }]),
    ]);
    const after = await getAs("v2", name);
    expect((after.spec as EdgeRouteSpecV2).rules[1]?.backends[0]?.port).toBe(8081);
    expect((after.spec as EdgeRouteSpecV2).rules[0]).toStrictEqual((before.spec as EdgeRouteSpecV2).rules[0]);
    const v1 = await getAs("v1", name);
    expect(JSON.parse(v1.metadata.annotations?.[V2_SPEC_ANNOTATION] ?? "null")).toStrictEqual(after.spec);
    // Only the annotation changed in v1 storage, yet the apiserver compares the
    // specs in the request's version, so observedGeneration still sees the edit.
    expect(after.metadata.generation).toBe((before.metadata.generation ?? 0) + 1);
  });

  it("1,000 objects, half created through v1 and half through v2, list correctly in both versions", async () => {
    const api = cp.kubeConfig().makeApiClient(CustomObjectsApi);
    const v1Specs = fc.sample(specV1, { numRuns: 500, seed: 11 });
    const v2Specs = fc.sample(specV2, { numRuns: 500, seed: 12 });
    const made = [
      ...v1Specs.map((spec, i) => ({ version: "v1" as const, name: `bulk-v1-${i}`, spec })),
      ...v2Specs.map((spec, i) => ({ version: "v2" as const, name: `bulk-v2-${i}`, spec })),
    ];
    const queue = [...made];
    await Promise.all(
      Array.from({ length: 20 }, async () => {
        for (let m = queue.shift(); m; m = queue.shift()) {
          await api.createNamespacedCustomObject({
            group: GROUP,
            version: m.version,
            namespace: NS,
            plural: PLURAL,
            body: {
              apiVersion: `${GROUP}/${m.version}`,
              kind: "EdgeRoute",
              metadata: { name: m.name, labels: { batch: "bulk" } },
              spec: m.spec,
            },
          });
        }
      }),
    );

    const list = async (version: "v1" | "v2"): Promise<Map<string, EdgeRoute>> => {
      const res = (await api.listNamespacedCustomObject({
        group: GROUP,
        version,
        namespace: NS,
        plural: PLURAL,
        labelSelector: "batch=bulk",
      })) as {
        items: EdgeRoute[];
      };
      for (const o of res.items) expect(o.apiVersion).toBe(`${GROUP}/${version}`);
      return new Map(res.items.map((o) => [o.metadata.name ?? "", o]));
    };
    const [asV1, asV2] = [await list("v1"), await list("v2")];
    expect(asV1.size).toBe(1000);
    expect(asV2.size).toBe(1000);

    for (const m of made) {
      const one = asV1.get(m.name);
      const two = asV2.get(m.name);
      expect(two?.metadata.annotations?.[V2_SPEC_ANNOTATION], m.name).toBeUndefined();
      if (m.version === "v1") {
        const spec = m.spec as EdgeRouteSpecV1;
        expect(one?.spec, m.name).toStrictEqual(spec);
        expect(two?.spec, m.name).toStrictEqual(specV2Of(spec));
      } else {
        // Stored as the apiserver defaults it (the CRD schema's defaults, the same as /mutate's).
        const spec = withV2Defaults(m.spec as EdgeRouteSpecV2);
        expect(two?.spec, m.name).toStrictEqual(spec);
        expect(one?.spec, m.name).toStrictEqual(projectV1(spec));
        const annotation = one?.metadata.annotations?.[V2_SPEC_ANNOTATION];
        if (isV1Expressible(spec)) expect(annotation, m.name).toBeUndefined();
        else expect(JSON.parse(annotation ?? "null"), m.name).toStrictEqual(spec);
      }
    }
  });
});
