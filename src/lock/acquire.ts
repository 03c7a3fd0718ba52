/**
 * The acquire path (CONTRACT §4.1): a leg takes the run's lock for its whole life.
 *
 * Invariants this module keeps, and why:
 * - The flock, not the file's existence, is the lock: the file is opened
 *   O_CREAT without O_EXCL, so it is reused across legs.
 * - The file is never truncated or written before the exclusive flock is
 *   held (no O_TRUNC at open): a caller that then loses the race must not
 *   have blanked the live holder's file. Under the lock the new content is
 *   written first and the file cut to its length after, so a reused file is
 *   never empty.
 * - Release unlocks and closes and never unlinks. An unlink between another
 *   process's open and its flock would let two legs lock two inodes.
 * - The descriptor is close-on-exec (libuv adds O_CLOEXEC to every open), so a
 *   child the leg spawns cannot keep the run looking alive after the leg dies.
 * - The marker selects the semantics: an unmarked, non-empty file was written
 *   by a pre-flock version whose live leg holds no flock, so taking the flock
 *   would prove nothing; it is refused under the legacy rules instead.
 * - On Windows a marked file without the lock label (CONTRACT §5.8 rule 8)
 *   was written by a writer that takes no lock (oh-my-graph's own Windows
 *   build): the lock granted says nothing of it, so its pid label decides,
 *   and the file is taken over only once that process is gone.
 * - No link is followed: the run directory is opened once with
 *   O_DIRECTORY|O_NOFOLLOW (a symlink there is refused, ENOTREGULAR), and
 *   the lock file is opened, checked and retaken relative to that descriptor
 *   (openat, fstatat), so a run directory swapped for a symlink cannot make
 *   a leg create or lock a file outside the runs root.
 */
