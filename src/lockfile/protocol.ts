/**
 * runwarden/lockfile's lock on disk (docs/lockfile.md, "How the lock is
 * kept"): proper-lockfile's lock directory, owned through a kernel lock.
 *
 * - The lock directory `D` (`<file>.lock`, or `lockfilePath`) is made with
 *   mkdir(2) and stays empty, exactly as proper-lockfile makes it, so a
 *   proper-lockfile process sees it held (EEXIST) and, once its mtime is
 *   older than its `stale`, can remove it (rmdir of an empty directory) by its
 *   own rule.
 * - Beside it, the sidecar `S` (`D` + `.runwarden`) is a regular file on
 *   which a runwarden holder keeps an exclusive flock(2) for as long as it
 *   holds the lock. The kernel drops that lock the moment the holder dies,
 *   however it dies, and a blocked event loop cannot lose it. Every runwarden
 *   process takes `S` before it looks at `D`, so runwarden processes decide
 *   one at a time, and a holder's `D` is never judged by its mtime.
 * - Under the flock the holder writes into `S` the identity (device, inode)
 *   of the `D` it holds and a signature: a number of microseconds (10–989)
 *   that it puts into every mtime it gives `D`. A process that gets the flock
 *   and finds `D` named by `S` and carrying its signature knows `D` belongs to
 *   a holder that died, and takes `D` over at once. Anything else at `D` (a
 *   proper-lockfile process's directory, or one whose inode number was reused
 *   after such a process replaced a dead holder's; proper-lockfile writes
 *   millisecond mtimes, signature 0) is judged by proper-lockfile's own rule:
 *   held until its mtime is older than `stale`.
 * - `S` is unlinked by its holder, under the flock, when the lock is
 *   released; a process whose flock was granted on an `S` that is no longer
 *   at the path (lstat against fstat) starts again, so two processes never
 *   hold flocks on two different `S` files.
 * - The kernel's lock is believed only on a known-local filesystem
 *   (kernel/fsgate.ts). On any other one (NFS, SMB, FUSE) a free flock could
 *   be another host's lock that this host cannot see, so no `S` is used and
 *   the lock is proper-lockfile's alone: mkdir for exclusion, the mtime for
 *   liveness. The same holds where `S` cannot be opened for writing (another
 *   user's, a read-only filesystem) or is not a regular file.
 * - Nothing half-made is left behind: every failure after mkdir removes the
 *   directory it made or took over, and every failure that held `S`
 *   unlinks it before closing.
 *
 * Every call here is synchronous and none waits: the flock is non-blocking,
 * and `S` is opened O_NONBLOCK|O_NOFOLLOW.
 */
import { closeSync, constants, fstatSync, ftruncateSync, lstatSync, mkdirSync, openSync, readSync, rmdirSync, statSync, unlinkSync, utimesSync, writeSync, type BigIntStats, type Stats } from 'node:fs';
import { dirname } from 'node:path';
import { ProperLockfileError } from '../contract/errors.js';
import { flock, hasFlock, isKnownLocalDir } from '../kernel/flock.js';
import { nativeConstants } from '../kernel/native.js';

/** The sidecar's name: the lock directory's, with this suffix. */
export const SIDECAR_SUFFIX = '.runwarden';
/** The first line of a sidecar's content. */
const MARK_HEAD = 'runwarden-lockfile 1';
const MARK = /^runwarden-lockfile 1\n(\d{1,4}) (\d{1,20}) (\d{1,20}) (\d{1,10})\n$/;
/** The signatures a holder picks from (microseconds within a millisecond); 0 is proper-lockfile's. */
const SIG_MIN = 10;
const SIG_SPAN = 980;
/**
 * How many times an exclusive attempt on a contended sidecar is made, back to back: a check()'s
 * shared probe holds it for microseconds, so a second try may find it gone. No pause between
 * them: a synchronous pause, however short on paper (Atomics.wait sleeps far longer than 50 µs
 * under the kernel's timer slack), is paid by every contended attempt, and bench/lockfile.mjs's
 * mutual-exclusion run lost most of its throughput to one.
 */
const CONTENDED_TRIES = 2;
/** How many times a sidecar unlinked under us is reopened before giving up with ELOCKED. */
const REOPEN_TRIES = 5;

/** A device and inode, as lstat tells them. */
export interface Identity {
  readonly dev: bigint;
  readonly ino: bigint;
}

