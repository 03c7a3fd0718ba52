/**
 * runwarden/lockfile: proper-lockfile 4.x's API on the kernel's lock
 * (docs/lockfile.md). Replacing `require('proper-lockfile')` with
 * `require('runwarden/lockfile')` is the whole migration: the same calls,
 * options, promise and release-function shapes, error codes and messages,
 * and the same lock directory on disk, so both kinds of process exclude each
 * other while a fleet moves over.
 *
 * What changes is how a held lock stays held: by an exclusive flock(2) the
 * holder keeps for its whole life (lockfile/protocol.ts), not by a
 * heartbeat. The lock is free the moment its holder dies, however it dies; a
 * blocked event loop, a suspended machine or a slow disk never makes it free
 * and never calls `onCompromised`, which is called only when the lock
 * directory or its sidecar was removed or replaced by someone else, within
 * {@link TICK_MS} of it (once the main thread's loop runs).
 *
 * The table of held locks is this module's, one per process: the package's
 * CommonJS build is the only copy of it, whichever module form loads it
 * (scripts/build-cjs.mjs).
 */
import * as nodeFs from 'node:fs';
import { resolve } from 'node:path';
import { ProperLockfileError } from '../contract/errors.js';
import { drop, keep, TICK_MS } from './heartbeat.js';
import { lockOptions, mainError, realpathOf, refuseRetries, retryWaits, staleOf, type CheckOptions, type LockOptions, type ResolvedLockOptions, type UnlockOptions } from './options.js';
import { isHeld, letGo, lockDirOf, releaseAtExit, releaseTaken, takeLock, type Taken } from './protocol.js';

export type { CheckOptions, CommonOptions, LockOptions, RetryOptions, UnlockOptions } from './options.js';
export { ProperLockfileError, type ProperLockfileErrorCode } from '../contract/errors.js';
export { TICK_MS };

/** One held lock. */
interface Held {
  readonly id: number;
  readonly file: string;
  readonly taken: Taken;
  readonly options: ResolvedLockOptions;
  released: boolean;
}

/** Held locks by resolved file path (proper-lockfile's `locks`). */
const locks = new Map<string, Held>();
let nextId = 1;
let exitHook = false;

function cleanupAtExit(): void {
  for (const h of locks.values()) releaseAtExit(h.taken);
  locks.clear();
}

/**
 * An error as it was thrown, typed: the kernel's errors are made in Node's own realm, so inside a
 * test runner's sandbox (Jest) `instanceof Error` does not hold for them, and wrapping them would
 * lose their `code`.
 */
function asThrown(err: unknown): Error {
  return err as Error;
}

/** The file as proper-lockfile resolves it: realpath through the caller's `fs` (callback style), or path.resolve. */
function resolveAsync(file: string, realpath: boolean, fs: ResolvedLockOptions['fs']): Promise<string> {
  if (!realpath) return Promise.resolve(resolve(file));
  // Node's own realpath (the default fs) is resolved in place: the same walk of the same lstat calls as its
  // callback form, without a round trip through libuv's thread pool, which costs a lock more than the
  // few calls themselves; every later step of taking the lock is synchronous too. A caller's own `fs`
  // is asked as proper-lockfile asks it.
  if (fs.realpath === nodeFs.realpath) {
    try {
      return Promise.resolve(nodeFs.realpathSync(file));
    } catch (err) {
      // As the callback form passes it: the error itself.
      return Promise.reject(asThrown(err));
    }
  }
  return new Promise((ok, fail) => {
    const rp = fs.realpath;
    if (typeof rp !== 'function') {
      fail(new TypeError('options.fs has no realpath function'));
      return;
    }
    rp.call(fs, file, (err, resolved) => (err ? fail(err) : ok(resolved as string)));
  });
}

/** The sync calls' resolution: the caller's `fs.realpathSync` (proper-lockfile's sync adapter), or path.resolve. */
function resolveSync(file: string, realpath: boolean, fs: ResolvedLockOptions['fs']): string {
  if (!realpath) return resolve(file);
  const rp = fs.realpathSync ?? ((p: string): string => nodeFs.realpathSync(p));
  return rp.call(fs, file);
}

function compromised(h: Held, what: 'directory' | 'sidecar', how: 'removed' | 'replaced'): void {
  if (h.released) return;
  h.released = true;
  if (locks.get(h.file) === h) locks.delete(h.file);
  const path = what === 'directory' ? h.taken.dir : (h.taken.sidecar as string);
  // A removal reads as proper-lockfile's (the ENOENT its refresh meets); a replacement says what was found.
  const message =
    how === 'removed'
      ? `ENOENT: no such file or directory, the lock ${what} '${path}' was removed by another process; the lock is lost`
      : `The lock ${what} '${path}' was replaced by another process; the lock is lost`;
  // The sidecar's flock is let go: another runwarden process may now judge the directory by its mtime.
  letGo(h.taken);
  h.options.onCompromised(new ProperLockfileError(message, 'ECOMPROMISED'));
}

/** Takes the lock once (the sync core of every lock call) and records it. */
function acquire(file: string, options: ResolvedLockOptions): Held {
  const taken = takeLock(file, lockDirOf(file, options.lockfilePath), options.stale);
  const h: Held = { id: nextId++, file, taken, options, released: false };
  locks.set(file, h);
  if (!exitHook) {
    exitHook = true;
    process.once('exit', cleanupAtExit);
  }
  keep(
    h.id,
    {
      dir: taken.dir,
      dev: String(taken.dirId.dev),
      ino: String(taken.dirId.ino),
      sidecar: taken.sidecar,
      sideDev: taken.sideId === undefined ? undefined : String(taken.sideId.dev),
      sideIno: taken.sideId === undefined ? undefined : String(taken.sideId.ino),
      sig: taken.sig,
      update: options.update,
    },
    (loss) => compromised(h, loss.what, loss.how),
  );
  return h;
}

