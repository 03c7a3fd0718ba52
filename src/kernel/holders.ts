/**
 * Evidence that a live process holds an exclusive flock on a lock file that
 * is no longer the one at its path (CONTRACT §4.5). A backup restore, an
 * rsync of the runs tree, `tar -x` or an editor's save replaces
 * `resume.lock` with a new inode; the live leg's flock stays on the old one,
 * so a probe of the path finds it free. Before anyone acts on that "free",
 * linux can still tell: `/proc/locks` lists every flock with its holder's
 * pid and inode, and `/proc/<pid>/fd` shows that the holder's descriptor
 * names this lock path (with " (deleted)" once the old inode is unlinked).
 *
 * Evidence only ever turns an answer into a doubt (never into "dead"), and
 * any doubt about the evidence itself (an unreadable /proc) is reported as
 * `unknown`, which callers treat as a possible holder.
 *
 * darwin has no /proc and no lock table. There (the addon's `holderTable` is
 * `libproc`: src/kernel/system.ts) the evidence is libproc's census of the
 * descriptors of this user's processes (native/fs_darwin.cc
 * OpenFilesOnDevice): a process other than this one that holds, open for
 * writing, a file that carries the lock path but is not the inode now at
 * it. A leg opens its lock file read-write (CONTRACT §4.1); readers open it
 * read-only and never count. Another user's processes cannot be inspected
 * (and a Mac always runs some: root's daemons): when the file's label names
 * one of them, that is a doubt; a label naming a process whose descriptors
 * were read, and that holds nothing there, is not. Run in the XNU model
 * (scripts/darwin-model.mjs), never on a Mac.
 */
