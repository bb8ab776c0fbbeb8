// The admission webhooks on the real control plane, driven by kubectl as a
// user types it: `edge-operator serve` answers /mutate, /validate and
// /convert by URL; the CRD, the webhook configurations and the routes are
// applied with `kubectl apply -f -`.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, stringify as toYaml } from "yaml";

import { buildCrd } from "../../src/api/crd.js";
import { FINALIZER, GROUP, PLURAL } from "../../src/api/types.js";
import { mutatingWebhookConfiguration, validatingWebhookConfiguration } from "../harness/registration.js";
import { startControlPlane } from "../harness/control-plane.js";
import { samples } from "../harness/apiserver-cost.js";
import type { ControlPlane, RunResult } from "../../tools/testenv/control-plane.js";
import { startServe, type ServeProcess } from "../../tools/testenv/operator.js";
import { waitFor } from "../../tools/testenv/process.js";
import { NS, backend, invalid, rule, v1, v2, type Spec } from "./admission-routes.js";

const HOLD = "test.10xdev.io/hold";
let cp: ControlPlane;
let serve: ServeProcess;

function explain(r: RunResult): string {
  return `exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}\nserve:\n${serve.output().slice(-2000)}`;
}

async function kubectl(args: string[], input?: string): Promise<string> {
  const r = await cp.kubectl(args, input === undefined ? {} : { input });
  if (r.code !== 0) throw new Error(`kubectl ${args.join(" ")} failed: ${explain(r)}`);
  return r.stdout;
}

const apply = (obj: unknown, extra: string[] = []) =>
  cp.kubectl(["apply", "-f", "-", ...extra], { input: toYaml(obj) });

async function getRoute(name: string, version: "v1" | "v2" = "v2"): Promise<RunResult> {
  return cp.kubectl(["get", `${PLURAL}.${version}.${GROUP}`, name, "-n", NS, "-o", "json"]);
}

interface Stored {
  metadata: { finalizers?: string[]; deletionTimestamp?: string };
  spec: Spec & { rules?: { matches: { path: { type?: string } }[]; backends: { weight?: number }[] }[] };
}

async function stored(name: string, version: "v1" | "v2" = "v2"): Promise<Stored> {
  const r = await getRoute(name, version);
  if (r.code !== 0) throw new Error(`get ${name}: ${explain(r)}`);
  return JSON.parse(r.stdout) as Stored;
}

async function expectAbsent(name: string): Promise<void> {
  const r = await getRoute(name);
  expect(r.code, `expected ${name} not to be stored: ${r.stdout}`).toBe(1);
  expect(r.stderr).toContain("NotFound");
}

// The apiserver picks up new webhook configurations a moment after they are
// written; wait until each answers.
async function untilWebhookAnswers(check: () => Promise<boolean>, what: string): Promise<void> {
  await waitFor(what, async () => ((await check()) ? true : undefined), 30_000, 200);
}

beforeAll(async () => {
  cp = await startControlPlane();
  // The kubeconfig lets /validate look for conflicting routes.
  serve = await startServe({ args: ["--kubeconfig", cp.kubeconfig] });
  await kubectl(
    ["apply", "-f", "-"],
    toYaml(buildCrd({ conversion: { url: `${serve.url}/convert`, caBundle: serve.caBundle } })),
  );
  await kubectl(["wait", "--for=condition=Established", `crd/${PLURAL}.${GROUP}`, "--timeout=60s"]);
  await kubectl(["create", "namespace", NS]);

  const client = { url: serve.url, caBundle: serve.caBundle };
  await kubectl(["apply", "-f", "-"], toYaml(mutatingWebhookConfiguration({ client })));
  await untilWebhookAnswers(async () => {
    const r = await apply(v1("probe-mutate"), ["--dry-run=server", "-o", "json"]);
    return r.code === 0 && r.stdout.includes(FINALIZER);
  }, "the mutating webhook");

  // A route written before today's validation rules: its path has "//", which
  // the CRD schema lets through and /validate refuses. (A real cluster gets
  // such routes from an older operator version.) It carries a second
  // finalizer so that it outlives the removal of ours.
  const legacy = await apply(v1("legacy", { pathPrefix: "/a//b" }, { finalizers: [HOLD] }));
  if (legacy.code !== 0) throw new Error(`legacy route: ${explain(legacy)}`);

  await kubectl(["apply", "-f", "-"], toYaml(validatingWebhookConfiguration({ client })));
  await untilWebhookAnswers(async () => {
    const r = await apply(v1("probe-validate", { pathPrefix: "/a//b" }), ["--dry-run=server"]);
    return r.code !== 0 && r.stderr.includes("denied the request");
  }, "the validating webhook");
});