/** A lock this process took. */
export interface Taken {
  /** The lock directory. */
  readonly dir: string;
  /** The identity of the directory taken. */
  readonly dirId: Identity;
  /** The sidecar path, or undefined when the lock is proper-lockfile's alone (no kernel lock here). */
  readonly sidecar: string | undefined;
  /** The sidecar's descriptor, holding the flock; -1 without one. */
  readonly sideFd: number;
  /** The sidecar's identity, when there is one. */
  readonly sideId: Identity | undefined;
  /** The mtime signature (µs), 0 without a sidecar. */
  readonly sig: number;
}

function code(err: unknown): string | undefined {
  const c = (err as { code?: unknown } | null)?.code;
  return typeof c === 'string' ? c : undefined;
}

/** proper-lockfile's ELOCKED. */
export function lockedError(file: string): ProperLockfileError {
  return new ProperLockfileError('Lock file is already being held', 'ELOCKED', file);
}

/** The sidecar of the lock directory `dir`. */
export function sidecarOf(dir: string): string {
  return `${dir}${SIDECAR_SUFFIX}`;
}

/** The lock directory of `file`, as proper-lockfile names it. */
export function lockDirOf(file: string, lockfilePath: string | undefined): string {
  return lockfilePath || `${file}.lock`;
}

/** Whether the kernel's lock is believed for lock directories in `dir`'s parent: flock exists and the filesystem is known-local. */
function kernelLockHere(dir: string): boolean {
  if (!hasFlock()) return false;
  try {
    return isKnownLocalDir(dirname(dir));
  } catch {
    return false;
  }
}

function identityOf(path: string): Identity | undefined {
  try {
    const st = lstatSync(path, { bigint: true });
    return { dev: st.dev, ino: st.ino };
  } catch (err) {
    if (code(err) === 'ENOENT' || code(err) === 'ENOTDIR') return undefined;
    throw err;
  }
}

function same(a: Identity | undefined, b: Identity | undefined): boolean {
  return a !== undefined && b !== undefined && a.dev === b.dev && a.ino === b.ino;
}

/**
 * The signature (µs within the millisecond, 0–999) an mtime carries.
 * proper-lockfile's millisecond times read as 0 or, cut down to the
 * microsecond by libuv (which truncates every time it sets to µs), 999.
 */
export function signatureOf(mtimeNs: bigint): number {
  return Math.floor(Number(mtimeNs % 1_000_000n) / 1000);
}

/**
 * Sets `dir`'s atime and mtime to now, at the millisecond, plus `sig`
 * microseconds (0: proper-lockfile's millisecond times). A wall-clock
 * timestamp: proper-lockfile processes compare it with their Date.now().
 */
export function stampSeconds(sig: number): number {
  // Half a microsecond more, so the truncation to µs cannot land on sig - 1.
  return sig === 0 ? Date.now() / 1000 : (Date.now() + (sig + 0.5) / 1000) / 1000;
}

interface Mark {
  sig: number;
  dev: bigint;
  ino: bigint;
}

function readMark(fd: number): Mark | undefined {
  const buf = Buffer.alloc(128);
  const n = readSync(fd, buf, 0, buf.length, 0);
  const m = MARK.exec(buf.toString('latin1', 0, n));
  if (m === null) return undefined;
  return { sig: Number(m[1]), dev: BigInt(m[2] as string), ino: BigInt(m[3] as string) };
}

function writeMark(fd: number, sig: number, id: Identity): void {
  const text = Buffer.from(`${MARK_HEAD}\n${sig} ${id.dev} ${id.ino} ${process.pid}\n`, 'latin1');
  const n = writeSync(fd, text, 0, text.length, 0);
  if (n !== text.length) throw Object.assign(new Error(`short write to the lock's sidecar (${n} of ${text.length} bytes)`), { code: 'EIO' });
  ftruncateSync(fd, text.length);
}

/** proper-lockfile's staleness: the mtime older than `stale` ms ago (a wall-clock comparison, as it makes it). */
function isStale(st: Stats, stale: number): boolean {
  return st.mtime.getTime() < Date.now() - stale;
}

/**
 * Opens the sidecar for a holder: a regular file, read-write, created if
 * missing. undefined when it cannot serve (not a regular file, not ours to
 * write, a read-only filesystem, or its directory missing): the lock is then
 * proper-lockfile's alone, whose mkdir reports the directory's own errors.
 */
function openSidecar(path: string): { fd: number; id: Identity } | undefined {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK, 0o666);
  } catch (err) {
    const c = code(err);
    if (c === 'ENOENT' || c === 'EACCES' || c === 'EPERM' || c === 'EROFS' || c === 'ELOOP' || c === 'EISDIR' || c === 'ENXIO' || c === 'EOPNOTSUPP' || c === 'ETXTBSY') return undefined;
    throw err;
  }
  const st = fstatSync(fd, { bigint: true });
  if (!st.isFile()) {
    closeSync(fd);
    return undefined;
  }
  return { fd, id: { dev: st.dev, ino: st.ino } };
}