import { closeSync, lstatSync, openSync, readdirSync, readlinkSync, readSync, statSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { HEAD_BYTES, markedPid } from '../contract/marker.js';
import { monotonicMs } from './clock.js';
import { runDirPath, runFilePath } from './dirfd.js';
import { native } from './native.js';
import { closeQuietly, openForRead, readAt } from './open.js';
import { systemFacts } from './system.js';

/** One flock holder found: its pid and the inode its lock is on. */
export interface ForeignHolder {
  pid: number;
  /** `maj:min:ino` as /proc/locks prints it (device in hex). */
  file: string;
}

/** What the evidence says about other holders of a lock path. */
export type HolderEvidence =
  | { kind: 'none-known' }
  | { kind: 'held-elsewhere'; holder: ForeignHolder }
  | { kind: 'unknown'; detail: string };

const FLOCK_WRITE = /^\d+:\s+FLOCK\s+\S+\s+WRITE\s+(-?\d+)\s+([0-9a-f]+:[0-9a-f]+:\d+)\s/;

/** linux's dev_t as /proc/locks prints it: `major:minor` in lower-case hex (glibc's encoding). */
export function procDevice(dev: number | bigint): string {
  const d = BigInt(dev);
  const major = ((d >> 8n) & 0xfffn) | ((d >> 32n) & ~0xfffn);
  const minor = (d & 0xffn) | ((d >> 12n) & ~0xffn);
  return `${major.toString(16).padStart(2, '0')}:${minor.toString(16).padStart(2, '0')}`;
}

/** Where to look, and whom to suspect. */
export interface HolderQuery {
  /** The lock path, absolute, as a holder's descriptor would name it (its run directory's last component a shown name: kernel/dirfd.ts). */
  lockPath: string;
  /** The device the lock path lives on (stat's `dev`). */
  dev: number | bigint;
  /** The inode now at the path, if any: a lock on it is not foreign. */
  currentIno?: number | bigint | undefined;
  /** The pid label the file at the path carries, if any (the likely holder of a copied file). */
  labelPid?: number | undefined;
  /** A process whose own locks do not count (default: this one). */
  exceptPid?: number;
  /**
   * The lock table ({@link readLockTable}) to search instead of reading it
   * now. Only one read AFTER the probe whose `free` this evidence is asked
   * about: a table from before that probe could miss a holder that took its
   * lock since. A listing reads one table for a batch of probes made before
   * it (status/inspect.ts inspectBatch): reading /proc/locks takes the
   * kernel's global lock-table semaphore for writing, which stalls every
   * flock(2) on the machine and costs up to milliseconds each.
   */
  table?: string;
}

/** The lock table (/proc/locks) as text, read now. Throws the read's error (no /proc, …), or ENOENT where the system has no /proc. */
export function readLockTable(): string {
  if (!systemFacts().procfs) throw Object.assign(new Error('no /proc/locks on this system'), { code: 'ENOENT' });
  return readProcLocks();
}

/** One descriptor of another process, from the addon's census (darwin libproc). */
interface OpenFileSeen {
  pid: number;
  ino: number;
  write: boolean;
  /** The path's bytes, as a latin1 string ('' unless the census asked for a name). */
  path: string;
}

/** One census: the descriptors it kept, and the pids whose descriptors could not all be read. */
interface Census {
  key: string;
  files: OpenFileSeen[];
  unreadable: ReadonlySet<number>;
}

/**
 * What a census keeps (native/platform.h OpenFileQuery), so that only what
 * is asked about is fetched and crosses into JavaScript: descriptors of one
 * inode (`ino`), open for writing only (`writers`), of a file whose path
 * ends in `name` (the path is read for those only, and returned).
 */
export interface CensusQuery {
  ino?: number | bigint;
  writers?: boolean;
  /** A file name (UTF-8 text, compared as bytes). */
  name?: string;
}

const CENSUS_TURN: Census = { key: '', files: [], unreadable: new Set() };
let censusHeld = false;

/**
 * Every descriptor of this user's other processes on device `dev` that
 * `query` keeps (libproc, through the addon), read once per turn of the
 * event loop however many runs ask the same (`fresh`: read now, for a caller
 * that looks again within one synchronous turn); undefined when it cannot be
 * taken.
 */
export function openFilesOn(dev: number | bigint, query: CensusQuery = {}, fresh = false): Omit<Census, 'key'> | undefined {
  const d = Number(BigInt.asUintN(32, BigInt(dev)));
  const ino = query.ino === undefined ? 0 : Number(query.ino);
  const writers = query.writers === true;
  const name = query.name ?? '';
  const key = `${d} ${ino} ${writers ? 'w' : 'rw'} ${name}`;
  if (!fresh && censusHeld && CENSUS_TURN.key === key) return CENSUS_TURN;
  const n = native();
  if (typeof n.openFilesOnDevice !== 'function') return undefined;
  let got;
  try {
    got = n.openFilesOnDevice(d, process.pid, ino, writers, Buffer.from(name, 'utf8'));
  } catch {
    return undefined;
  }
  CENSUS_TURN.key = key;
  CENSUS_TURN.files = got.files.map((f) => ({ pid: f.pid, ino: f.ino, write: f.write, path: f.path.toString('latin1') }));
  CENSUS_TURN.unreadable = new Set(got.unreadable);
  censusHeld = true;
  setImmediate(() => {
    censusHeld = false;
  }).unref();
  return CENSUS_TURN;
}

/**
 * Where a lock file is, as the kernel knows it: its name, and the identity
 * (`dev:ino`) of the directory it is in. A holder's descriptor is matched to
 * a lock by these, never by the path's text: the kernel names a descriptor's
 * file by a path it rebuilds (linux `d_path` through the mount the file was
 * opened by; darwin `vn_getpath` from its name cache), which differs from
 * the path a reader was given wherever the runs root is reached through a
 * symlink (`/tmp` and `/var` on a Mac, a linked `~/.oh-my-graph`), a bind
 * mount, `..`, another name of the directory or another case of it.
 */
interface LockPlace {
  /** The file's name, as bytes in a latin1 string. */
  name: string;
  /** `dev:ino` of its directory. */
  dir: string;
}

/** The identity (`dev:ino`) of the directory at `path`, or why there is none: `gone` (nothing, or not a directory), `unreadable`. */
function dirIdentity(path: string | Buffer): string {
  try {
    const st = statSync(path, { bigint: true });
    return st.isDirectory() ? `${st.dev}:${st.ino}` : 'gone';
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return code === 'ENOENT' || code === 'ENOTDIR' ? 'gone' : 'unreadable';
  }
}

/** The {@link LockPlace} of `lockPath`, or undefined when its directory cannot be looked at. */
function placeOf(lockPath: string): LockPlace | undefined {
  const dir = dirIdentity(runDirPath(dirname(lockPath)));
  if (dir === 'gone' || dir === 'unreadable') return undefined;
  return { name: Buffer.from(basename(lockPath), 'utf8').toString('latin1'), dir };
}

/** linux appends this to a descriptor's path once its file is unlinked (a replaced lock's old inode). */
const DELETED = ' (deleted)';

/**
 * Whether the path `link` a descriptor names (bytes in a latin1 string, as
 * the kernel gives it) is a file named `place.name` in the directory
 * `place.dir`: true, false, or `doubt` when the name fits and its directory
 * cannot be looked at. `root` is where the path is looked up from (linux:
 * `/proc/<pid>/root`, the holder's own root, so a holder in another mount
 * namespace is read as it sees its files; '' elsewhere). `seen` keeps each
 * directory's identity for the caller's one census.
 */
function namesPlace(link: string, place: LockPlace, root: string, seen: Map<string, string>): boolean | 'doubt' {
  const { dir, name } = linkParts(link);
  if (dir === undefined || name !== place.name) return false;
  const parent = root + dir;
  let id = seen.get(parent);
  if (id === undefined) {
    id = dirIdentity(Buffer.from(parent, 'latin1'));
    seen.set(parent, id);
  }
  return id === 'unreadable' ? 'doubt' : id === place.dir;
}

/**
 * A descriptor's link (bytes in a latin1 string) as the directory it names
 * and the file name in it, without linux's " (deleted)"; no directory when
 * the link is not a path (a socket, a pipe).
 */
function linkParts(link: string): { dir: string | undefined; name: string } {
  const text = link.endsWith(DELETED) ? link.slice(0, -DELETED.length) : link;
  const slash = text.lastIndexOf('/');
  return { dir: slash < 0 ? undefined : slash === 0 ? '/' : text.slice(0, slash), name: text.slice(slash + 1) };
}

/** The root a linux process's descriptor paths are relative to, as seen from here. */
function procRoot(pid: number): string {
  return `/proc/${pid}/root`;
}

/** {@link foreignHolder} from libproc's census: a writer of another inode carrying the lock path. */
function foreignHolderByCensus(q: HolderQuery): HolderEvidence {
  // Writers only, named like the lock file: the only descriptors that can be a replaced lock's leg.
  const census = openFilesOn(q.dev, { writers: true, name: basename(q.lockPath) });
  if (census === undefined) return { kind: 'unknown', detail: 'the census of open files (libproc) could not be taken' };
  const exceptPid = q.exceptPid ?? process.pid;
  const place = placeOf(q.lockPath);
  if (place === undefined) return { kind: 'unknown', detail: 'the lock file\'s directory cannot be looked at' };
  const current = q.currentIno === undefined ? undefined : Number(q.currentIno);
  const seen = new Map<string, string>();
  let doubt: string | undefined;
  for (const f of census.files) {
    if (f.pid === exceptPid || !f.write || f.ino === current) continue;
    const at = namesPlace(f.path, place, '', seen);
    if (at === 'doubt') doubt ??= `pid ${f.pid} writes a file named like the lock file whose directory cannot be looked at`;
    if (at !== true) continue;
    return { kind: 'held-elsewhere', holder: { pid: f.pid, file: `${procDevice(q.dev)}:${f.ino}` } };
  }
  if (doubt !== undefined) return { kind: 'unknown', detail: doubt };
  // Only the label's own pid unread is a doubt: a Mac always has processes of other users (root's
  // daemons), and a live label pid whose descriptors were read and hold nothing here (a pid reused
  // by another process of this user) is evidence of nothing.
  if (q.labelPid !== undefined && q.labelPid !== exceptPid && census.unreadable.has(q.labelPid) && pidExists(q.labelPid)) {
    return { kind: 'unknown', detail: `pid ${q.labelPid} is alive and its descriptors cannot be read` };
  }
  return { kind: 'none-known' };
}

/** Whether `pid` exists (kill 0: EPERM says it does, as another user's). */
function pidExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Looks for a process other than `exceptPid` that holds an exclusive flock,
 * on the lock path's device but not on the inode now at the path, through a
 * descriptor that names the lock path. When a candidate's descriptors cannot
 * be read (another user's process) and it is the pid the file's label names,
 * that is a doubt. Linux only; reads /proc and nothing else, writes nothing.
 */
export function foreignHolder(q: HolderQuery): HolderEvidence {
  const source = systemFacts().holderTable;
  if (source === 'libproc') return foreignHolderByCensus(q);
  if (source !== 'proc-locks') return { kind: 'none-known' };
  const { lockPath } = q;
  const exceptPid = q.exceptPid ?? process.pid;
  const device = procDevice(q.dev) + ':';
  const currentIno = q.currentIno === undefined ? undefined : String(q.currentIno);
  let table: string;
  try {
    table = q.table ?? readProcLocks();
  } catch (e) {
    return { kind: 'unknown', detail: `/proc/locks: ${(e as NodeJS.ErrnoException).code ?? String(e)}` };
  }
  // Links are kept as bytes (a latin1 string, one character per byte): a link decoded to text would
  // make a name that is not UTF-8 (0xff) equal to one really named U+FFFD (CONTRACT §1.1).
  const place = placeOf(lockPath);
  if (place === undefined) return { kind: 'unknown', detail: 'the lock file\'s directory cannot be looked at' };
  const { holders, key } = parsedTable(table);
  const targets = descriptorCensus(key);
  let doubt: string | undefined;
  // A pid's descriptors are looked at once however many exclusive flocks it holds: the first of its
  // lines that passes the filters is the one reported, as it would be line by line.
  const looked = new Set<number>();
  for (const { pid, file } of holders) {
    if (pid <= 0 || pid === exceptPid || !file.startsWith(device)) continue;
    if (currentIno !== undefined && file.slice(device.length) === currentIno) continue;
    if (looked.has(pid)) continue;
    looked.add(pid);
    const fds = targets(pid);
    if (typeof fds === 'string') {
      if (fds === 'ENOENT' || fds === 'ESRCH') continue; // it exited since /proc/locks was read
      if (pid === q.labelPid) doubt ??= `pid ${pid} holds an exclusive flock on this filesystem and its descriptors cannot be read (${fds})`;
      continue;
    }
    const seen = census?.dirs ?? new Map<string, string>();
    for (const link of fds.get(place.name) ?? []) {
      const at = namesPlace(link, place, procRoot(pid), seen);
      if (at === true) return { kind: 'held-elsewhere', holder: { pid, file } };
      if (at === 'doubt') doubt ??= `pid ${pid} holds an exclusive flock on this filesystem through a file named like the lock file whose directory cannot be looked at`;
    }
  }
  return doubt === undefined ? { kind: 'none-known' } : { kind: 'unknown', detail: doubt };
}

/** One lock table's exclusive flocks, in table order, and the key a descriptor census is kept under. */
interface ParsedTable {
  holders: { pid: number; file: string }[];
  key: string;
}

let lastParsed: { text: string; parsed: ParsedTable } | undefined;

/**
 * The exclusive flocks in `table`; the last table's parse is kept, since a
 * listing asks about a batch of free probes against one table read.
 */
function parsedTable(table: string): ParsedTable {
  if (lastParsed !== undefined && lastParsed.text === table) return lastParsed.parsed;
  const holders: { pid: number; file: string }[] = [];
  let key = '';
  for (const line of table.split('\n')) {
    const m = FLOCK_WRITE.exec(line);
    if (m === null) continue;
    holders.push({ pid: Number(m[1]), file: m[2] as string });
    key += `${m[1]} ${m[2]}\n`;
  }
  const parsed = { holders, key };
  lastParsed = { text: table, parsed };
  return parsed;
}

/** The buffer /proc/locks is read into, kept between calls (grown when a table fills it). */
let locksBuf = Buffer.allocUnsafe(16 * 1024);

/**
 * /proc/locks, whole, as latin1 text. Read into a buffer kept between
 * calls: procfs reports a size of 0, so readFileSync would allocate 64 KiB
 * and copy for every call, most of a free probe's cost when a listing
 * confirms thousands of them.
 */
function readProcLocks(): string {
  const fd = openSync('/proc/locks', 'r');
  try {
    let n = 0;
    for (;;) {
      if (n === locksBuf.length) {
        const grown = Buffer.allocUnsafe(locksBuf.length * 2);
        locksBuf.copy(grown, 0, 0, n);
        locksBuf = grown;
      }
      const k = readSync(fd, locksBuf, n, locksBuf.length - n, null);
      if (k === 0) break;
      n += k;
    }
    return locksBuf.toString('latin1', 0, n);
  } finally {
    closeSync(fd);
  }
}

/** How long a census of holders' descriptors may be reused while the exclusive flocks are the same (ms). */
const CENSUS_MS = 1000;
let census: { key: string; at: number; byPid: Map<number, Map<string, string[]> | string>; dirs: Map<string, string> } | undefined;

/**
 * What each exclusive holder's descriptors name (`/proc/<pid>/fd`, as bytes in latin1 strings, by
 * the file name each ends in, so a lock is matched against its own name's links only), or the
 * errno code that kept them from being read; reused while the list of
 * exclusive flocks (`key`: every holder pid and file) is exactly the one it
 * was taken under, for at most {@link CENSUS_MS}. Why reuse is sound: a
 * holder's lock lives on an open file description, and the same lock line
 * means the same description is still open, so the descriptor that names
 * the lock file is still there (a replaced file's old inode reads
 * " (deleted)", which is matched too). Readers' shared probes come and go
 * without changing the key. Without it, listing N runs with free locks
 * read every holder's descriptors N times.
 */
function descriptorCensus(key: string): (pid: number) => Map<string, string[]> | string {
  const now = monotonicMs();
  if (census === undefined || census.key !== key || now - census.at > CENSUS_MS) census = { key, at: now, byPid: new Map(), dirs: new Map() };
  const byPid = census.byPid;
  return (pid) => {
    let got = byPid.get(pid);
    if (got !== undefined) return got;
    try {
      const byName = new Map<string, string[]>();
      for (const fd of readdirSync(`/proc/${pid}/fd`)) {
        let link: string;
        try {
          link = readlinkSync(`/proc/${pid}/fd/${fd}`, { encoding: 'buffer' }).toString('latin1');
        } catch {
          continue; // closed since the listing
        }
        const { name } = linkParts(link);
        const links = byName.get(name);
        if (links === undefined) byName.set(name, [link]);
        else if (!links.includes(link)) links.push(link);
      }
      got = byName;
    } catch (e) {
      got = (e as NodeJS.ErrnoException).code ?? 'error';
    }
    byPid.set(pid, got);
    return got;
  };
}

/** Where {@link likelyHolder} found its pid: the kernel's lock table, or the file's label. */
export type HolderSource = 'lock-table' | 'label';

/**
 * The exclusive holders in one read of /proc/locks, by `maj:min:ino`; kept
 * until the current turn of the event loop ends (a batch of probes made in
 * one turn shares one read: each read takes the kernel's lock-table
 * semaphore, see {@link HolderQuery.table}).
 */
let turnTable: Map<string, number> | undefined;

function exclusiveHolders(): Map<string, number> | undefined {
  if (turnTable !== undefined) return turnTable;
  let text: string;
  try {
    text = readProcLocks();
  } catch {
    return undefined;
  }
  const byFile = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = FLOCK_WRITE.exec(line);
    if (m !== null && Number(m[1]) > 0) byFile.set(m[2] as string, Number(m[1]));
  }
  turnTable = byFile;
  setImmediate(() => {
    turnTable = undefined;
  }).unref();
  return byFile;
}

/**
 * The pid of the process that most likely holds the exclusive flock on
 * `lockPath`, to be watched for its exit (live/engine.ts), or undefined.
 * Asked only after a probe found the lock held. On linux, the kernel's lock
 * table (/proc/locks) names the process that took the flock on the inode at
 * the path. It does not follow a flock handed on: after the taker exits the
 * table still names it, and once the taker is reaped a table read from a
 * pid namespace other than the initial one hides the line altogether (as it
 * hides holders in namespaces this process cannot see); then the answer is
 * undefined and {@link descriptorHolders} is the next place to look. Only
 * where there is no table (darwin; /proc unreadable) is the pid label of the
 * marked file used (CONTRACT §3: trustworthy as a label once the flock says
 * a holder is alive). Either can be wrong or recycled: the answer is only
 * ever a process whose exit is a reason to probe again, never evidence of
 * life or death. Opens the file read-only (no link followed), reads at most
 * 128 bytes, writes nothing; any failure is undefined.
 */
export function likelyHolder(lockPath: string): { pid: number; source: HolderSource } | undefined {
  let file;
  try {
    file = openForRead(lockPath, 'resume.lock');
  } catch {
    return undefined;
  }
  if (file === undefined) return undefined;
  try {
    const table = systemFacts().holderTable === 'proc-locks' ? exclusiveHolders() : undefined;
    if (table !== undefined) {
      const pid = table.get(`${procDevice(file.stats.dev)}:${file.stats.ino}`);
      return pid !== undefined && pid !== process.pid ? { pid, source: 'lock-table' } : undefined;
    }
    const head = Buffer.alloc(HEAD_BYTES);
    const len = readAt(file.fd, head, 0, HEAD_BYTES, 0, 'resume.lock', lockPath);
    const pid = markedPid(head, len);
    return pid === undefined || pid === process.pid ? undefined : { pid, source: 'label' };
  } catch {
    return undefined;
  } finally {
    closeQuietly(file.fd);
  }
}

/**
 * Every process's descriptors that name a file (`/proc/<pid>/fd`), by link
 * text (bytes in a latin1 string): for each, pid and descriptor number in
 * turn (`[pid, fd, pid, fd, …]`), in the order /proc lists them (by pid).
 * Read once per turn of the event loop however many runs ask (a scan of
 * every process costs tens of milliseconds or more: one readlink per
 * descriptor on the machine).
 */
let turnCensus: Map<string, number[]> | undefined;

function fdCensus(): Map<string, number[]> {
  if (turnCensus !== undefined) return turnCensus;
  const byLink = new Map<string, number[]>();
  let pids: string[] = [];
  try {
    pids = readdirSync('/proc');
  } catch {
    /* no /proc: an empty census */
  }
  for (const name of pids) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) continue;
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue; // gone, or another user's
    }
    for (const fd of fds) {
      let link: string;
      try {
        link = readlinkSync(`/proc/${pid}/fd/${fd}`, { encoding: 'buffer' }).toString('latin1');
      } catch {
        continue;
      }
      if (link.charCodeAt(0) !== 0x2f) continue; // pipes, sockets, anon inodes
      const list = byLink.get(link);
      if (list === undefined) byLink.set(link, [pid, Number(fd)]);
      else list.push(pid, Number(fd));
    }
  }
  turnCensus = byLink;
  setImmediate(() => {
    turnCensus = undefined;
  }).unref();
  return byLink;
}

