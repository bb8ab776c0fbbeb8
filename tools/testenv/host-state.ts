// What the real cluster changes on the host, recorded before it starts and put
// back when it stops (or, after a run that was SIGKILLed, when the next one
// starts): its processes (container processes and shims outlive their
// supervisors), mounts, cgroups, links, nftables tables, sysctls and the
// directories that components create at fixed paths. Also a snapshot of all of
// that, so a test can compare the machine before and after.

import {
  existsSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  rmdirSync,
  writeFileSync,
} from "node:fs";
import path from "node:path";
import {
  BRIDGE,
  DATA_DIR,
  FIXED_HOST_PATHS,
  GUARD_TABLE,
  HOST_RECORD_FILE,
  LOCK_FILE,
  POD_CIDR,
  RUN_DIR,
  SERVICE_CIDR,
  SYSCTLS,
} from "./cluster-config.js";
import { run, sleep } from "./process.js";

export interface HostRecord {
  /** The pid of the process that started the cluster. */
  readonly owner: number;
  /** Where the cluster's own binaries are: any process running one of them is the cluster's. */
  readonly clusterBinDir: string;
  readonly sysctls: Readonly<Record<string, string>>;
  /** Which of the fixed paths (and our own dirs) existed before the start. */
  readonly existingPaths: readonly string[];
  readonly nftTables: readonly string[];
  /** Top-level cgroup directories of each hierarchy, by mount point. */
  readonly cgroups: Readonly<Record<string, readonly string[]>>;
}

const OWN_PATHS = [DATA_DIR, RUN_DIR] as const;
/** Tables the cluster makes: the guard, and kube-proxy's (nftables mode). */
const CLUSTER_TABLES = [`inet ${GUARD_TABLE}`, "ip kube-proxy", "ip6 kube-proxy"] as const;
/** Counters, not settings. */
const VOLATILE_SYSCTLS = new Set(["net/netfilter/nf_conntrack_count"]);

function globToRegExp(glob: string): RegExp {
  return new RegExp(`^${glob.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*")}$`);
}

/** The current values of the sysctls that the cluster's components change, keyed like `net/ipv4/ip_forward`. */
export function readSysctls(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pattern of SYSCTLS) {
    const dir = path.posix.dirname(pattern);
    const base = path.posix.basename(pattern);
    let names: string[];
    try {
      names = base.includes("*")
        ? readdirSync(`/proc/sys/${dir}`).filter((n) => globToRegExp(base).test(n))
        : [base];
    } catch {
      continue;
    }
    for (const n of names.sort()) {
      const key = `${dir}/${n}`;
      if (VOLATILE_SYSCTLS.has(key)) continue;
      try {
        out[key] = readFileSync(`/proc/sys/${key}`, "utf8").trim().replace(/\s+/g, " ");
      } catch {
        // Write-only or absent on this kernel: nothing to record.
      }
    }
  }
  return out;
}

async function nftTables(): Promise<string[]> {
  const res = await run("nft", ["list", "tables"]).catch(() => undefined);
  if (!res || res.code !== 0) return [];
  return res.stdout
    .split("\n")
    .map((l) => l.trim().replace(/^table\s+/, ""))
    .filter(Boolean)
    .sort();
}

function cgroupMounts(): string[] {
  return readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .filter((l) => / - cgroup2? /.test(l))
    .map((l) => l.split(" ")[4] ?? "")
    .filter(Boolean)
    .sort();
}

function cgroupTops(): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const m of cgroupMounts()) {
    try {
      out[m] = readdirSync(m, { withFileTypes: true })
        .filter((d) => d.isDirectory())
        .map((d) => d.name)
        .sort();
    } catch {
      out[m] = [];
    }
  }
  return out;
}

function mountPoints(): string[] {
  return readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .map((l) => (l.split(" ")[4] ?? "").replace(/\\040/g, " "))
    .filter(Boolean);
}

