// The operator's image, built without Docker (`npm run image`: the Dockerfile
// through buildah): what a user of the image relies on. The config says who
// runs what; the files are exactly the Dockerfile's (the compiled src without
// tests, the lockfile's production packages, package.json); and the image's
// own root filesystem runs `edge-operator --help` as user 65532. No tooling
// is in it: the test environment and the demo live in tools/, outside src/,
// and `edge-operator demo` is no command.

import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildOperatorImage, type OperatorImage } from "../../tools/testenv/image.js";
import { clusterUnsupported } from "../../tools/testenv/cluster.js";
import { REPO_ROOT } from "../../tools/testenv/testbin.js";

interface ImageConfig {
  User?: string;
  Env?: string[];
  Entrypoint?: string[];
  Cmd?: string[];
  WorkingDir?: string;
}

const unsupported = clusterUnsupported();
if (unsupported && !process.env.CI)
  process.stderr.write(`\n!!! SKIPPING THE IMAGE TESTS: ${unsupported} !!!\n\n`);

let image: OperatorImage;
let dir: string;
let rootfs: string;
let config: ImageConfig;
let files: Set<string>;

/** The final stage of the Dockerfile, read the way docker reads these five instructions. */
function dockerfileFinalStage(): ImageConfig {
  const text = readFileSync(path.join(REPO_ROOT, "Dockerfile"), "utf8").replace(/\\\n/g, " ");
  const lines = text.split("\n").map((l) => l.trim());
  const last =
    lines
      .map((l, i) => (/^FROM\s/i.test(l) ? i : -1))
      .filter((i) => i >= 0)
      .pop() ?? 0;
  const stage: ImageConfig = { Env: [] };
  for (const line of lines.slice(last)) {
    const [word, ...rest] = line.split(/\s+/);
    const arg = rest.join(" ");
    if (word === "USER") stage.User = arg;
    if (word === "WORKDIR") stage.WorkingDir = arg;
    if (word === "ENTRYPOINT") stage.Entrypoint = JSON.parse(arg) as string[];
    if (word === "CMD") stage.Cmd = JSON.parse(arg) as string[];
    if (word === "ENV") for (const kv of rest) stage.Env?.push(kv);
  }
  return stage;
}

/**
 * Every file of src/ the Dockerfile compiles (not the tests), as the .js and
 * .js.map tsc writes, and the JSON files that code imports (tsc copies those).
 */
function expectedDist(): string[] {
  const out = new Set<string>();
  const walk = (rel: string): void => {
    for (const name of readdirSync(path.join(REPO_ROOT, rel))) {
      const r = path.join(rel, name);
      if (statSync(path.join(REPO_ROOT, r)).isDirectory()) walk(r);
      else if (name.endsWith(".ts") && !name.endsWith(".test.ts") && !name.endsWith(".d.ts")) {
        const js = r.replace(/\.ts$/, ".js");
        out.add(`app/dist/${js}`).add(`app/dist/${js}.map`);
        const text = readFileSync(path.join(REPO_ROOT, r), "utf8");
        for (const m of text.matchAll(/from "(\.{1,2}\/[^"]+\.json)"/g))
          out.add(`app/dist/${path.join(path.dirname(r), m[1] ?? "")}`);
      }
    }
  };
  walk("src");
  return [...out].sort();
}

interface LockEntry {
  dev?: boolean;
  devOptional?: boolean;
  optional?: boolean;
  os?: string[];
  cpu?: string[];
}

/** The lockfile's packages, split into those `npm ci --omit=dev` installs here and those it must not. */
function lockfilePackages(): { production: string[]; devOnly: string[] } {
  const lock = JSON.parse(readFileSync(path.join(REPO_ROOT, "package-lock.json"), "utf8")) as {
    packages: Record<string, LockEntry>;
  };
  const production: string[] = [];
  const devOnly: string[] = [];
  for (const [key, entry] of Object.entries(lock.packages)) {
    if (!key.startsWith("node_modules/")) continue;
    const wrongPlatform =
      (entry.os && !entry.os.includes(process.platform)) || (entry.cpu && !entry.cpu.includes(process.arch));
    if (entry.dev) devOnly.push(key);
    else if (!entry.devOptional && !(entry.optional && wrongPlatform)) production.push(key);
  }
  return { production, devOnly };
}

/** The image's entrypoint with `args`, in its own root filesystem, as its user. */
function runInImage(
  args: readonly string[],
  env: Record<string, string> = {},
): { status: number | null; stdout: string; stderr: string } {
  return spawnSync(
    "/usr/sbin/chroot",
    ["--userspec=65532:65532", rootfs, ...(config.Entrypoint ?? []), ...args],
    {
      encoding: "utf8",
      env: { PATH: "/usr/local/bin:/usr/bin:/bin", NODE_ENV: "production", ...env },
      timeout: 60_000,
    },
  );
}