/** The start of a descriptor's fdinfo: its fixed fields, then one `lock:` line per lock held through its open file. */
const FDINFO_BYTES = 4096;
const fdinfoBuf = Buffer.allocUnsafe(FDINFO_BYTES);
const FDINFO_FLOCK_WRITE = /^lock:\s+\d+:\s+FLOCK\s+\S+\s+WRITE\s+-?\d+\s+([0-9a-f]+:[0-9a-f]+:\d+)\s/gm;

/**
 * Whether descriptor `fd` of `pid` holds the exclusive flock on `file`
 * (`maj:min:ino`, as /proc/locks prints it): linux lists in
 * `/proc/<pid>/fdinfo/<fd>` a `lock:` line for each lock held through that
 * descriptor's open file description (a flock belongs to the open file, so
 * every process that inherited the descriptor shows it, and a process that
 * opened the file on its own shows none). The line's inode is compared, so a
 * descriptor number closed and handed out again since the census cannot
 * pass for the holder. One open and one read of at most 4 KiB; any failure
 * is false.
 */
function holdsFlockOn(pid: number, fd: number, file: string): boolean {
  let h;
  try {
    h = openSync(`/proc/${pid}/fdinfo/${fd}`, 'r');
  } catch {
    return false;
  }
  try {
    const text = fdinfoBuf.toString('latin1', 0, readSync(h, fdinfoBuf, 0, FDINFO_BYTES, 0));
    for (const m of text.matchAll(FDINFO_FLOCK_WRITE)) if (m[1] === file) return true;
    return false;
  } catch {
    return false;
  } finally {
    closeSync(h);
  }
}