function under(p: string, dirs: readonly string[]): boolean {
  return dirs.some((d) => p === d || p.startsWith(`${d}/`));
}

export async function recordHost(clusterBinDir: string): Promise<HostRecord> {
  return {
    owner: process.pid,
    clusterBinDir,
    sysctls: readSysctls(),
    existingPaths: [...FIXED_HOST_PATHS, ...OWN_PATHS].filter((p) => existsSync(p)),
    nftTables: await nftTables(),
    cgroups: cgroupTops(),
  };
}

export function saveRecord(record: HostRecord): void {
  writeFileSync(HOST_RECORD_FILE, JSON.stringify(record, null, 2));
}

export function loadRecord(): HostRecord | undefined {
  try {
    return JSON.parse(readFileSync(HOST_RECORD_FILE, "utf8")) as HostRecord;
  } catch {
    return undefined;
  }
}

interface ProcInfo {
  pid: number;
  exe: string;
  cmdline: string;
}

function processes(): ProcInfo[] {
  const out: ProcInfo[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    let exe = "";
    let cmdline = "";
    try {
      exe = readlinkSync(`/proc/${name}/exe`);
    } catch {
      // A kernel thread or a process that just ended.
    }
    try {
      cmdline = readFileSync(`/proc/${name}/cmdline`, "utf8").replace(/\0/g, " ").trim();
    } catch {
      continue;
    }
    out.push({ pid, exe, cmdline });
  }
  return out;
}

/** Every pid listed in the cgroup.procs files under `dir`. */
function cgroupPids(dir: string): number[] {
  const pids: number[] = [];
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return pids;
  }
  try {
    for (const l of readFileSync(path.join(dir, "cgroup.procs"), "utf8").split("\n"))
      if (l.trim()) pids.push(Number(l));
  } catch {
    // Not a cgroup directory.
  }
  for (const e of entries) if (e.isDirectory()) pids.push(...cgroupPids(path.join(dir, e.name)));
  return pids;
}

/**
 * The cgroup directories that the cluster made: the kubelet's top-level ones
 * (cgroupfs driver: `kubepods`, with the pods and containers inside) that were
 * not there before. Others' new cgroups (a build's, say) are not ours to empty.
 */
function newCgroupDirs(record: HostRecord): string[] {
  const now = cgroupTops();
  const dirs: string[] = [];
  for (const [mount, tops] of Object.entries(now)) {
    const before = new Set(record.cgroups[mount] ?? []);
    for (const t of tops) if (t.startsWith("kubepods") && !before.has(t)) dirs.push(path.join(mount, t));
  }
  return dirs;
}

/**
 * The cluster's processes still alive: its own binaries (containerd's shims
 * above all: they leave their supervisor on purpose), any process whose
 * command line names the cluster's directories (etcd and kube-apiserver are
 * shared binaries), and everything in the cgroups the cluster made (containers).
 */
export function clusterProcesses(record: HostRecord): ProcInfo[] {
  const inCgroups = new Set(newCgroupDirs(record).flatMap(cgroupPids));
  const binPrefix = `${record.clusterBinDir}/`;
  return processes().filter(
    (p) =>
      p.pid !== process.pid &&
      (inCgroups.has(p.pid) ||
        p.exe.startsWith(binPrefix) ||
        p.cmdline.includes(`${DATA_DIR}/`) ||
        p.cmdline.includes(`${RUN_DIR}/`)),
  );
}

async function killAll(record: HostRecord, problems: string[]): Promise<void> {
  for (let round = 0; round < 50; round++) {
    const left = clusterProcesses(record);
    if (left.length === 0) return;
    for (const p of left) {
      try {
        process.kill(p.pid, "SIGKILL");
      } catch {
        // Gone already.
      }
    }
    await sleep(100);
  }
  const left = clusterProcesses(record);
  if (left.length > 0)
    problems.push(
      `processes still alive: ${left.map((p) => `${p.pid} ${p.cmdline.slice(0, 80)}`).join("; ")}`,
    );
}