/** LOCK_EX|LOCK_NB, tried {@link CONTENDED_TRIES} times. */
function exclusive(fd: number): boolean {
  const op = nativeConstants().flockOp;
  for (let i = 0; i < CONTENDED_TRIES; i++) if (flock(fd, op.Exclusive)) return true;
  return false;
}

/** Unlinks `path` if it is still the file `mine` (this process holds its flock). */
function unlinkIfOurs(path: string, mine: Identity): void {
  try {
    if (same(identityOf(path), mine)) unlinkSync(path);
  } catch {
    /* left for the next holder, which reads its content under the flock */
  }
}

/** Thrown inside {@link takeLock} only: the sidecar's holder unlinked it; open the one at the path again. */
class Reopen extends Error {}
const REOPEN = new Reopen('reopen the sidecar');

/**
 * Takes the lock on `file` (its lock directory `dir`) once, or throws:
 * ELOCKED while it is held, or the kernel's error (ENOENT when the
 * directory's parent is missing, EACCES, EROFS, ENOSPC, ENOTDIR, ENOTEMPTY for
 * a stale directory someone put files in, …). Nothing is left behind by a
 * failure.
 */
export function takeLock(file: string, dir: string, stale: number): Taken {
  if (!kernelLockHere(dir)) return takeWithoutKernel(file, dir, stale);
  const side = sidecarOf(dir);
  for (let i = 0; i < REOPEN_TRIES; i++) {
    const opened = openSidecar(side);
    if (opened === undefined) return takeWithoutKernel(file, dir, stale);
    try {
      return takeWithKernel(file, dir, stale, side, opened.fd, opened.id);
    } catch (err) {
      if (err !== REOPEN) throw err;
    }
  }
  throw lockedError(file);
}

function takeWithKernel(file: string, dir: string, stale: number, side: string, fd: number, sideId: Identity): Taken {
  let locked = false;
  let owned = false;
  try {
    if (!exclusive(fd)) throw lockedError(file);
    locked = true;
    // Granted on a sidecar its holder unlinked on release: start again on the one at the path.
    if (!same(identityOf(side), sideId)) throw REOPEN;
    const mark = readMark(fd);
    owned = claimDir(file, dir, stale, mark);
    const sig = SIG_MIN + Math.floor(Math.random() * SIG_SPAN);
    const t = stampSeconds(sig);
    utimesSync(dir, t, t);
    const dirId = identityOf(dir);
    if (dirId === undefined) throw Object.assign(new Error(`ENOENT: the lock directory '${dir}' vanished while it was being taken`), { code: 'ENOENT' });
    writeMark(fd, sig, dirId);
    return { dir, dirId, sidecar: side, sideFd: fd, sideId, sig };
  } catch (err) {
    if (owned) removeDir(dir);
    if (locked && err !== REOPEN) unlinkIfOurs(side, sideId);
    closeSync(fd);
    throw err;
  }
}

/**
 * With the sidecar's flock held: makes the lock directory, or takes over one
 * that a dead holder left (named by `mark`, signed with its signature), or
 * one that proper-lockfile's rule finds stale. Returns true once `dir` is
 * this process's; throws ELOCKED while it is held.
 */
function claimDir(file: string, dir: string, stale: number, mark: Mark | undefined): true {
  if (makeDir(dir)) return true;
  let st: BigIntStats;
  try {
    st = lstatSync(dir, { bigint: true });
  } catch (err) {
    // Removed meanwhile: one more mkdir, then it is someone else's.
    if (code(err) === 'ENOENT') return makeDirOrLocked(file, dir);
    throw err;
  }
  if (mark !== undefined && st.isDirectory() && st.dev === mark.dev && st.ino === mark.ino && signatureOf(st.mtimeNs) === mark.sig) {
    // A holder that died left it: the flock it held is ours now.
    return true;
  }
  return claimByMtime(file, dir, stale);
}

/** proper-lockfile's rule for a lock directory no live runwarden holder owns: held until stale, then removed and made again. */
function claimByMtime(file: string, dir: string, stale: number): true {
  let st: Stats;
  try {
    st = statSync(dir);
  } catch (err) {
    if (code(err) === 'ENOENT') return makeDirOrLocked(file, dir);
    throw err;
  }
  if (!isStale(st, stale)) throw lockedError(file);
  try {
    rmdirSync(dir);
  } catch (err) {
    if (code(err) !== 'ENOENT') throw err;
  }
  return makeDirOrLocked(file, dir);
}