afterAll(async () => {
  await serve?.stop();
  await cp?.stop();
});

describe("kubectl apply of an invalid route", () => {
  it("has a table of at least 15 cases, in both versions", () => {
    expect(invalid.length).toBeGreaterThanOrEqual(15);
    expect(invalid.filter((c) => c.name.startsWith("v1")).length).toBeGreaterThan(5);
    expect(invalid.filter((c) => c.name.startsWith("v2")).length).toBeGreaterThan(5);
  });

  it.each(invalid)(
    "$name: exits 1, names the field and the reason, stores nothing",
    async ({ name, obj, by, expect: words }) => {
      const r = await apply(obj);
      expect(r.code, explain(r)).toBe(1);
      for (const w of words) expect(r.stderr).toContain(w);
      if (by === "webhook") {
        expect(r.stderr).toContain(
          `admission webhook "validate.edgeroutes.net.10xdev.io" denied the request: EdgeRoute.net.10xdev.io "${name}" is invalid:`,
        );
      } else {
        expect(r.stderr).toContain("is invalid");
      }
      await expectAbsent(name);
    },
  );
});

/** The apiserver's match condition evaluations for the EdgeRoute webhooks so far, by operation. */
async function conditionEvaluations(): Promise<Record<string, number>> {
  const text = await kubectl(["get", "--raw", "/metrics"]);
  const by: Record<string, number> = {};
  for (const s of samples(text, "apiserver_admission_match_condition_evaluation_seconds_count")) {
    if (s.labels.kind !== "webhook" || !s.labels.name?.endsWith(`.${PLURAL}.${GROUP}`)) continue;
    const op = s.labels.operation ?? "";
    by[op] = (by[op] ?? 0) + s.value;
  }
  return by;
}

describe("what admission costs the apiserver", () => {
  // Each match condition copies the object into CEL's input, per webhook.
  it("evaluates no match condition for a create in either version; an edit is matched by the update webhooks", async () => {
    const before = await conditionEvaluations();
    for (const obj of [v1("cel-v1"), v2("cel-v2")]) {
      const r = await apply(obj);
      expect(r.code, explain(r)).toBe(0);
    }
    const created = await conditionEvaluations();
    expect(created.CREATE ?? 0).toBe(before.CREATE ?? 0);
    expect((await stored("cel-v1")).metadata.finalizers).toEqual([FINALIZER]);

    const edit = await apply(v1("cel-v1", { pathPrefix: "/edited" }));
    expect(edit.code, explain(edit)).toBe(0);
    expect((await conditionEvaluations()).UPDATE ?? 0).toBeGreaterThan(created.UPDATE ?? 0);
  });
});

