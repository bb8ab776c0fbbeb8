// The top-level certs/ folder: a clone has it (with its README), and what
// `edge-operator certs` writes there by default never shows in `git status`.
// The command runs as a user runs it, from the root of a git checkout that
// carries this repository's .gitignore and certs/README.md.

import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "../..");
const TSX = path.join(ROOT, "node_modules/.bin/tsx");
const MAIN = path.join(ROOT, "src/cli/main.ts");
const GENERATED = ["ca.crt", "ca.key", "tls.crt", "tls.key"];

function run(cmd: string, args: string[], cwd: string): string {
  const r = spawnSync(cmd, args, { cwd, encoding: "utf8", timeout: 60_000 });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} (exit ${r.status}): ${r.stderr}`);
  return r.stdout;
}

const git = (cwd: string, ...args: string[]): string =>
  run("git", ["-c", "user.name=test", "-c", "user.email=test@example.com", ...args], cwd);

describe("certs/", { timeout: 60_000 }, () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it("is in the repository with its README, and the files it is for are ignored", () => {
    expect(existsSync(path.join(ROOT, "certs/README.md"))).toBe(true);
    // check-ignore exits 0 for an ignored path, 1 for one that is not.
    const ignored = (p: string) =>
      spawnSync("git", ["check-ignore", "--no-index", "-q", p], { cwd: ROOT }).status === 0;
    expect(ignored("certs/README.md")).toBe(false);
    for (const f of GENERATED) expect(ignored(`certs/${f}`), f).toBe(true);
  });

  it("`edge-operator certs` writes there by default and leaves `git status` clean", () => {
    const repo = mkdtempSync(path.join(os.tmpdir(), "certs-folder-"));
    dirs.push(repo);
    git(repo, "init", "-q");
    mkdirSync(path.join(repo, "certs"));
    copyFileSync(path.join(ROOT, ".gitignore"), path.join(repo, ".gitignore"));
    copyFileSync(path.join(ROOT, "certs/README.md"), path.join(repo, "certs/README.md"));
    git(repo, "add", ".gitignore", "certs/README.md");
    git(repo, "commit", "-q", "-m", "clone");

    const out = run(TSX, [MAIN, "certs", "--dns", "localhost", "--ip", "127.0.0.1"], repo);
    expect(out).toContain(`created CA   ${path.join("certs", "ca.crt")}`);
    for (const f of GENERATED) expect(statSync(path.join(repo, "certs", f)).size, f).toBeGreaterThan(0);
    expect(git(repo, "status", "--porcelain", "--untracked-files=all")).toBe("");

    // The README's way to delete them removes exactly the generated files.
    git(repo, "clean", "-q", "-f", "-d", "-X", "certs/");
    for (const f of GENERATED) expect(existsSync(path.join(repo, "certs", f)), f).toBe(false);
    expect(existsSync(path.join(repo, "certs/README.md"))).toBe(true);
    expect(git(repo, "status", "--porcelain", "--untracked-files=all")).toBe("");
  });
});