import { constants, fstatSync, ftruncateSync, mkdirSync, readFileSync, readSync, writeSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { AbortError, LockFileError, LockHeldError, NativeError, RunwardenError, UnsupportedPlatformError, WriteError } from '../contract/errors.js';
import { closeFd, errnoCode, identityAt, kindOfEntry, openAt, openDirNoFollow, runDirPath } from '../kernel/dirfd.js';
import { kindAt, kindOfStats, type FileKind } from '../kernel/filekind.js';
import { monotonicMs } from '../kernel/clock.js';
import { classifyHead, hasLockLabel, HEAD_BYTES, markedContent, markedPid, parseLegacyPid } from '../contract/marker.js';
import { foreignHolder, openFilesOn, procDevice } from '../kernel/holders.js';
import { flock, hasFlock, lockPrimitive, pidPresence, recordLockHolder } from '../kernel/flock.js';
import { nativeConstants } from '../kernel/native.js';
import { systemFacts } from '../kernel/system.js';

/**
 * A lock this process holds. It is disposable: `using lock = acquireLock(p)`
 * (or `await using lock = await acquireLockAsync(p)`) releases it when the
 * block ends, however it ends.
 */
export interface HeldLock extends Disposable, AsyncDisposable {
  /** The lock file's path, as given. */
  readonly path: string;
  /** The pid written into the file (a label). */
  readonly pid: number;
  /** True until `release()` is called. */
  readonly held: boolean;
  /**
   * Whether the path still names the file this lock holds (CONTRACT §4.5):
   * `ok`; `replaced` (another inode is at the path: a restore, a sync, an
   * editor's save); `missing` (nothing is there, or the run directory is
   * gone). Reads two stats; writes nothing.
   */
  verify(): LockState;
  /**
   * When `verify()` says `replaced`: takes the lock on the file now at the
   * path, writes the marker, and lets go of the old one, so readers of the
   * path see this leg again. A `missing` file is left missing (readers then
   * answer unknown, and a new leg is refused while this one holds the old
   * file); nothing is created. Returns the state found; throws LockHeldError
   * when another leg holds the new file.
   */
  retake(): LockState;
  /**
   * Calls `onCompromised` when {@link HeldLock.verify | verify()} stops saying `ok`: checked
   * every `intervalMs` (default 1000) on a timer that does not keep the
   * process alive, once per change of state (`replaced`, `missing`; again
   * after it was `ok` in between), until the returned stop function is
   * called or the lock is released. The callback may call {@link HeldLock.retake | retake()}.
   *
   * Limits: a change is seen up to `intervalMs` late, and readers may answer
   * `unknown` meanwhile (never ABANDONED: CONTRACT §4.5); it watches the
   * lock file's name in the run directory this lock opened, so a run
   * directory renamed away and replaced by a new one is not seen; the
   * kernel's lock itself cannot be lost while this process holds its
   * descriptor, so there is nothing else to watch for.
   */
  onCompromised(onCompromised: (state: Exclude<LockState, 'ok'>) => void, options?: { intervalMs?: number }): () => void;
  /** Unlocks and closes; never unlinks. Safe to call more than once. */
  release(): void;
  /** `release()`, for `using`. */
  [Symbol.dispose](): void;
  /** `release()`, for `await using`. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** What {@link HeldLock.verify} finds at the lock path. */
export type LockState = 'ok' | 'replaced' | 'missing';

/**
 * Options for {@link acquireLock}, which never blocks the thread: a
 * contended lock is retried for a bounded window, so a reader's brief shared
 * probe is not mistaken for another leg, and then refused.
 */
export interface AcquireOptions {
  /**
   * How long to keep retrying a contended exclusive lock before refusing,
   * in milliseconds (default 100). A reader's shared probe holds the lock for
   * microseconds, so a starting leg may meet a reader rather than a leg; a
   * live leg still refuses once the window is over. While only readers hold
   * it (the kernel's lock table says so, linux), trying goes on for up to
   * 300 × `retryMs` more (at most 30 s), unless one reader never lets go
   * for 5 s. 0 disables retrying.
   */
  retryMs?: number;
  /** The pid label written into the file (default: this process). */
  pid?: number;
}

/** Options for {@link acquireLockAsync}. */
export interface AcquireAsyncOptions {
  /**
   * How long to wait for a contended lock before refusing with
   * `LockHeldError` (`ELOCKHELD`), in milliseconds (default 100, like the
   * sync call's `retryMs`). `Infinity` waits until the leg holding it ends
   * or `signal` aborts. 0 tries once.
   */
  timeoutMs?: number;
  /** Cancels the wait: the promise rejects with `AbortError` (`ABORT_ERR`) and nothing is taken. */
  signal?: AbortSignal;
  /** The pid label written into the file (default: this process). */
  pid?: number;
}

/** The sync call's default retry window (ms), also used when a held lock is retaken. */
const DEFAULT_RETRY_MS = 100;
/** The async wait's first pause between attempts (ms); it doubles up to {@link MAX_PAUSE_MS}. */
const FIRST_PAUSE_MS = 2;
/** The longest pause between two attempts of the async wait (ms). */
const MAX_PAUSE_MS = 100;

// openAt adds O_NOFOLLOW and O_CLOEXEC to every open.
const OPEN_FLAGS = constants.O_RDWR | constants.O_CREAT | constants.O_NONBLOCK;
const sleeper = new Int32Array(new SharedArrayBuffer(4));

function sleepSync(ms: number): void {
  Atomics.wait(sleeper, 0, 0, ms);
}

function notRegular(path: string, kind: FileKind): LockFileError {
  return new LockFileError(
    `lock path "${path}" is a ${kind}, not a regular file; runwarden will not use it as a lock`,
    'ENOTREGULAR',
    path,
    kind,
  );
}

/**
 * Opens the run directory of the lock file at `lockPath` for a leg, without
 * following a link there. A symlink is refused (ENOTREGULAR, kind
 * `symlink`); the kernel's other refusals are thrown as they are (coded
 * ELOCKIO by the caller).
 */
export function openLockDir(lockPath: string): number {
  const dir = dirname(lockPath);
  try {
    return openDirNoFollow(runDirPath(dir));
  } catch (err) {
    const code = errnoCode(err);
    if (code === 'ENOTDIR' || code === 'ELOOP') {
      const kind = kindOfEntry(runDirPath(dir));
      if (kind !== undefined && kind !== 'directory') {
        throw new LockFileError(`the run directory "${dir}" is a ${kind}, not a directory; runwarden follows no links under the runs root and will not write through it`, 'ENOTREGULAR', dir, kind);
      }
    }
    throw err;
  }
}

/** Opens the lock file `path` (relative to the run directory open as `at`) for a leg, refusing anything that is not a regular file. */
function openLockFile(at: number, path: string): number {
  let fd: number;
  try {
    fd = openAt(at, basename(path), OPEN_FLAGS, 0o600);
  } catch (err) {
    const code = errnoCode(err);
    if (code === 'ELOOP' || code === 'EISDIR' || code === 'ENXIO' || code === 'EOPNOTSUPP') {
      const kind = code === 'ELOOP' ? 'symlink' : kindAt(path);
      if (kind !== undefined && kind !== 'file') throw notRegular(path, kind);
    }
    throw err;
  }
  const st = fstatSync(fd);
  if (!st.isFile()) {
    closeFd(fd);
    throw notRegular(path, kindOfStats(st));
  }
  return fd;
}

function readHead(fd: number, buf: Buffer): number {
  return readSync(fd, buf, 0, buf.length, 0);
}

/** The refusal for a pre-flock lock file (CONTRACT §4.1 step 2). */
function legacyRefusal(path: string, head: Buffer, len: number, size: number): LockHeldError {
  const pid = parseLegacyPid(head, len, size);
  const gone = pid !== undefined && pidPresence(pid) === 'gone';
  const lines = [
    `run lock "${path}" was written by an older, pre-flock version: under its rules the file's existence is the lock, and runwarden cannot tell whether that leg is still running.`,
  ];
  if (gone) lines.push(`The pid it names (${pid}) no longer exists, so the lock is very likely stale.`);
  lines.push(`If no leg of this run is running, delete the file and try again:`, `  rm "${path}"`);
  return new LockHeldError(lines.join('\n'), { path, legacy: true, pidGone: gone, pid: gone ? pid : undefined });
}

function futureRefusal(path: string, head: Buffer, len: number): LockHeldError {
  let end = head.indexOf(0x0a);
  if (end < 0 || end > len) end = len;
  const line = head.subarray(0, end).toString('latin1').replace(/\r+$/, '');
  return new LockHeldError(
    `run lock "${path}" was written by a newer version (format "${line}"); this version cannot judge it. Use the newer version for this run.`,
    { path, future: true },
  );
}

function heldRefusal(path: string, pid: number | undefined, why: Contention = { kind: 'leg' }): LockHeldError {
  if (why.kind === 'record-lock') {
    // darwin: flock(2) and record locks are one list (CONTRACT §5.6 rule 3); no leg holds this one.
    const e = new LockHeldError(
      `no leg holds the lock "${path}", but pid ${why.pid} holds a record lock (fcntl or lockf) on the file, which on this system keeps flock(2) out; stop that process, or have it let go of its lock`,
      { path },
    );
    RECORD_LOCKED.add(e);
    return e;
  }
  if (why.kind === 'readers' && why.waitedMs === 0) {
    // A zero window (retryMs 0, timeoutMs 0): the one attempt met a reader's shared probe.
    return new LockHeldError(`no leg holds the lock "${path}", but a reader's shared lock was on it at the single attempt a zero retry window makes; try again, or allow retries`, { path });
  }
  if (why.kind === 'readers') {
    // No leg holds it: readers' shared probes never left an instant free (CONTRACT §4.1 step 3).
    return new LockHeldError(
      `no leg holds the lock "${path}", but readers' shared probes kept it held without a free instant for ${(why.waitedMs / 1000).toFixed(1)} s; try again, or probe less often`,
      { path },
    );
  }
  if (why.kind === 'stuck-reader') {
    return new LockHeldError(
      `no leg holds the lock "${path}", but pid ${why.pid} has held a shared lock on it for ${READER_STUCK_MS / 1000} s (a reader that is stopped, or holds it on purpose); resume or stop that process`,
      { path },
    );
  }
  const by = pid === undefined ? '' : ` (started by pid ${pid})`;
  return new LockHeldError(`a leg of this run is in flight${by}; wait for it, or stop it`, { path, pid });
}

/** Refusals for a third party's record lock: a wait for a leg to end does not end it. */
const RECORD_LOCKED = new WeakSet<LockHeldError>();

/**
 * Refusals of an unlabeled file that a person must settle: no pid label to watch, so no wait can
 * end them (acquireLockAsync refuses these at once, as it does a legacy file).
 */
const NEEDS_A_PERSON = new WeakSet<LockHeldError>();

/**
 * With the lock just granted on Windows: a marked file without the lock label (CONTRACT §5.8 rule 8)
 * was written by a writer that takes no lock, oh-my-graph's own Windows build, so the granted lock
 * proves nothing about that writer. Its pid label is the evidence left: the file is taken over only
 * when that process is gone (OpenProcess, kernel/presence.ts); while it is present, or its presence
 * cannot be told, or there is no pid label, this refuses. A present pid may be another program's by
 * now (Windows reuses pids), so, as for a legacy file, a pid that may be alive is never printed.
 */
function unlabeledRefusal(path: string, head: Buffer, len: number): LockHeldError | undefined {
  if (classifyHead(head, len) !== 'marked' || hasLockLabel(head, len)) return undefined;
  const pid = markedPid(head, len);
  const presence = pid === undefined ? 'unknown' : pidPresence(pid);
  if (presence === 'gone') return undefined;
  const del = `  del "${path}"`;
  const lead = `run lock "${path}" was written by a writer that takes no lock on Windows (oh-my-graph's own Windows build), so its lock being free proves nothing about it`;
  if (presence === 'present') {
    return new LockHeldError(
      [
        `${lead}, and the process its pid label names is still running: a leg of this run may be in flight. Wait for it to end and try again.`,
        `If no leg of this run is running (Windows reuses pids, so that process may be another program by now), delete the file and try again:`,
        del,
      ].join('\n'),
      { path },
    );
  }
  const why = pid === undefined ? 'it names no pid' : 'whether the process its pid label names is running cannot be told';
  const e = new LockHeldError(
    [`${lead}, and ${why}: a leg of this run may be in flight.`, `If no leg of this run is running, delete the file and try again:`, del].join('\n'),
    { path },
  );
  NEEDS_A_PERSON.add(e);
  return e;
}

/** Refusals decided from the file's head before (or right after) locking. */
function refusalForHead(path: string, fd: number, head: Buffer): LockHeldError | undefined {
  const len = readHead(fd, head);
  const kind = classifyHead(head, len);
  if (kind === 'future') return futureRefusal(path, head, len);
  if (kind === 'unmarked') return legacyRefusal(path, head, len, fstatSync(fd).size);
  return undefined;
}

/**
 * Takes the run's lock for a leg: creates the run directory (0700) and the
 * lock file (0600) if missing, refuses pre-flock and future-format files,
 * takes `LOCK_EX|LOCK_NB` (retrying briefly past readers' shared probes),
 * then, holding it, truncates and writes the marker and pid, and checks that
 * the path still names the locked inode.
 *
 * @throws LockHeldError when another leg owns the run (or may, for a legacy file).
 * @throws LockFileError when the path is not a regular file or was replaced.
 * @throws NativeError / fs errors for failures the kernel reports.
 */
export function acquireLock(lockPath: string, options: AcquireOptions = {}): HeldLock {
  if (typeof lockPath !== 'string' || lockPath.length === 0) {
    throw new TypeError('acquireLock(lockPath): lockPath must be a non-empty string');
  }
  const retryMs = options.retryMs ?? 100;
  const pid = options.pid ?? process.pid;
  if (!Number.isInteger(retryMs) || retryMs < 0) throw new RangeError('retryMs must be a non-negative integer');
  if (!Number.isInteger(pid) || pid < 1 || pid > 2 ** 31 - 1) throw new RangeError('pid must be an integer from 1 to 2^31-1');
  if (!hasFlock()) throw new UnsupportedPlatformError(`runwarden cannot take a lock on ${process.platform}: no flock(2)`);
  makeRunDir(lockPath);
  const at = coded(dirname(lockPath), 'open the run directory', () => openLockDir(lockPath));
  try {
    return new Held(lockPath, pid, retryMs, lockOnceCoded(at, lockPath, pid, retryMs), at, true);
  } catch (err) {
    closeFd(at);
    throw err;
  }
}

/**
 * {@link acquireLock} for the lock file of the run directory open as `at`
 * (kernel/dirfd.ts), which the caller opened and keeps open until the lock
 * is released (the lock borrows it, never closes it). `lockPath` names the
 * file in messages and for holder evidence. Internal: `exec`'s leg uses it,
 * so its lock and its events are in the one directory it opened.
 */
export function acquireLockAt(at: number, lockPath: string, options: AcquireOptions = {}): HeldLock {
  const retryMs = options.retryMs ?? 100;
  const pid = options.pid ?? process.pid;
  if (!Number.isInteger(retryMs) || retryMs < 0) throw new RangeError('retryMs must be a non-negative integer');
  if (!Number.isInteger(pid) || pid < 1 || pid > 2 ** 31 - 1) throw new RangeError('pid must be an integer from 1 to 2^31-1');
  if (!hasFlock()) throw new UnsupportedPlatformError(`runwarden cannot take a lock on ${process.platform}: no flock(2)`);
  return new Held(lockPath, pid, retryMs, lockOnceCoded(at, lockPath, pid, retryMs), at, false);
}

/**
 * {@link acquireLock} without blocking the event loop: each attempt is the
 * sync call's single attempt (open, judge, `LOCK_EX|LOCK_NB`, mark, check),
 * and between attempts it waits on a timer, from 2 ms doubling to 100 ms,
 * for at most `timeoutMs`. Only a contended lock is waited for: a pre-flock
 * or newer-format file, or a path that is not a regular file, is refused at
 * once, as by the sync call.
 *
 * @throws LockHeldError (`ELOCKHELD`) when the lock is still held after `timeoutMs`.
 * @throws AbortError (`ABORT_ERR`) when `signal` aborts first (its `cause` is the signal's reason).
 * @throws LockFileError, UnsupportedPlatformError, NativeError as {@link acquireLock} does.
 */
export async function acquireLockAsync(lockPath: string, options: AcquireAsyncOptions = {}): Promise<HeldLock> {
  if (typeof lockPath !== 'string' || lockPath.length === 0) {
    throw new TypeError('acquireLockAsync(lockPath): lockPath must be a non-empty string');
  }
  const timeoutMs = options.timeoutMs ?? DEFAULT_RETRY_MS;
  const pid = options.pid ?? process.pid;
  const signal = options.signal;
  if (typeof timeoutMs !== 'number' || Number.isNaN(timeoutMs) || timeoutMs < 0) throw new RangeError('timeoutMs must be a non-negative number (Infinity waits until aborted)');
  if (!Number.isInteger(pid) || pid < 1 || pid > 2 ** 31 - 1) throw new RangeError('pid must be an integer from 1 to 2^31-1');
  if (signal !== undefined && !(signal instanceof AbortSignal)) throw new TypeError('signal must be an AbortSignal');
  if (signal?.aborted) throw abortedWait(lockPath, signal);
  if (!hasFlock()) throw new UnsupportedPlatformError(`runwarden cannot take a lock on ${process.platform}: no flock(2)`);
  makeRunDir(lockPath);
  const at = coded(dirname(lockPath), 'open the run directory', () => openLockDir(lockPath));
  const start = performance.now();
  // Past timeoutMs, as the sync call past retryMs: go on while only readers hold it, coming and going.
  const readers = Number.isFinite(timeoutMs) && timeoutMs > 0 ? new ReadersOnlyWait(monotonicMs(), timeoutMs) : undefined;
  let pause = FIRST_PAUSE_MS;
  try {
    for (;;) {
      try {
        // Attempts do not read the lock table (it is read once, when the wait gives up).
        return new Held(lockPath, pid, DEFAULT_RETRY_MS, lockOnceCoded(at, lockPath, pid, 0, false), at, true);
      } catch (err) {
        // Waiting helps only while a leg holds the lock; a legacy or future
        // file needs a person or a newer version, not time.
        if (!(err instanceof LockHeldError) || err.legacy || err.future || NEEDS_A_PERSON.has(err)) throw err;
        const left = timeoutMs - (performance.now() - start);
        if (left <= 0 && RECORD_LOCKED.has(err)) throw err;
        if (left <= 0) {
          const id = identityAt(at, basename(lockPath));
          const why = id === undefined ? { kind: 'leg' as const } : readers === undefined ? oneLook(id.dev, id.ino) : readers.look(monotonicMs(), id.dev, id.ino);
          if (why !== undefined) throw why.kind === 'leg' ? err : heldRefusal(lockPath, undefined, why);
          // Readers only: try again soon (a free instant among them is brief).
          await waitOrAbort(FIRST_PAUSE_MS, lockPath, signal);
          continue;
        }
        await waitOrAbort(Math.min(pause, left), lockPath, signal);
        pause = Math.min(pause * 2, MAX_PAUSE_MS);
      }
    }
  } catch (err) {
    closeFd(at);
    throw err;
  }
}

function abortedWait(lockPath: string, signal: AbortSignal): AbortError {
  return new AbortError(`the wait for the lock "${lockPath}" was aborted; nothing was taken`, { cause: signal.reason });
}

/** Resolves after `ms`, or rejects with AbortError as soon as `signal` aborts. */
function waitOrAbort(ms: number, lockPath: string, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortedWait(lockPath, signal));
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(abortedWait(lockPath, signal as AbortSignal));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * A kernel refusal met while taking the lock (EACCES, EROFS, ENOSPC, EIO …)
 * as a LockFileError with code `ELOCKIO`, so a caller can branch on a code
 * of ours; runwarden's own errors pass through unchanged.
 */
function coded<T>(path: string, action: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    // A NativeError is the kernel's refusal too (from the addon's openat and friends).
    if ((err instanceof RunwardenError && !(err instanceof NativeError)) || !(err instanceof Error)) throw err;
    const e = err as NodeJS.ErrnoException;
    if (typeof e.code !== 'string') throw err;
    throw new LockFileError(`cannot ${action} "${path}": ${e.message}`, 'ELOCKIO', path, undefined, { errno: e.code, syscall: e.syscall });
  }
}

/**
 * How much longer than `retryMs` acquire keeps trying while only readers
 * hold the lock and they come and go (a factor, and a cap in ms). Measured
 * (bench/RESULTS.md "Acquire against tight-loop readers"): 64 tight-loop
 * pollers on 2 cores keep 4 to 21 shared locks held at every look, and a
 * leg waited up to 31.8 s for an instant with none; 16 pollers, under 1.2 s.
 * No window can be enough for every storm; this one keeps a false "busy"
 * out of reach of any realistic reader while still ending.
 */
export const READERS_ONLY_FACTOR = 300;
export const READERS_ONLY_CAP_MS = 30_000;
/**
 * A reader pid seen holding a shared lock at every look for this long (ms),
 * and at no fewer than {@link READER_STUCK_LOOKS} looks in a row, is not
 * coming and going: it is stopped (SIGSTOP, a debugger) or holds the lock
 * on purpose, so waiting for it is pointless, and acquire refuses. The
 * count matters on a starved machine, where this process itself may look
 * only a few times in 5 s and a tight-loop poller that holds a sixth of the
 * time could be caught at each of a few looks by chance (seen: a refusal
 * at 28 s with the time rule alone, load 50 on 2 cores).
 */
export const READER_STUCK_MS = 5000;
export const READER_STUCK_LOOKS = 40;
/** How often, while extended, the kernel's lock table is looked at again (ms). */
const RECHECK_MS = 100;
/**
 * Looks are at least this many times their own cost (CPU time) apart, so they take at most 1/20 (5 %) of a core:
 * linux's look reads /proc/locks (well under a millisecond, so every {@link RECHECK_MS}); darwin's is
 * libproc's census of every descriptor of this user's processes, tens of milliseconds on a desktop.
 */
const LOOK_COST_FACTOR = 20;
const FLOCK_HELD = /^\d+:\s+FLOCK\s+\S+\s+(READ|WRITE)\s+(-?\d+)\s+([0-9a-f]+:[0-9a-f]+:\d+)\s/;

/** What the kernel's lock table shows held on one file: an exclusive flock (a leg), and the pids holding shared ones. */
interface LockCensus {
  exclusive: boolean;
  readers: Set<number>;
}

/**
 * The flocks held on the file `dev`/`ino`, not counting processes waiting
 * for one. undefined when it cannot be told (no /proc/locks: darwin, or
 * unreadable).
 */
function lockCensus(dev: bigint, ino: bigint): LockCensus | undefined {
  const sys = systemFacts();
  if (sys.holderTable === 'libproc') return openCensus(dev, ino);
  if (!sys.procfs) return undefined;
  let table: string;
  try {
    table = readFileSync('/proc/locks', 'latin1');
  } catch {
    return undefined;
  }
  const id = `${procDevice(dev)}:${ino}`;
  const census: LockCensus = { exclusive: false, readers: new Set() };
  for (const line of table.split('\n')) {
    const m = FLOCK_HELD.exec(line);
    if (m === null || m[3] !== id) continue;
    if (m[1] === 'WRITE') census.exclusive = true;
    else census.readers.add(Number(m[2]));
  }
  return census;
}

/**
 * darwin's evidence (no lock table there): libproc's census of this user's processes' descriptors
 * on the file. A leg opens its lock file read-write (CONTRACT §4.1) and holds it open for its whole
 * life, so a descriptor open for writing by another process is taken for a leg (`exclusive`);
 * read-only descriptors are readers (a probe opens read-only). undefined when the census cannot be
 * taken. Another user's processes are not seen: a leg of another user reads as nobody, and the wait
 * then ends at the readers-only window's end, refused all the same.
 */
function openCensus(dev: bigint, ino: bigint): LockCensus | undefined {
  // Descriptors of this inode only, and no paths: the census answers nothing else.
  const census = openFilesOn(dev, { ino }, true);
  if (census === undefined) return undefined;
  const out: LockCensus = { exclusive: false, readers: new Set() };
  const want = Number(ino);
  for (const f of census.files) {
    if (f.ino !== want || f.pid === process.pid) continue;
    if (f.write) out.exclusive = true;
    else out.readers.add(f.pid);
  }
  return out;
}

/**
 * Who held the lock at a single attempt, from one look at the lock table:
 * readers, when it shows shared holders and no exclusive one; else a leg
 * (an unreadable table, or nobody there by now, keeps the leg's wording,
 * the pre-existing answer).
 */
function oneLook(dev: bigint, ino: bigint): Contention {
  const census = lockCensus(dev, ino);
  return census !== undefined && !census.exclusive && census.readers.size > 0 ? { kind: 'readers', waitedMs: 0 } : { kind: 'leg' };
}

/** Why a contended lock was not taken. */
type Contention =
  /** An exclusive holder (a leg), or the lock table could not be read, after the retry window. */
  | { kind: 'leg' }
  /** Only readers held it, coming and going, for the whole readers-only window (waitedMs 0: at the one attempt of retryMs 0). */
  | { kind: 'readers'; waitedMs: number }
  /** One reader pid held a shared lock at every look for {@link READER_STUCK_MS}. */
  | { kind: 'stuck-reader'; pid: number }
  /** Another process's record lock (fcntl, lockf) kept the flock out (darwin's one list of locks). */
  | { kind: 'record-lock'; pid: number };

/**
 * Decides, past the retry window, whether to keep waiting on a lock held by
 * readers only. Keeps, across looks, since when each reader pid has been
 * seen at every look.
 */
class ReadersOnlyWait {
  /** For each reader pid seen at every look since: the first of those looks, and how many. */
  private readonly since = new Map<number, { at: number; looks: number }>();
  private readonly hardDeadline: number;
  /** When the next look may be taken: {@link RECHECK_MS} after the last, or {@link LOOK_COST_FACTOR} times its cost. */
  private nextLook = -Infinity;
  constructor(
    private readonly start: number,
    retryWindowMs: number,
  ) {
    this.hardDeadline = start + retryWindowMs + Math.min(retryWindowMs * READERS_ONLY_FACTOR, READERS_ONLY_CAP_MS);
  }

  /** undefined: keep waiting (the last look stands until {@link next}); else why to refuse. */
  look(now: number, dev: bigint, ino: bigint): Contention | undefined {
    if (now >= this.hardDeadline) return { kind: 'readers', waitedMs: now - this.start };
    if (now < this.nextLook) return undefined;
    // Its cost in CPU time, not wall time: a loaded machine's preemption is not the look's cost.
    const cpu = process.cpuUsage();
    const census = lockCensus(dev, ino);
    const { user, system } = process.cpuUsage(cpu);
    this.nextLook = now + Math.max(RECHECK_MS, ((user + system) / 1000) * LOOK_COST_FACTOR);
    if (census === undefined || census.exclusive) return { kind: 'leg' };
    for (const pid of [...this.since.keys()]) if (!census.readers.has(pid)) this.since.delete(pid);
    for (const pid of census.readers) {
      const seen = this.since.get(pid);
      if (seen === undefined) {
        this.since.set(pid, { at: now, looks: 1 });
        continue;
      }
      seen.looks++;
      if (now - seen.at >= READER_STUCK_MS && seen.looks >= READER_STUCK_LOOKS) return { kind: 'stuck-reader', pid };
    }
    return undefined;
  }

  /** When to look again. */
  next(now: number): number {
    return Math.min(Math.max(now + RECHECK_MS, this.nextLook), this.hardDeadline);
  }
}

/**
 * Takes `LOCK_EX|LOCK_NB` on `fd`, retrying while it is contended (CONTRACT
 * §4.1 step 3). Why it retries, and how:
 * - A reader's shared probe holds the lock for microseconds, but a reader
 *   preempted between its `LOCK_SH` and `LOCK_UN` holds it until it runs
 *   again, which with many pollers on few cores can be tens of ms, over
 *   and over. Attempts are ~1 ms apart, jittered so they do not keep
 *   meeting the same scheduling rhythm.
 * - For `retryMs` it tries whoever holds the lock (a leg about to end is
 *   waited for). After that it refuses if the kernel's lock table shows an
 *   exclusive holder (a leg), or cannot be read; if it shows only shared
 *   holders (readers), it keeps trying, for up to
 *   {@link READERS_ONLY_FACTOR} × `retryMs` more (at most
 *   {@link READERS_ONLY_CAP_MS}), looking at the table again every
 *   {@link RECHECK_MS}. Readers can starve an exclusive flock (the kernel
 *   grants a shared lock beside shared ones however long a writer waits),
 *   so the window is long; it ends early only for a reader pid seen holding
 *   at every look for {@link READER_STUCK_MS} and {@link READER_STUCK_LOOKS}
 *   looks (stopped, not probing). So
 *   readers delay a starting leg, boundedly, but do not turn it away, and a
 *   live leg is still refused after `retryMs`. A refusal says which it was.
 * - Deadlines are on the monotonic clock: a wall clock stepped back cannot
 *   stretch them.
 * Returns undefined once locked, else why it refuses. `retryMs` 0: one
 * attempt, and with `lookOnce` one look at the lock table to say who held
 * it ({@link oneLook}); without, a leg (acquireLockAsync's attempts, which
 * look only when they give up).
 */
function takeContended(fd: number, retryMs: number, lookOnce: boolean): Contention | undefined {
  const op = nativeConstants().flockOp;
  if (flock(fd, op.Exclusive)) return undefined;
  if (retryMs === 0) {
    const rec = recordLockHolder(fd, op.Exclusive);
    if (rec !== undefined) return { kind: 'record-lock', pid: rec };
    if (!lookOnce) return { kind: 'leg' };
    const st = fstatSync(fd, { bigint: true });
    return oneLook(st.dev, st.ino);
  }
  const start = monotonicMs();
  let deadline = start + retryMs;
  const readers = new ReadersOnlyWait(start, retryMs);
  for (;;) {
    sleepSync(0.5 + Math.random());
    if (flock(fd, op.Exclusive)) return undefined;
    const now = monotonicMs();
    if (now < deadline) continue;
    // The window (or an extension) is over: refuse unless only readers hold the lock, coming and going.
    // A record lock is no reader's: waiting does not end it.
    const rec = recordLockHolder(fd, op.Exclusive);
    if (rec !== undefined) return { kind: 'record-lock', pid: rec };
    const st = fstatSync(fd, { bigint: true });
    const refusal = readers.look(now, st.dev, st.ino);
    if (refusal !== undefined) return refusal;
    deadline = readers.next(now);
  }
}

/** Creates the run directory (0700, parents too) if it is missing. */
function makeRunDir(lockPath: string): void {
  const dir = dirname(lockPath);
  coded(dir, 'create the run directory', () => mkdirSync(runDirPath(dir), { recursive: true, mode: 0o700 }));
}

/** {@link lockOnce}, with the kernel's refusals coded `ELOCKIO`. */
function lockOnceCoded(at: number, lockPath: string, pid: number, retryMs: number, lookOnce = true): Taken {
  return coded(lockPath, 'take the lock', () => lockOnce(at, lockPath, pid, retryMs, lookOnce));
}

/** The held file's identity, to compare with what is at the path. */
interface Taken {
  fd: number;
  dev: bigint;
  ino: bigint;
}

/**
 * Opens, judges, locks, marks and checks the file at `lockPath` once (the
 * run directory must exist). Returns the held descriptor and its identity.
 */
function lockOnce(at: number, lockPath: string, pid: number, retryMs: number, lookOnce: boolean): Taken {
  const op = nativeConstants().flockOp;
  const fd = openLockFile(at, lockPath);
  let locked = false;
  try {
    const head = Buffer.alloc(HEAD_BYTES);
    const early = refusalForHead(lockPath, fd, head);
    if (early) throw early;

    const contended = takeContended(fd, retryMs, lookOnce);
    if (contended !== undefined) {
      const len = readHead(fd, head);
      throw heldRefusal(lockPath, classifyHead(head, len) === 'marked' ? markedPid(head, len) : undefined, contended);
    }
    locked = true;

    // A pre-flock writer may have created its file between our open and our
    // lock only if it did not see ours; re-check under the lock anyway.
    const late = refusalForHead(lockPath, fd, head);
    if (late) throw late;
    // Windows: a free lock proves a dead leg only where its file says the writer locked.
    const unlabeled = lockPrimitive() === 'LockFileEx' ? unlabeledRefusal(lockPath, head, readHead(fd, head)) : undefined;
    if (unlabeled) throw unlabeled;

    // Write, then cut off whatever an earlier, longer content left behind.
    // In this order a reused file never passes through an empty state, so a
    // reader that reads it mid-rewrite still finds the marker line and is
    // judged by the flock (held), not by an empty head (unknown).
    const content = markedContent(pid, lockPrimitive() === 'LockFileEx' ? 'LockFileEx' : 'flock');
    const written = writeSync(fd, content, 0, content.length, 0);
    if (written !== content.length) throw new WriteError(`short write to "${lockPath}" (${written} of ${content.length} bytes)`, 'EWRITE', lockPath);
    ftruncateSync(fd, content.length);

    const mine = fstatSync(fd, { bigint: true });
    let now;
    try {
      now = identityAt(at, basename(lockPath));
    } catch {
      now = undefined;
    }
    if (now === undefined || now.ino !== mine.ino || now.dev !== mine.dev) {
      throw new LockFileError(
        `lock file "${lockPath}" was deleted or replaced while it was being locked; refusing, since another leg may hold the new file`,
        'ELOCKREPLACED',
        lockPath,
      );
    }
    // A live leg may still hold the file that was at this path before a
    // restore or sync replaced it (CONTRACT §4.5): its flock is on the old
    // inode, so ours was granted. Refuse while that evidence stands.
    const other = foreignHolder({ lockPath: resolve(lockPath), dev: mine.dev, currentIno: mine.ino, exceptPid: process.pid });
    if (other.kind === 'held-elsewhere') {
      throw new LockHeldError(
        `a leg of this run is in flight (pid ${other.holder.pid}) and holds the lock file that was at "${lockPath}" before it was replaced; wait for it, or stop it`,
        { path: lockPath, pid: other.holder.pid },
      );
    }
    if (other.kind === 'unknown') {
      throw new LockHeldError(`cannot tell whether a leg still holds a replaced lock file of this run (${other.detail}); refusing`, { path: lockPath });
    }
    return { fd, dev: mine.dev, ino: mine.ino };
  } catch (err) {
    if (locked) {
      try {
        flock(fd, op.Unlock);
      } catch {
        /* close below releases it */
      }
    }
    closeFd(fd);
    throw err;
  }

}

/** A held lock: the descriptor it holds, and the means to check and heal it. */
class Held implements HeldLock {
  private taken: Taken | undefined;
  /** Stop functions of the onCompromised watches, ended on release. */
  private readonly watchers = new Set<() => void>();

  constructor(
    readonly path: string,
    readonly pid: number,
    private readonly retryMs: number,
    taken: Taken,
    /** The run directory, open without following links; every check and retake is relative to it. */
    private readonly at: number,
    /** Whether this lock opened `at` itself, and so closes it on release. */
    private readonly ownsDir: boolean,
  ) {
    this.taken = taken;
  }

  get held(): boolean {
    return this.taken !== undefined;
  }

  verify(): LockState {
    const t = this.taken;
    if (t === undefined) throw new RangeError('verify(): this lock was released');
    let now;
    try {
      now = identityAt(this.at, basename(this.path));
    } catch {
      return 'missing';
    }
    if (now === undefined) return 'missing';
    return now.ino === t.ino && now.dev === t.dev ? 'ok' : 'replaced';
  }

  retake(): LockState {
    const before = this.verify();
    if (before !== 'replaced') return before;
    const old = this.taken as Taken;
    this.taken = lockOnceCoded(this.at, this.path, this.pid, this.retryMs);
    unlockAndClose(old.fd);
    return before;
  }

  onCompromised(onCompromised: (state: Exclude<LockState, 'ok'>) => void, options: { intervalMs?: number } = {}): () => void {
    if (typeof onCompromised !== 'function') throw new TypeError('onCompromised(callback): callback must be a function');
    const intervalMs = options.intervalMs ?? 1000;
    if (typeof intervalMs !== 'number' || !Number.isFinite(intervalMs) || intervalMs < 1) throw new RangeError('intervalMs must be a finite number of at least 1');
    if (this.taken === undefined) throw new RangeError('onCompromised(): this lock was released');
    let last: LockState = 'ok';
    const timer = setInterval(() => {
      if (this.taken === undefined) {
        stop();
        return;
      }
      const now = this.verify();
      if (now !== last && now !== 'ok') onCompromised(now);
      last = now;
    }, intervalMs);
    timer.unref();
    const stop = (): void => {
      clearInterval(timer);
      this.watchers.delete(stop);
    };
    this.watchers.add(stop);
    return stop;
  }

  release(): void {
    for (const stop of [...this.watchers]) stop();
    const t = this.taken;
    if (t === undefined) return;
    this.taken = undefined;
    try {
      unlockAndClose(t.fd);
    } finally {
      if (this.ownsDir) closeFd(this.at);
    }
  }

  [Symbol.dispose](): void {
    this.release();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.release();
  }
}

function unlockAndClose(fd: number): void {
  try {
    flock(fd, nativeConstants().flockOp.Unlock);
  } finally {
    closeFd(fd);
  }
}