describe("kubectl apply of a valid route", () => {
  it("stores a v1 route with the finalizer", async () => {
    const r = await apply(v1("shop-v1"));
    expect(r.code, explain(r)).toBe(0);
    const got = await stored("shop-v1", "v1");
    expect(got.metadata.finalizers).toEqual([FINALIZER]);
    expect(got.spec).toEqual(v1("shop-v1").spec);
  });

  it("stores a v2 route with the finalizer and the defaults", async () => {
    const r = await apply(
      v2("shop-v2", { rules: [rule({ backends: [backend, { name: "canary", port: 8080, weight: 0 }] })] }),
    );
    expect(r.code, explain(r)).toBe(0);
    const got = await stored("shop-v2");
    expect(got.metadata.finalizers).toEqual([FINALIZER]);
    expect(got.spec.rules).toEqual([
      {
        matches: [{ path: { type: "PathPrefix", value: "/api" } }],
        backends: [
          { name: "checkout", port: 8080, weight: 1 },
          { name: "canary", port: 8080, weight: 0 },
        ],
      },
    ]);
  });

  it("applying the same route again changes nothing", async () => {
    const before = await stored("shop-v2");
    const r = await apply(
      v2("shop-v2", { rules: [rule({ backends: [backend, { name: "canary", port: 8080, weight: 0 }] })] }),
    );
    expect(r.code, explain(r)).toBe(0);
    // kubectl sends the rules list again (a merge patch replaces lists), so it
    // says "configured"; /mutate puts the same defaults back, and the
    // apiserver writes nothing: same resourceVersion, same generation.
    expect((await stored("shop-v2")).metadata).toEqual(before.metadata);
  });

  it("--dry-run=server shows the finalizer and the defaults, and stores nothing", async () => {
    for (const obj of [v1("dry-v1"), v2("dry-v2")]) {
      const r = await apply(obj, ["--dry-run=server", "-o", "yaml"]);
      expect(r.code, explain(r)).toBe(0);
      const shown = parse(r.stdout) as Stored;
      expect(shown.metadata.finalizers).toEqual([FINALIZER]);
      if (obj.apiVersion.endsWith("v2")) {
        expect(shown.spec.rules?.[0]?.backends[0]?.weight).toBe(1);
        expect(shown.spec.rules?.[0]?.matches[0]?.path.type).toBe("PathPrefix");
      }
      await expectAbsent(obj.metadata.name);
    }
  });

  it("warns, and still admits, a route whose host and match an older route owns", async () => {
    const owner = await apply(v2("owner", { hostnames: ["conflict.example.com"] }));
    expect(owner.code, explain(owner)).toBe(0);
    const late = v1("late", { host: "conflict.example.com", pathPrefix: "/api" });
    // The lookup is cached for about a second; the warning appears once it sees the owner.
    await waitFor(
      "the conflict warning",
      async () => {
        const r = await apply(late, ["--dry-run=server"]);
        return r.code === 0 && r.stderr.includes("conflicts with older EdgeRoute") ? true : undefined;
      },
      10_000,
      250,
    );
    const r = await apply(late);
    expect(r.code, explain(r)).toBe(0);
    expect(r.stderr).toContain(
      `Warning: conflicts with older EdgeRoute ${NS}/owner on conflict.example.com PathPrefix /api; that route wins`,
    );
    expect((await stored("late", "v1")).metadata.finalizers).toEqual([FINALIZER]);
  });
});

