// A small file the watcher must follow as it changes: the CA that signs the
// server's certificate (a mounted Secret the server or cert-manager renews)
// and the bearer token (a projected ServiceAccount token the kubelet rotates).
// Read at most once per interval, so asking on every call costs nothing; a
// Secret volume swaps a symlink, which only a fresh read by path sees. A read
// that fails, or text that is not acceptable (a file caught half-written),
// keeps the last good value.

import { readFileSync } from "node:fs";

export interface ReloadingFileOptions {
  /** Least time between two reads (default 1 s). */
  checkEveryMs?: number;
  /** Why the text cannot be used, or undefined when it can. */
  check?: (text: string) => string | undefined;
  /** Called after a new value is taken, and when a changed file is refused. */
  onChange?: (event: { path: string; taken: boolean; reason?: string }) => void;
  now?: () => number;
  read?: (path: string) => string;
}

export class ReloadingFile {
  private value: string;
  private readAt: number;
  /** The text last refused, so a bad file is reported once, not on every read. */
  private refused: string | undefined;
  private readonly checkEveryMs: number;
  private readonly now: () => number;
  private readonly read: (path: string) => string;

  /** Reads the file now; throws when it cannot be read or its text is refused. */
  constructor(
    readonly path: string,
    private readonly opts: ReloadingFileOptions = {},
  ) {
    this.checkEveryMs = opts.checkEveryMs ?? 1000;
    this.now = opts.now ?? Date.now;
    this.read = opts.read ?? ((p) => readFileSync(p, "utf8"));
    const text = this.read(path);
    const bad = opts.check?.(text);
    if (bad !== undefined) throw new Error(`${path}: ${bad}`);
    this.value = text;
    this.readAt = this.now();
  }

  /** The file's text as of at most `checkEveryMs` ago. */
  current(): string {
    if (this.now() - this.readAt < this.checkEveryMs) return this.value;
    this.readAt = this.now();
    let text: string;
    try {
      text = this.read(this.path);
    } catch {
      return this.value; // a rotation in progress: the next read sees the new file
    }
    if (text === this.value || text === this.refused) return this.value;
    const bad = this.opts.check?.(text);
    if (bad !== undefined) {
      this.refused = text;
      this.opts.onChange?.({ path: this.path, taken: false, reason: bad });
      return this.value;
    }
    this.value = text;
    this.refused = undefined;
    this.opts.onChange?.({ path: this.path, taken: true });
    return this.value;
  }
}