/**
 * Processes other than `except` (and this one) with a descriptor naming the
 * lock path (`/proc/<pid>/fd`, compared as bytes), at most `max`: who may
 * hold the flock once the process that took it is gone (a shell's
 * `exec 3<resume.lock; flock -x 3` has flock(1) take it for the shell; a
 * holder that forked leaves it to its child; the lock table still names the
 * taker, or hides it). Linux only (elsewhere, none); reads /proc only. A
 * scan of every process's descriptors (shared by every run asking in the
 * same turn), so asked rarely: only when a held lock's named holder is
 * gone.
 *
 * Order, and why: first the processes whose descriptor holds the exclusive
 * flock on the file now at the path (its fdinfo lists it:
 * {@link holdsFlockOn}), then, in the order /proc lists them, any other
 * process that merely has the file open (a reader, a `tail`, an editor), and
 * last those that have a replaced file open (" (deleted)"). A process that
 * merely has the file open, watched in place of the holder, would leave the
 * holder's death to the re-probe interval, whatever the order of pids. It
 * stays a candidate behind the holders: where no descriptor shows the lock
 * (a kernel older than 4.1 lists no `lock:` lines; the holder's descriptor
 * moved since the census), its exit is still a reason to probe again,
 * nothing more. The fdinfo is read only for descriptors naming the path
 * itself, and no more once `max` holders are found: each of them already
 * cost the census a readlink.
 */