describe("filters, timeouts, retry and richer matches", () => {
  const everything = v2("every-field", {
    rules: [
      rule({
        matches: [
          {
            path: { type: "PathPrefix", value: "/api" },
            headers: [
              { name: "x-canary", value: "1" },
              { type: "RegularExpression", name: "x-v", value: "v[12]" },
            ],
            queryParams: [{ name: "debug", value: "1" }],
            method: "GET",
          },
        ],
        filters: [
          {
            type: "RequestHeaderModifier",
            requestHeaderModifier: { set: [{ name: "x-env", value: "prod" }], remove: ["x-debug"] },
          },
          {
            type: "ResponseHeaderModifier",
            responseHeaderModifier: { add: [{ name: "x-served-by", value: "edge" }] },
          },
          {
            type: "URLRewrite",
            urlRewrite: {
              hostname: "internal.example.com",
              path: { type: "ReplacePrefixMatch", replacePrefixMatch: "/v2" },
            },
          },
          { type: "RequestMirror", requestMirror: { backend: { name: "shadow", port: 80 }, percent: 10 } },
        ],
        timeout: "10s",
        timeouts: { request: "10s", backendRequest: "2s" },
        retry: { attempts: 3, codes: [503], conditions: ["ConnectFailure", "Unavailable"], backoff: "50ms" },
      }),
      rule({
        matches: [{ path: { type: "RegularExpression", value: "/old/.*" } }],
        backends: [],
        filters: [
          { type: "RequestRedirect", requestRedirect: { scheme: "https", hostname: "new.example.com" } },
        ],
      }),
    ],
  });

  it("stores a route that uses every new field, with Gateway API's defaults (Exact, 302) as /mutate and the CRD apply them", async () => {
    const r = await apply(everything);
    expect(r.code, explain(r)).toBe(0);
    const got = (await stored("every-field")).spec as { rules: Record<string, unknown>[] };
    const [first, second] = got.rules as [Record<string, unknown>, Record<string, unknown>];
    expect(first.matches).toEqual([
      {
        path: { type: "PathPrefix", value: "/api" },
        headers: [
          { type: "Exact", name: "x-canary", value: "1" },
          { type: "RegularExpression", name: "x-v", value: "v[12]" },
        ],
        queryParams: [{ type: "Exact", name: "debug", value: "1" }],
        method: "GET",
      },
    ]);
    expect(first.filters).toEqual((everything.spec.rules[0] as unknown as { filters: unknown }).filters);
    expect(second.filters).toEqual([
      {
        type: "RequestRedirect",
        requestRedirect: { scheme: "https", hostname: "new.example.com", statusCode: 302 },
      },
    ]);
    expect(second.backends).toEqual([]);
    expect(first.retry).toEqual({
      attempts: 3,
      codes: [503],
      conditions: ["ConnectFailure", "Unavailable"],
      backoff: "50ms",
    });
    // v1 shows the rule with a backend, and carries the whole spec.
    const asV1 = JSON.parse((await getRoute("every-field", "v1")).stdout) as {
      spec: Spec;
      metadata: { annotations?: Record<string, string> };
    };
    expect(asV1.spec).toMatchObject({
      pathPrefix: "/api",
      service: "checkout",
      port: 8080,
      timeoutSeconds: 10,
    });
    expect(JSON.parse(asV1.metadata.annotations?.[`${GROUP}/v2-spec`] ?? "{}")).toEqual(got);
  });

  it("a dry run of a refused combination is answered by the CRD's CEL rules alone, every error at once", async () => {
    const obj = v2("cel-only", {
      rules: [
        rule({
          filters: [
            { type: "RequestRedirect", requestRedirect: {} },
            { type: "URLRewrite", urlRewrite: { hostname: "a.example.com" } },
          ],
          timeouts: { request: "1s", backendRequest: "2s" },
        }),
      ],
    });
    const r = await apply(obj, ["--dry-run=server"]);
    expect(r.code, explain(r)).toBe(1);
    expect(r.stderr).not.toContain("denied the request");
    expect(r.stderr.trim()).toBe(
      [
        'The EdgeRoute "cel-only" is invalid: ',
        "* spec.rules[0].backends: Forbidden: must be empty in a rule with a RequestRedirect filter: the redirect answers every request itself",
        "* spec.rules[0].filters: Forbidden: a RequestRedirect and a URLRewrite cannot be in the same rule: a redirected request is not forwarded, so nothing is rewritten",
        "* spec.rules[0].timeouts.backendRequest: Invalid value: must not be longer than timeouts.request",
      ].join("\n"),
    );
    await expectAbsent("cel-only");
  });
});

