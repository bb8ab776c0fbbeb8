// When a snapshot's inputs were read: the resourceVersion of each LIST it was
// built from. Kubernetes 1.35 made resourceVersions comparable within one
// resource type (KEP-5504: positive integers without leading zeros), not across
// types, so a read revision is one number per type and one read is newer than
// another only when it is newer or equal in every type.
//
// The data plane keeps the revision of what it took and refuses anything read
// before it: a reconcile that read the routes, stalled, and woke after a newer
// one pushed and released a finalizer can no longer put the deleted route back.

export const REVISION_PARTS = ["routes", "services", "endpointslices"] as const;
export type RevisionPart = (typeof REVISION_PARTS)[number];

export type ReadRevision = Readonly<Record<RevisionPart, string>>;

/** KEP-5504's well-formed resourceVersion: a positive integer, no leading zero, any length. */
export function isComparableResourceVersion(rv: string): boolean {
  return /^[1-9][0-9]*$/.test(rv);
}

/** -1, 0 or 1, as KEP-5504's CompareResourceVersion: longer is larger, then by digits. */
export function compareResourceVersion(a: string, b: string): number {
  if (a.length !== b.length) return a.length < b.length ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** `routes=12,services=9,endpointslices=11`: what the ConfigMap's annotation holds. */
export function formatReadRevision(rev: ReadRevision): string {
  return REVISION_PARTS.map((p) => `${p}=${rev[p]}`).join(",");
}

/** The inverse of formatReadRevision; undefined for anything else (a hand edit, an older operator). */
export function parseReadRevision(text: string | undefined): ReadRevision | undefined {
  if (text === undefined) return undefined;
  const parts = new Map<string, string>();
  for (const field of text.split(",")) {
    const eq = field.indexOf("=");
    if (eq < 0) return undefined;
    parts.set(field.slice(0, eq), field.slice(eq + 1));
  }
  if (parts.size !== REVISION_PARTS.length) return undefined;
  const out: Partial<Record<RevisionPart, string>> = {};
  for (const p of REVISION_PARTS) {
    const rv = parts.get(p);
    if (rv === undefined || !isComparableResourceVersion(rv)) return undefined;
    out[p] = rv;
  }
  return out as ReadRevision;
}

/** A read revision from the three LISTs' resourceVersions; undefined when one is not comparable. */
export function readRevision(
  lists: Readonly<Record<RevisionPart, string | undefined>>,
): ReadRevision | undefined {
  const out: Partial<Record<RevisionPart, string>> = {};
  for (const p of REVISION_PARTS) {
    const rv = lists[p];
    if (rv === undefined || !isComparableResourceVersion(rv)) return undefined;
    out[p] = rv;
  }
  return out as ReadRevision;
}

/** True when `a` was read no earlier than `b` in every type. */
export function notOlder(a: ReadRevision, b: ReadRevision): boolean {
  return REVISION_PARTS.every((p) => compareResourceVersion(a[p], b[p]) >= 0);
}

/** The newer of the two in each type: what a data plane records after taking `a` over `b`. */
export function newestOf(a: ReadRevision, b: ReadRevision): ReadRevision {
  const out: Partial<Record<RevisionPart, string>> = {};
  for (const p of REVISION_PARTS) out[p] = compareResourceVersion(a[p], b[p]) >= 0 ? a[p] : b[p];
  return out as ReadRevision;
}

export function sameRevision(a: ReadRevision, b: ReadRevision): boolean {
  return REVISION_PARTS.every((p) => a[p] === b[p]);
}

export type RevisionVerdict =
  /** Take it; record `record` (never older than what was recorded). */
  | { readonly ok: true; readonly record: ReadRevision | undefined }
  | { readonly ok: false; readonly message: string };

/**
 * Whether a data plane that recorded `held` (for the version it serves) may
 * take `version` read at `read`. The same version is always fine (nothing
 * changes for traffic) and raises what is recorded; a different version must
 * have been read no earlier than `held` in every type. A snapshot without a
 * revision (unit tests, an apiserver whose resourceVersions are not integers)
 * is taken as before, and leaves the record as it was.
 */
export function judgeRevision(
  read: ReadRevision | undefined,
  held: ReadRevision | undefined,
  sameVersion: boolean,
): RevisionVerdict {
  if (read === undefined) return { ok: true, record: held };
  if (held === undefined) return { ok: true, record: read };
  if (sameVersion) return { ok: true, record: newestOf(read, held) };
  if (notOlder(read, held)) return { ok: true, record: read };
  return {
    ok: false,
    message: `read at ${formatReadRevision(read)}, before the data plane's snapshot read at ${formatReadRevision(held)}`,
  };
}
