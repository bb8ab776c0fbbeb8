// Why a file could not be read, in words: a person who typed a path reads
// "no such file", not ENOENT and a stack.

const REASONS: Record<string, string> = {
  ENOENT: "no such file",
  EACCES: "permission denied",
  EPERM: "permission denied",
  EISDIR: "is a directory, not a file",
  ENOTDIR: "a part of the path is not a directory",
  ELOOP: "too many symbolic links",
  EMFILE: "too many open files",
};

/** A read error's reason: known codes in words, else the error's own first line. */
export function fileReason(err: unknown): string {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (typeof code === "string" && REASONS[code]) return REASONS[code];
  const message = err instanceof Error ? err.message : String(err);
  return message.split("\n")[0] ?? message;
}

/** Whether `err` is a file system error (it has a code and names a path). */
export function isFileError(err: unknown): err is NodeJS.ErrnoException & { path: string } {
  const e = err as NodeJS.ErrnoException | undefined;
  return typeof e?.code === "string" && typeof e.path === "string" && typeof e.syscall === "string";
}