describe("TLS", () => {
  it("stores a v2 route with TLS as written (no default added) and shows its Secret in the TLS column", async () => {
    const obj = v2("tls-shop", { tls: { secretName: "tls-shop" } });
    const r = await apply(obj);
    expect(r.code, explain(r)).toBe(0);
    expect((await stored("tls-shop")).spec.tls).toEqual({ secretName: "tls-shop" });
    const table = await kubectl(["get", `${PLURAL}.v2.${GROUP}`, "tls-shop", "-n", NS]);
    const [header, row] = table
      .trim()
      .split("\n")
      .map((line) => line.trim().split(/\s+/));
    expect(header).toContain("TLS");
    expect(row?.[header?.indexOf("TLS") ?? -1]).toBe("tls-shop");
    // v1 cannot say TLS: it reads the route with the whole v2 spec in the annotation.
    const asV1 = JSON.parse((await getRoute("tls-shop", "v1")).stdout) as {
      metadata: { annotations?: Record<string, string> };
    };
    expect(JSON.parse(asV1.metadata.annotations?.[`${GROUP}/v2-spec`] ?? "{}")).toMatchObject({
      tls: { secretName: "tls-shop" },
    });
  });

  it("kubectl explain describes every TLS field: the default, the Secret's type and namespace, the 301", async () => {
    const tls = await kubectl(["explain", `${PLURAL}.spec.tls`, `--api-version=${GROUP}/v2`]);
    expect(tls).toContain("plainHTTP is Allow");
    const fields = await kubectl([
      "explain",
      `${PLURAL}.spec.tls`,
      `--api-version=${GROUP}/v2`,
      "--recursive",
    ]);
    for (const f of ["secretName", "hostnames", "plainHTTP"]) expect(fields).toContain(f);
    const secret = await kubectl(["explain", `${PLURAL}.spec.tls.secretName`, `--api-version=${GROUP}/v2`]);
    expect(secret).toContain("kubernetes.io/tls, in the route's namespace");
    const hosts = await kubectl(["explain", `${PLURAL}.spec.tls.hostnames`, `--api-version=${GROUP}/v2`]);
    expect(hosts).toContain("Defaults to all of spec.hostnames");
    const plain = await kubectl(["explain", `${PLURAL}.spec.tls.plainHTTP`, `--api-version=${GROUP}/v2`]);
    expect(plain).toContain("Redirect (the default) answers 301");
  });

  it("refuses TLS on a route for any host by the CRD's CEL rule alone, in a --dry-run=server create", async () => {
    const obj = { ...v2("tls-catch-all"), spec: { rules: [rule()], tls: { secretName: "shop-tls" } } };
    const r = await apply(obj, ["--dry-run=server"]);
    expect(r.code, explain(r)).toBe(1);
    expect(r.stderr).toContain(
      'The EdgeRoute "tls-catch-all" is invalid: spec.tls: Forbidden: needs spec.hostnames: a route for any host (no hostnames) cannot have TLS',
    );
    // The schema answered: the validating webhook was never asked.
    expect(r.stderr).not.toContain("denied the request");
    await expectAbsent("tls-catch-all");
    // One problem, one message: TLS hosts on a route with no hostnames are not also "not among" them.
    const listed = await apply(
      {
        ...obj,
        spec: { ...obj.spec, hostnames: [], tls: { secretName: "shop-tls", hostnames: ["a.example.com"] } },
      },
      ["--dry-run=server"],
    );
    expect(listed.code, explain(listed)).toBe(1);
    expect(listed.stderr.trim()).toBe(
      'The EdgeRoute "tls-catch-all" is invalid: spec.tls: Forbidden: needs spec.hostnames: a route for any host (no hostnames) cannot have TLS',
    );
  });

  // serve's /validate reads ClusterCache.tlsSecretExists (src/wiring/serve-parts.ts).
  it("warns about a Secret that does not exist yet, and stops once it does", async () => {
    const obj = v2("tls-warn", { tls: { secretName: "tls-warn" } });
    const r = await apply(obj);
    expect(r.code, explain(r)).toBe(0);
    expect(r.stderr).toContain(
      `Warning: Secret ${NS}/tls-warn not found: the route reports ResolvedRefs=False/SecretNotFound until it exists`,
    );
    const crt = Buffer.from("not checked by the apiserver").toString("base64");
    await kubectl(
      ["apply", "-f", "-"],
      toYaml({
        apiVersion: "v1",
        kind: "Secret",
        type: "kubernetes.io/tls",
        metadata: { name: "tls-warn", namespace: NS },
        data: { "tls.crt": crt, "tls.key": crt },
      }),
    );
    await waitFor(
      "the warning to stop",
      async () => {
        const again = await apply(obj, ["--dry-run=server"]);
        return again.code === 0 && !again.stderr.includes("tls-warn not found") ? true : undefined;
      },
      10_000,
      250,
    );
  });
});

