// Storage migration, the I/O: read the CRD, wait until the apiserver writes in
// the storage version, list every object page by page and write each back as
// read, then trim status.storedVersions. Every step can be repeated, so a run
// that is killed is finished by running it again; the trim comes last and
// only after every object was written.

import { objectKeyOf } from "../api/object-key.js";
import { kubeStatus, type KubeClient } from "../kube/client.js";
import { listPages, type ListPage } from "../kube/pager.js";
import { eachConcurrently } from "../kube/each-concurrently.js";
import {
  alreadyMigratedLine,
  classifyWriteFailure,
  dryRunLine,
  isMigrated,
  planMigration,
  progressLine,
  storageVersionHash,
  summaryLine,
  withTrimmedStoredVersions,
  type CrdStorageView,
  type MigrationPlan,
  type Tally,
} from "./storage-migration.js";

export interface MigrateOptions {
  crdName: string;
  dryRun: boolean;
  pageSize: number;
  concurrency: number;
  /** A progress line every this many objects... */
  progressEvery: number;
  /** ...or after this long without one. */
  progressIntervalMs: number;
  /** How long to wait for discovery to show the new storage version. */
  discoveryTimeoutMs: number;
  /** Progress and warnings (stderr). */
  log(line: string): void;
}

export type MigrateOutcome =
  | {
      readonly kind: "migrated";
      readonly plan: MigrationPlan;
      readonly tally: Tally;
      readonly seconds: number;
      readonly line: string;
    }
  | { readonly kind: "already"; readonly plan: MigrationPlan; readonly line: string }
  | { readonly kind: "dry-run"; readonly plan: MigrationPlan; readonly count: number; readonly line: string };

/** A failure that ends the run, with its one-line reason. */
export class MigrationError extends Error {
  override name = "MigrationError";
}

interface ListedObject {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace?: string; uid?: string; resourceVersion?: string };
  [key: string]: unknown;
}

type ObjectList = ListPage<ListedObject>;

type Crd = CrdStorageView & { readonly [key: string]: unknown };

const CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const MAX_ATTEMPTS = 6;
const MAX_REREADS = 10;
const MAX_LIST_RESTARTS = 20;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** 0 for an error that is not the apiserver's answer (the network, a timeout). */
function statusOf(err: unknown): number {
  return kubeStatus(err) ?? 0;
}

/**
 * The client already retries each call within its deadline; this outer loop
 * carries a run across a longer outage (an apiserver restart), by the same rule.
 */
async function withRetry<T>(fn: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (classifyWriteFailure(err) !== "retry" || attempt >= MAX_ATTEMPTS) throw err;
      await sleep(Math.min(5000, 100 * 2 ** attempt));
    }
  }
}

/**
 * The migration, in named phases: read the CRD and plan, count (dry run) or
 * wait until the apiserver writes the new storage version, rewrite every
 * stored object, then trim status.storedVersions.
 */
export async function migrateStorage(client: KubeClient, opts: MigrateOptions): Promise<MigrateOutcome> {
  const started = performance.now();
  const elapsed = (): number => (performance.now() - started) / 1000;
  const crd = await readCrd(client, opts.crdName);
  const plan = mustPlan(crd);
  const stored = storedObjects(client, plan, opts);
  if (opts.dryRun) return await countStored(plan, stored);
  if (isMigrated(plan)) return { kind: "already", plan, line: alreadyMigratedLine(plan) };

  await waitForStorageVersion(client, plan, opts);
  const tally = await rewriteAll(client, plan, stored, opts, elapsed);
  await trimStoredVersions(client, crd, plan, opts);
  const seconds = elapsed();
  return { kind: "migrated", plan, tally, seconds, line: summaryLine(plan, tally, seconds) };
}

function readCrd(client: KubeClient, name: string): Promise<Crd> {
  return withRetry(() => client.json<Crd>("GET", `${CRD_PATH}/${name}`)).catch((err: unknown) => {
    if (statusOf(err) === 404) throw new MigrationError(`CRD ${name} not found: install the chart first`);
    throw err;
  });
}

function mustPlan(crd: Crd): MigrationPlan {
  const planned = planMigration(crd);
  if (!planned.ok) throw new MigrationError(planned.reason);
  return planned.plan;
}

/** The stored objects, a page at a time, and how many times their list expired. */
interface Stored {
  pages(): AsyncGenerator<ObjectList>;
  restarts(): number;
}

/**
 * Pages of every object; the next page is fetched while this one is written.
 * Migration needs no consistent snapshot (objects made since were written in
 * the storage version), so an expired list goes on from the next object (the
 * pager's 410 policy); without a token it starts over, and what was written is
 * cheap to write again.
 */
function storedObjects(client: KubeClient, plan: MigrationPlan, opts: MigrateOptions): Stored {
  let restarts = 0;
  return {
    pages: () =>
      listPages<ListedObject>(client, `/apis/${plan.group}/${plan.storageVersion}/${plan.plural}`, {
        pageSize: opts.pageSize,
        consistent: false,
        maxRestarts: MAX_LIST_RESTARTS,
        retry: withRetry,
        onExpired: (fromStart) => {
          restarts++;
          opts.log(
            `migrate: the list expired (410); ${fromStart ? "listing again from the start" : "going on from the next object"}`,
          );
        },
      }),
    restarts: () => restarts,
  };
}

async function countStored(plan: MigrationPlan, stored: Stored): Promise<MigrateOutcome> {
  let count = 0;
  const namespaces = new Set<string>();
  if (!isMigrated(plan)) {
    for await (const page of stored.pages()) {
      count += page.items.length;
      for (const o of page.items) namespaces.add(o.metadata.namespace ?? "");
    }
  }
  return { kind: "dry-run", plan, count, line: dryRunLine(plan, count, namespaces.size) };
}