describe.skipIf(unsupported !== undefined && !process.env.CI)("the operator's image", () => {
  beforeAll(async () => {
    image = await buildOperatorImage();
    dir = mkdtempSync(path.join(os.tmpdir(), "edge-image-"));
    execFileSync("tar", ["-xf", image.tar, "-C", dir]);
    const manifest = JSON.parse(readFileSync(path.join(dir, "manifest.json"), "utf8")) as {
      Config: string;
      RepoTags: string[];
      Layers: string[];
    }[];
    const entry = manifest[0];
    if (!entry) throw new Error(`${image.tar}: manifest.json lists no image`);
    expect(entry.RepoTags).toEqual([image.ref]);
    config = (JSON.parse(readFileSync(path.join(dir, entry.Config), "utf8")) as { config: ImageConfig })
      .config;
    rootfs = path.join(dir, "rootfs");
    execFileSync("mkdir", ["-p", rootfs]);
    files = new Set();
    for (const layer of entry.Layers) {
      const names = execFileSync("tar", ["-tf", path.join(dir, layer)], {
        encoding: "utf8",
        maxBuffer: 64 << 20,
      });
      for (const n of names.split("\n")) if (n && !n.endsWith("/")) files.add(n.replace(/^\.\//, ""));
      execFileSync("tar", ["-xf", path.join(dir, layer), "-C", rootfs, "--same-owner", "-p"]);
    }
  }, 900_000);

  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("is tagged with the content hash of its inputs, and a second build is the cached one", async () => {
    expect(image.tag).toMatch(/^[0-9a-f]{12}$/);
    const again = await buildOperatorImage();
    expect(again.ref).toBe(image.ref);
    expect(again.tar).toBe(image.tar);
    expect(again.seconds).toBeLessThan(10);
  });

  it("runs the one executable as the non-root user, in production mode", () => {
    expect(config.User).toBe("65532:65532");
    expect(config.Entrypoint).toEqual(["node", "/app/dist/src/cli/main.js"]);
    expect(config.Cmd).toEqual(["--help"]);
    expect(config.WorkingDir).toBe("/app");
    expect(config.Env).toContain("NODE_ENV=production");
  });

  it("has the Dockerfile's final stage as its config", () => {
    const stage = dockerfileFinalStage();
    expect(config.User).toBe(stage.User);
    expect(config.WorkingDir).toBe(stage.WorkingDir);
    expect(config.Entrypoint).toEqual(stage.Entrypoint);
    expect(config.Cmd).toEqual(stage.Cmd);
    for (const kv of stage.Env ?? []) {
      // A value from a build argument (${COMMIT}) is the build's: the name must be there.
      if (kv.includes("${")) expect(config.Env?.map((e) => e.split("=")[0])).toContain(kv.split("=")[0]);
      else expect(config.Env).toContain(kv);
    }
  });

  it("holds exactly the compiled src (no tests), package.json, and the production packages", () => {
    const app = [...files].filter((f) => f.startsWith("app/"));
    const dist = app.filter((f) => f.startsWith("app/dist/")).sort();
    expect(dist).toEqual(expectedDist());
    expect(app.filter((f) => !f.startsWith("app/dist/") && !f.startsWith("app/node_modules/"))).toEqual([
      "app/package.json",
    ]);
    expect(readFileSync(path.join(rootfs, "app/package.json"), "utf8")).toBe(
      readFileSync(path.join(REPO_ROOT, "package.json"), "utf8"),
    );
    const { production, devOnly } = lockfilePackages();
    const missing = production.filter((p) => !files.has(`app/${p}/package.json`));
    const present = devOnly.filter((p) => files.has(`app/${p}/package.json`));
    expect(missing).toEqual([]);
    expect(present).toEqual([]);
    expect(production.length).toBeGreaterThan(50);
    expect(devOnly).toContain("node_modules/vitest");
  });

  it("holds no tooling: nothing of tools/, test/ or bench/, no test environment, no demo", () => {
    const app = [...files].filter((f) => f.startsWith("app/") && !f.startsWith("app/node_modules/"));
    expect(app.filter((f) => f.startsWith("app/dist/") && !f.startsWith("app/dist/src/"))).toEqual([]);
    expect(app.filter((f) => /(^|\/)(tools|test|bench|scripts|testenv|demo)(\/|\.|$)/.test(f))).toEqual([]);
    expect(files.has("app/dist/src/cli/main.js")).toBe(true);
  });

  it("runs `edge-operator --help` from its own root filesystem as 65532:65532", () => {
    const res = runInImage(config.Cmd ?? []);
    expect(res.stderr).toBe("");
    expect(res.status).toBe(0);
    expect(res.stdout).toMatch(/serve/);
    expect(res.stdout).toMatch(/watch/);
    expect(res.stdout).not.toMatch(/demo/);
  });

  it("says its version and the commit it was built from", () => {
    const version = (
      JSON.parse(readFileSync(path.join(REPO_ROOT, "package.json"), "utf8")) as { version: string }
    ).version;
    const commit = config.Env?.find((e) => e.startsWith("EDGE_OPERATOR_COMMIT="))?.split("=")[1] ?? "";
    expect(commit).toMatch(/^[0-9a-f]{40}(-dirty)?$/);
    const res = runInImage(["--version"], { EDGE_OPERATOR_COMMIT: commit });
    expect(res.stdout).toBe(`edge-operator ${version} (commit ${commit})\n`);
    expect(res.status).toBe(0);
  });

  it("has no `edge-operator demo`: an unknown command", () => {
    const res = runInImage(["demo"]);
    expect(res.status).toBe(2);
    expect(res.stderr).toMatch(/^edge-operator: unknown command "demo"/);
  });
});