describe("a terminating route whose spec no longer validates", () => {
  it("was stored before the validating webhook, and is refused on any change while live", async () => {
    const got = await stored("legacy", "v1");
    expect(got.spec.pathPrefix).toBe("/a//b");
    expect(got.metadata.finalizers).toEqual([HOLD, FINALIZER]);
    const r = await cp.kubectl(["label", `${PLURAL}.v1.${GROUP}`, "legacy", "-n", NS, "team=shop"]);
    expect(r.code, explain(r)).toBe(1);
    expect(r.stderr).toContain("spec.pathPrefix");
  });

  it("can have its finalizer removed once deleted, and mutate does not put it back", async () => {
    const del = await cp.kubectl(["delete", `${PLURAL}.v1.${GROUP}`, "legacy", "-n", NS, "--wait=false"]);
    expect(del.code, explain(del)).toBe(0);
    expect((await stored("legacy", "v1")).metadata.deletionTimestamp).toBeTruthy();

    // A spec change is still judged, terminating or not.
    const spec = await cp.kubectl([
      "patch",
      `${PLURAL}.v1.${GROUP}`,
      "legacy",
      "-n",
      NS,
      "--type=merge",
      "-p",
      '{"spec":{"port":9090}}',
    ]);
    expect(spec.code, explain(spec)).toBe(1);
    expect(spec.stderr).toContain("spec.pathPrefix");

    // What the reconciler does once the data plane no longer serves the route.
    const release = await cp.kubectl([
      "patch",
      `${PLURAL}.v1.${GROUP}`,
      "legacy",
      "-n",
      NS,
      "--type=json",
      "-p",
      JSON.stringify([
        { op: "test", path: "/metadata/finalizers/1", value: FINALIZER },
        { op: "remove", path: "/metadata/finalizers/1" },
      ]),
    ]);
    expect(release.code, explain(release)).toBe(0);
    expect((await stored("legacy", "v1")).metadata.finalizers).toEqual([HOLD]);

    const last = await cp.kubectl([
      "patch",
      `${PLURAL}.v1.${GROUP}`,
      "legacy",
      "-n",
      NS,
      "--type=json",
      "-p",
      '[{"op":"remove","path":"/metadata/finalizers"}]',
    ]);
    expect(last.code, explain(last)).toBe(0);
    await waitFor(
      "legacy to go away",
      async () => ((await getRoute("legacy")).code === 1 ? true : undefined),
      10_000,
      100,
    );
    await expectAbsent("legacy");
  });

  it("a live route that is deleted keeps our finalizer until it is released", async () => {
    const del = await cp.kubectl(["delete", `${PLURAL}.v2.${GROUP}`, "shop-v2", "-n", NS, "--wait=false"]);
    expect(del.code, explain(del)).toBe(0);
    const label = await cp.kubectl(["label", `${PLURAL}.v2.${GROUP}`, "shop-v2", "-n", NS, "gone=soon"]);
    expect(label.code, explain(label)).toBe(0);
    expect((await stored("shop-v2")).metadata.finalizers).toEqual([FINALIZER]);
    const release = await cp.kubectl([
      "patch",
      `${PLURAL}.v2.${GROUP}`,
      "shop-v2",
      "-n",
      NS,
      "--type=json",
      "-p",
      '[{"op":"remove","path":"/metadata/finalizers"}]',
    ]);
    expect(release.code, explain(release)).toBe(0);
    await waitFor(
      "shop-v2 to go away",
      async () => ((await getRoute("shop-v2")).code === 1 ? true : undefined),
      10_000,
      100,
    );
  });
});