async function unmountAll(record: HostRecord, problems: string[]): Promise<void> {
  const created = FIXED_HOST_PATHS.filter((p) => !record.existingPaths.includes(p));
  const dirs = [...OWN_PATHS, ...created];
  for (let round = 0; round < 5; round++) {
    // Deepest first; a mount point can be stacked, so repeat until none is left.
    const mine = mountPoints()
      .filter((m) => under(m, dirs))
      .sort((a, b) => b.length - a.length);
    if (mine.length === 0) return;
    for (const m of mine) {
      const res = await run("umount", [m]);
      if (res.code !== 0) await run("umount", ["-l", m]);
    }
  }
  const left = mountPoints().filter((m) => under(m, dirs));
  if (left.length > 0) problems.push(`mounts left: ${left.join(", ")}`);
}

function removeTree(dir: string): void {
  // Child cgroups first: a cgroup directory goes only by rmdir, and only when empty.
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries) if (e.isDirectory()) removeTree(path.join(dir, e.name));
  rmdirSync(dir);
}

async function removeCgroups(record: HostRecord, problems: string[]): Promise<void> {
  for (let round = 0; round < 20; round++) {
    const dirs = newCgroupDirs(record);
    if (dirs.length === 0) return;
    for (const d of dirs) {
      try {
        removeTree(d);
      } catch {
        // Busy for a moment while the last processes are reaped.
      }
    }
    await sleep(100);
  }
  const left = newCgroupDirs(record);
  if (left.length > 0) problems.push(`cgroups left: ${left.join(", ")}`);
}

interface Link {
  ifname: string;
  master?: string;
}

async function links(): Promise<Link[]> {
  const res = await run("ip", ["-j", "link", "show"]);
  if (res.code !== 0) return [];
  return JSON.parse(res.stdout) as Link[];
}

async function removeNetwork(record: HostRecord, problems: string[]): Promise<void> {
  for (const l of await links()) {
    if (l.ifname === BRIDGE || l.master === BRIDGE) await run("ip", ["link", "del", l.ifname]);
  }
  const tables = await nftTables();
  for (const t of CLUSTER_TABLES) {
    if (tables.includes(t) && !record.nftTables.includes(t)) {
      const [family, name] = t.split(" ") as [string, string];
      const res = await run("nft", ["delete", "table", family, name]);
      if (res.code !== 0) problems.push(`nft delete table ${t}: ${res.stderr.trim()}`);
    }
  }
}

function restoreSysctls(record: HostRecord, problems: string[]): void {
  const now = readSysctls();
  for (const [key, value] of Object.entries(record.sysctls)) {
    if (now[key] === undefined || now[key] === value) continue;
    try {
      writeFileSync(`/proc/sys/${key}`, value);
    } catch (e) {
      problems.push(`sysctl ${key}=${value}: ${(e as Error).message}`);
    }
  }
}

function removePaths(record: HostRecord, problems: string[]): void {
  for (const p of [...FIXED_HOST_PATHS, ...OWN_PATHS]) {
    if (record.existingPaths.includes(p) || !existsSync(p)) continue;
    try {
      rmSync(p, { recursive: true, force: true });
    } catch (e) {
      problems.push(`remove ${p}: ${(e as Error).message}`);
    }
  }
}

/**
 * Puts the host back as the record says it was. Safe to run again, and after a
 * run whose processes were SIGKILLed. Returns what could not be put back.
 */
export async function restoreHost(record: HostRecord): Promise<string[]> {
  const problems: string[] = [];
  await killAll(record, problems);
  await unmountAll(record, problems);
  await removeCgroups(record, problems);
  await removeNetwork(record, problems);
  restoreSysctls(record, problems);
  removePaths(record, problems);
  rmSync(HOST_RECORD_FILE, { force: true });
  return problems;
}