/** mkdir: true when made, false when something is there. */
function makeDir(dir: string): boolean {
  try {
    mkdirSync(dir);
    return true;
  } catch (err) {
    if (code(err) === 'EEXIST') return false;
    throw err;
  }
}

function makeDirOrLocked(file: string, dir: string): true {
  if (makeDir(dir)) return true;
  throw lockedError(file);
}

function removeDir(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {
    /* nothing more can be done; a later taker judges what is left */
  }
}

/** The lock as proper-lockfile takes it, where the kernel's lock is not believed (see the module comment). */
function takeWithoutKernel(file: string, dir: string, stale: number): Taken {
  claimByMtimeFirst(file, dir, stale);
  try {
    // Millisecond times (signature 0), as proper-lockfile writes them.
    const t = stampSeconds(0);
    utimesSync(dir, t, t);
    const dirId = identityOf(dir);
    if (dirId === undefined) throw Object.assign(new Error(`ENOENT: the lock directory '${dir}' vanished while it was being taken`), { code: 'ENOENT' });
    return { dir, dirId, sidecar: undefined, sideFd: -1, sideId: undefined, sig: 0 };
  } catch (err) {
    removeDir(dir);
    throw err;
  }
}

function claimByMtimeFirst(file: string, dir: string, stale: number): void {
  if (makeDir(dir)) return;
  claimByMtime(file, dir, stale);
}

/**
 * Releases a lock this process holds: removes its lock directory (only if
 * it is still the one taken), then unlinks the sidecar and closes it, which
 * frees the flock. Returns whether the directory taken is gone from its path.
 * Throws the directory's removal error (not ENOENT), after the sidecar is
 * freed all the same.
 */
export function releaseTaken(t: Taken): boolean {
  let failure: unknown;
  let gone = false;
  try {
    if (same(identityOf(t.dir), t.dirId)) rmdirSync(t.dir);
    gone = true;
  } catch (err) {
    if (code(err) === 'ENOENT') gone = true;
    else failure = err;
  }
  letGo(t);
  if (failure !== undefined) throw failure as Error;
  return gone;
}

/**
 * Lets go of a lock that was lost: frees the sidecar (unlinked if it is still
 * ours, then closed) and leaves the lock directory to whoever has it now.
 */
export function letGo(t: Taken): void {
  if (t.sideFd < 0) return;
  if (t.sidecar !== undefined && t.sideId !== undefined) unlinkIfOurs(t.sidecar, t.sideId);
  try {
    closeSync(t.sideFd);
  } catch {
    /* closed is closed */
  }
}

/**
 * Exit-time cleanup of a held lock: the same as {@link releaseTaken}, but
 * never throwing (the process is ending; the kernel drops the flock anyway).
 */
export function releaseAtExit(t: Taken): void {
  try {
    releaseTaken(t);
  } catch {
    /* the process is ending */
  }
}

/**
 * check(): whether the lock of `dir` is held. Creates, writes and removes
 * nothing: the sidecar is opened read-only and only probed with a shared,
 * non-blocking flock.
 */
export function isHeld(dir: string, stale: number): boolean {
  let st: Stats;
  try {
    st = statSync(dir);
  } catch (err) {
    if (code(err) === 'ENOENT') return false;
    throw err;
  }
  if (kernelLockHere(dir)) {
    const verdict = sidecarVerdict(dir);
    if (verdict === 'held') return true;
    if (verdict === 'dead') return false;
  }
  return !isStale(st, stale);
}

/** What the sidecar says of `dir`: a live holder, a dead holder's directory, or nothing (judge by mtime). */
function sidecarVerdict(dir: string): 'held' | 'dead' | 'none' {
  let fd: number;
  try {
    fd = openSync(sidecarOf(dir), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return 'none';
  }
  try {
    if (!fstatSync(fd).isFile()) return 'none';
    const op = nativeConstants().flockOp;
    if (!flock(fd, op.Shared)) return 'held';
    const mark = readMark(fd);
    flock(fd, op.Unlock);
    if (mark === undefined) return 'none';
    const st = lstatSync(dir, { bigint: true });
    return st.isDirectory() && st.dev === mark.dev && st.ino === mark.ino && signatureOf(st.mtimeNs) === mark.sig ? 'dead' : 'none';
  } catch {
    return 'none';
  } finally {
    closeSync(fd);
  }
}