export function descriptorHolders(lockPath: string, except: number, max = 4): number[] {
  const sys = systemFacts();
  if (sys.holderTable === 'libproc') return descriptorHoldersByCensus(lockPath, except, max);
  if (!sys.procfs) return [];
  const exactPath = runFilePath(dirname(lockPath), basename(lockPath));
  const place = placeOf(lockPath);
  if (place === undefined) return [];
  const census = fdCensus();
  let file: string | undefined;
  try {
    const st = lstatSync(exactPath);
    if (st.isFile()) file = `${procDevice(st.dev)}:${st.ino}`;
  } catch {
    /* gone since the probe: no descriptor can be told from another */
  }
  // Descriptors naming the lock file's place (by its directory's identity, seen from each holder's root),
  // those of a replaced file last.
  const open: number[] = [];
  const replaced: number[] = [];
  const seen = new Map<string, string>();
  for (const [link, fds] of census) {
    if (!link.endsWith(place.name) && !link.endsWith(DELETED)) continue;
    for (let i = 0; i < fds.length; i += 2) {
      const pid = fds[i] as number;
      if (pid === except || namesPlace(link, place, procRoot(pid), seen) !== true) continue;
      (link.endsWith(DELETED) ? replaced : open).push(pid, fds[i + 1] as number);
    }
  }
  const holding: number[] = [];
  const others: number[] = [];
  for (let i = 0; i < open.length; i += 2) {
    const pid = open[i] as number;
    if (holding.includes(pid)) continue;
    if (file !== undefined && holding.length < max && holdsFlockOn(pid, open[i + 1] as number, file)) holding.push(pid);
    else if (others.length < max && !others.includes(pid)) others.push(pid);
  }
  for (let i = 0; i < replaced.length && others.length < max; i += 2) if (!others.includes(replaced[i] as number)) others.push(replaced[i] as number);
  const found = holding;
  for (const pid of others) if (found.length < max && !found.includes(pid)) found.push(pid);
  return found;
}

/**
 * {@link descriptorHolders} from libproc's census (darwin): processes with a
 * descriptor naming the lock path, those with one open for writing first. libproc
 * does not say who holds a flock (CONTRACT §5.6 rule 6); a leg opens its lock
 * file read-write and readers open it read-only, so a writer is the likelier
 * holder, and a reader listed before it would leave the holder's death to the
 * re-probe interval.
 */
function descriptorHoldersByCensus(lockPath: string, except: number, max: number): number[] {
  let dev: number;
  try {
    dev = statSync(dirname(lockPath)).dev;
  } catch {
    return [];
  }
  const census = openFilesOn(dev, { name: basename(lockPath) });
  const place = placeOf(lockPath);
  if (census === undefined || place === undefined) return [];
  const seen = new Map<string, string>();
  const found: number[] = [];
  for (const writing of [true, false]) {
    for (const f of census.files) {
      if (f.write !== writing || f.pid === except || f.pid === process.pid || found.includes(f.pid)) continue;
      if (found.length < max && namesPlace(f.path, place, '', seen) === true) found.push(f.pid);
    }
  }
  return found;
}