/** The parts of the machine a cluster run may change, in a form two of which compare with toEqual. */
export interface HostSnapshot {
  /** Listening sockets not on loopback, or of the cluster's own processes: `proto address:port process`. */
  listeners: string[];
  /** Mount points under the cluster's directories and the fixed paths, and every overlay and nsfs mount. */
  mounts: string[];
  /** The bridge, links on it, and veths. */
  links: string[];
  /** Routes to the cluster's ranges or through its bridge. */
  routes: string[];
  nftTables: string[];
  sysctls: Record<string, string>;
  /** Which of the fixed paths and the cluster's own files exist. */
  paths: string[];
  /** The names directly under the directories where components put things. */
  topDirs: Record<string, string[]>;
  cgroups: Record<string, string[]>;
  /** Processes that run the cluster's binaries or name its directories. */
  processes: string[];
}

const WATCHED_TOP_DIRS = ["/run", "/var/lib", "/var/log", "/etc", "/opt", "/usr/libexec"];

export async function hostSnapshot(clusterBinDir: string): Promise<HostSnapshot> {
  const binPrefix = `${clusterBinDir}/`;
  const ours = processes().filter(
    (p) =>
      p.exe.startsWith(binPrefix) || p.cmdline.includes(`${DATA_DIR}/`) || p.cmdline.includes(`${RUN_DIR}/`),
  );
  const ourPids = new Set(ours.map((p) => p.pid));
  const ss = await run("ss", ["-Hltunp"]);
  // Loopback listeners of other processes come and go with others' test runs (etcd and
  // kube-apiserver are shared binaries): on loopback only the cluster's own count.
  const listeners = ss.stdout
    .split("\n")
    .filter(Boolean)
    .map((l) => {
      const f = l.trim().split(/\s+/);
      const proc = /users:\(\("([^"]+)"/.exec(l)?.[1] ?? "";
      const pids = [...l.matchAll(/pid=(\d+)/g)].map((m) => Number(m[1]));
      return { proto: f[0] ?? "", local: f[4] ?? "", proc, ours: pids.some((pid) => ourPids.has(pid)) };
    })
    .filter((l) => l.ours || !/^(127\.|\[::1\]|\[::ffff:127\.)/.test(l.local))
    .map((l) => `${l.proto} ${l.local} ${l.proc}`)
    .sort();

  const watched = [...OWN_PATHS, ...FIXED_HOST_PATHS];
  const mounts = readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .filter(Boolean)
    .filter((l) => {
      const mp = l.split(" ")[4] ?? "";
      return under(mp, watched) || / - (overlay|nsfs) /.test(l);
    })
    .map((l) => l.split(" ")[4] ?? "")
    .sort();

  const linkList = (await links())
    .filter((l) => l.ifname === BRIDGE || l.master === BRIDGE || l.ifname.startsWith("veth"))
    .map((l) => l.ifname)
    .sort();
  const routeRes = await run("ip", ["route", "show"]);
  const routes = routeRes.stdout
    .split("\n")
    .filter((r) => r.includes(BRIDGE) || r.startsWith(POD_CIDR) || r.startsWith(SERVICE_CIDR))
    .sort();

  const topDirs: Record<string, string[]> = {};
  for (const d of WATCHED_TOP_DIRS) {
    try {
      // The lock is held while a snapshot is taken for a start: it is checked on its own.
      topDirs[d] = readdirSync(d)
        .filter((n) => path.join(d, n) !== LOCK_FILE)
        .sort();
    } catch {
      topDirs[d] = [];
    }
  }

  const procs = ours.map((p) => `${p.pid} ${p.cmdline.slice(0, 120)}`);

  return {
    listeners,
    mounts,
    links: linkList,
    routes,
    nftTables: await nftTables(),
    sysctls: readSysctls(),
    paths: [...watched, HOST_RECORD_FILE].filter((p) => existsSync(p)),
    topDirs,
    cgroups: cgroupTops(),
    processes: procs,
  };
}
