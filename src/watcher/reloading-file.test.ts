import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ReloadingFile } from "./reloading-file.js";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function tmp(): string {
  const d = mkdtempSync(path.join(os.tmpdir(), "reloading-file-"));
  dirs.push(d);
  return d;
}

function clock() {
  let t = 0;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

describe("ReloadingFile", () => {
  it("follows a file rewritten in place, read at most once per interval", () => {
    const file = path.join(tmp(), "ca.crt");
    writeFileSync(file, "one");
    const c = clock();
    let reads = 0;
    const events: string[] = [];
    const f = new ReloadingFile(file, {
      checkEveryMs: 1000,
      now: c.now,
      read: (p) => {
        reads++;
        return readFileSync(p, "utf8");
      },
      onChange: (e) => events.push(`${e.taken}`),
    });
    writeFileSync(file, "two");
    for (let i = 0; i < 100; i++) expect(f.current()).toBe("one");
    expect(reads).toBe(1);
    c.advance(1000);
    expect(f.current()).toBe("two");
    expect(reads).toBe(2);
    expect(events).toEqual(["true"]);
  });

  it("follows a Secret volume's symlink swap", () => {
    const dir = tmp();
    for (const [v, text] of [
      ["..v1", "first"],
      ["..v2", "second"],
    ] as const) {
      mkdirSync(path.join(dir, v));
      writeFileSync(path.join(dir, v, "ca.crt"), text);
    }
    symlinkSync("..v1", path.join(dir, "..data"));
    symlinkSync("..data/ca.crt", path.join(dir, "ca.crt"));
    const c = clock();
    const f = new ReloadingFile(path.join(dir, "ca.crt"), { now: c.now });
    expect(f.current()).toBe("first");
    // The kubelet's update: a new ..data link renamed over the old one.
    symlinkSync("..v2", path.join(dir, "..data_tmp"));
    renameSync(path.join(dir, "..data_tmp"), path.join(dir, "..data"));
    c.advance(1000);
    expect(f.current()).toBe("second");
  });

  it("keeps the last good text when the file is gone or refused, and reports a refusal once", () => {
    const file = path.join(tmp(), "token");
    writeFileSync(file, "token-1");
    const c = clock();
    const events: { taken: boolean; reason?: string }[] = [];
    const f = new ReloadingFile(file, {
      now: c.now,
      check: (t) => (t.trim() ? undefined : "the token file is empty"),
      onChange: (e) => events.push({ taken: e.taken, ...(e.reason ? { reason: e.reason } : {}) }),
    });
    rmSync(file);
    c.advance(1000);
    expect(f.current()).toBe("token-1");
    writeFileSync(file, "");
    for (let i = 0; i < 3; i++) {
      c.advance(1000);
      expect(f.current()).toBe("token-1");
    }
    expect(events).toEqual([{ taken: false, reason: "the token file is empty" }]);
    writeFileSync(file, "token-2");
    c.advance(1000);
    expect(f.current()).toBe("token-2");
    expect(events.at(-1)).toEqual({ taken: true });
  });

  it("refuses to start on a file it cannot use, naming it", () => {
    const file = path.join(tmp(), "ca.crt");
    writeFileSync(file, "junk");
    expect(() => new ReloadingFile(file, { check: () => "holds no PEM certificate" })).toThrow(
      `${file}: holds no PEM certificate`,
    );
    expect(() => new ReloadingFile(path.join(tmp(), "missing"))).toThrow(/ENOENT/);
  });
});