/** Releases a held lock (unlock's core): out of the table, off the worker, then off the disk. */
function release(h: Held): void {
  h.released = true;
  if (locks.get(h.file) === h) locks.delete(h.file);
  let gone = false;
  try {
    gone = releaseTaken(h.taken);
  } finally {
    drop(h.id, gone);
  }
}

function releasedError(): ProperLockfileError {
  return new ProperLockfileError('Lock is already released', 'ERELEASED');
}

function notAcquired(): ProperLockfileError {
  return new ProperLockfileError('Lock is not acquired/owned by you', 'ENOTACQUIRED');
}

/**
 * Takes the lock on `file`: resolves with the function that releases it
 * (which resolves, or rejects with ERELEASED when already released).
 * Rejects with ELOCKED ("Lock file is already being held") while another
 * holder has it and `retries` are used up, or with the kernel's error
 * (ENOENT for a missing file with `realpath`, or a missing directory).
 */
export async function lock(file: string, options?: LockOptions): Promise<() => Promise<void>> {
  const o = lockOptions(options);
  const resolved = await resolveAsync(file, o.realpath, o.fs);
  const h = await withRetries(() => acquire(resolved, o), o);
  return () => {
    if (h.released) return Promise.reject(releasedError());
    return new Promise<void>((ok, fail) => {
      try {
        release(h);
        ok();
      } catch (err) {
        fail(asThrown(err));
      }
    });
  };
}

/** Attempts, with node-retry's waits between them; the error that came up most often when they run out. */
function withRetries<T>(attempt: () => T, o: ResolvedLockOptions): Promise<T> {
  const waits = retryWaits(o.retries);
  const cached = !Array.isArray(o.retries) && (o.retries as { forever?: boolean }).forever ? [...waits] : undefined;
  const maxTime = Array.isArray(o.retries) ? Infinity : ((o.retries as { maxRetryTime?: number }).maxRetryTime ?? Infinity);
  const unref = !Array.isArray(o.retries) && (o.retries as { unref?: boolean }).unref === true;
  // A wall-clock difference, as node-retry measures maxRetryTime.
  const start = Date.now();
  const errors: Error[] = [];
  return new Promise<T>((ok, fail) => {
    const one = (): void => {
      let err: Error;
      try {
        ok(attempt());
        return;
      } catch (e) {
        err = e as Error;
      }
      if (Date.now() - start >= maxTime) {
        errors.unshift(new Error('RetryOperation timeout occurred'));
        fail(mainError(errors) ?? err);
        return;
      }
      errors.push(err);
      let wait = waits.shift();
      if (wait === undefined && cached !== undefined) {
        // forever: only the latest error is kept, and the waits start over.
        errors.splice(0, errors.length - 1);
        waits.push(...cached);
        wait = waits.shift();
      }
      if (wait === undefined) {
        fail(mainError(errors) ?? err);
        return;
      }
      const t = setTimeout(one, wait);
      if (unref) t.unref();
    };
    one();
  });
}

/**
 * The sync form of {@link lock}: returns the release function (which throws
 * ERELEASED when already released). Throws ESYNC when `retries` asks for
 * any.
 */
export function lockSync(file: string, options?: LockOptions): () => void {
  refuseRetries(options);
  const o = lockOptions(options);
  const h = acquire(resolveSync(file, o.realpath, o.fs), o);
  return () => {
    if (h.released) throw releasedError();
    release(h);
  };
}

/** Releases the lock this process holds on `file`; rejects with ENOTACQUIRED when it holds none. */
export async function unlock(file: string, options?: UnlockOptions): Promise<void> {
  const fs = (options?.fs as ResolvedLockOptions['fs'] | undefined) ?? nodeFs;
  const resolved = await resolveAsync(file, realpathOf(options), fs);
  const h = locks.get(resolved);
  if (h === undefined) throw notAcquired();
  release(h);
}

/** The sync form of {@link unlock}. */
export function unlockSync(file: string, options?: UnlockOptions): void {
  const fs = (options?.fs as ResolvedLockOptions['fs'] | undefined) ?? { realpathSync: nodeFs.realpathSync };
  const h = locks.get(resolveSync(file, realpathOf(options), fs));
  if (h === undefined) throw notAcquired();
  release(h);
}

/**
 * Whether the lock on `file` is held, by this process or another: a live
 * runwarden holder (its flock), or a lock directory no live runwarden holder
 * owns whose mtime is newer than `stale`. Creates and writes nothing.
 */
export async function check(file: string, options?: CheckOptions): Promise<boolean> {
  const fs = (options?.fs as ResolvedLockOptions['fs'] | undefined) ?? nodeFs;
  const resolved = await resolveAsync(file, realpathOf(options), fs);
  return isHeld(lockDirOf(resolved, options?.lockfilePath), staleOf(options));
}

/** The sync form of {@link check}. */
export function checkSync(file: string, options?: CheckOptions): boolean {
  const fs = (options?.fs as ResolvedLockOptions['fs'] | undefined) ?? { realpathSync: nodeFs.realpathSync };
  const resolved = resolveSync(file, realpathOf(options), fs);
  return isHeld(lockDirOf(resolved, options?.lockfilePath), staleOf(options));
}

// proper-lockfile's module shape: lock is the default export, and carries the other calls.
Object.assign(lock, { lock, unlock, check, lockSync, unlockSync, checkSync });