/** Every stored object written again in the storage version, with progress lines on the way. */
async function rewriteAll(
  client: KubeClient,
  plan: MigrationPlan,
  stored: Stored,
  opts: MigrateOptions,
  elapsed: () => number,
): Promise<Tally> {
  const base = `/apis/${plan.group}/${plan.storageVersion}`;
  const written = new Set<string>();
  let conflicts = 0;
  let gone = 0;
  let estimatedTotal: number | undefined;
  let lastReport = { count: 0, at: performance.now() };
  const report = (): void => {
    const now = performance.now();
    if (written.size - lastReport.count < opts.progressEvery && now - lastReport.at < opts.progressIntervalMs)
      return;
    lastReport = { count: written.size, at: now };
    opts.log(progressLine(plan, written.size, estimatedTotal, elapsed()));
  };

  const objectPath = (o: ListedObject): string => {
    const ns = o.metadata.namespace;
    return `${base}/${ns ? `namespaces/${encodeURIComponent(ns)}/` : ""}${plan.plural}/${encodeURIComponent(o.metadata.name)}`;
  };
  const writtenKey = (o: ListedObject): string => o.metadata.uid ?? objectKeyOf(o);

  /**
   * The no-op write: the object as read, in the storage version, with its
   * resourceVersion as a precondition. The apiserver re-encodes it in the
   * storage version; the spec is unchanged, so metadata.generation is too.
   */
  const rewrite = async (listed: ListedObject): Promise<void> => {
    let current: ListedObject = listed;
    for (let reread = 0; ; reread++) {
      try {
        await withRetry(() => client.json("PUT", objectPath(current), { body: current }));
        written.add(writtenKey(current));
        report();
        return;
      } catch (err) {
        const why = classifyWriteFailure(err);
        if (why === "gone") {
          gone++;
          return;
        }
        if (why !== "reread" || reread >= MAX_REREADS) {
          const where = objectKeyOf(current);
          throw new MigrationError(
            `rewriting ${plan.kind} ${where} failed: ${(err as Error).message.split("\n")[0]}`,
          );
        }
        conflicts++;
        try {
          current = await withRetry(() => client.json<ListedObject>("GET", objectPath(current)));
        } catch (getErr) {
          if (statusOf(getErr) === 404) {
            gone++;
            return;
          }
          throw getErr;
        }
      }
    }
  };

  let seen = 0;
  for await (const page of stored.pages()) {
    const remaining = page.metadata?.remainingItemCount;
    seen += page.items.length;
    if (remaining !== undefined) estimatedTotal = seen + remaining;
    else if (!page.metadata?.continue) estimatedTotal = seen;
    await eachConcurrently(page.items, opts.concurrency, rewrite);
  }
  return { rewritten: written.size, conflicts, gone, restarts: stored.restarts() };
}

/**
 * Every object listed is now stored in the storage version; objects created
 * since the list began were written in it. Trim, unless the CRD moved meanwhile.
 */
async function trimStoredVersions(
  client: KubeClient,
  crd: Crd,
  plan: MigrationPlan,
  opts: MigrateOptions,
): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const now = await readCrd(client, opts.crdName);
    const again = mustPlan(now);
    if (again.storageVersion !== plan.storageVersion || now.metadata.generation !== crd.metadata.generation) {
      const what =
        again.storageVersion !== plan.storageVersion
          ? `storage version ${plan.storageVersion} → ${again.storageVersion}`
          : `generation ${crd.metadata.generation ?? "?"} → ${now.metadata.generation ?? "?"}`;
      throw new MigrationError(`the CRD changed during the migration (${what}); run migrate again`);
    }
    try {
      await withRetry(() =>
        client.json("PUT", `${CRD_PATH}/${opts.crdName}/status`, {
          body: withTrimmedStoredVersions(now, again),
        }),
      );
      return;
    } catch (err) {
      if (statusOf(err) !== 409 || attempt >= MAX_REREADS) throw err;
    }
  }
}

interface ApiResourceList {
  resources?: { name: string; storageVersionHash?: string }[];
}

/**
 * After the storage version changes, each apiserver switches when its CRD
 * informer sees the change. Discovery publishes the hash of the version it
 * writes; writing before it shows the new one could store the old version again.
 */
async function waitForStorageVersion(
  client: KubeClient,
  plan: MigrationPlan,
  opts: MigrateOptions,
): Promise<void> {
  const want = storageVersionHash(plan.group, plan.storageVersion, plan.kind);
  const deadline = performance.now() + opts.discoveryTimeoutMs;
  let seen: string | undefined;
  for (;;) {
    const list = await withRetry(() =>
      client.json<ApiResourceList>("GET", `/apis/${plan.group}/${plan.storageVersion}`),
    );
    const resource = list.resources?.find((r) => r.name === plan.plural);
    seen = resource?.storageVersionHash;
    if (resource && seen === undefined) {
      opts.log(
        `migrate: warning: discovery shows no storageVersionHash for ${plan.plural}; not waiting for it`,
      );
      return;
    }
    if (seen === want) return;
    if (performance.now() > deadline) {
      throw new MigrationError(
        `the apiserver does not yet write ${plan.plural} as ${plan.storageVersion} (discovery storageVersionHash ${seen ?? "absent"}, ` +
          `want ${want}) after ${Math.round(opts.discoveryTimeoutMs / 1000)} s`,
      );
    }
    await sleep(250);
  }
}
