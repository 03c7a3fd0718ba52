/**
 * The one error family. Every error runwarden's library throws on purpose is
 * a {@link RunwardenError}, and its `.code` is one of {@link ERROR_CODES} (or,
 * for {@link NativeError} only, the errno name the kernel reported). Callers
 * branch on `.code` and `instanceof`, never on message text; runwarden itself
 * does the same.
 *
 * Argument mistakes (a non-string path, a pid out of range) are ordinary
 * TypeError/RangeError, thrown before anything touches the kernel.
 */
import type { FileKind } from './types.js';

/**
 * Every code a {@link RunwardenError} can carry, apart from NativeError's errno
 * names. A closed set: a new code is a new documented version of the API.
 */
export const ERROR_CODES = [
  'ELOCKHELD',
  'ENOTREGULAR',
  'ELOCKREPLACED',
  'ELOCKIO',
  'ELOCKLOST',
  'ABORT_ERR',
  'ELINETOOLONG',
  'ENEWERSCHEMA',
  'EREAD',
  'ERUNUNREADABLE',
  'EBADRUNID',
  'ENOFLOCK',
  'EWRITE',
  'ECLOSED',
  'ERR_RUNWARDEN_NATIVE',
  'ELOCKED',
  'ENOTACQUIRED',
  'ERELEASED',
  'ECOMPROMISED',
  'ESYNC',
] as const;

/** A code from {@link ERROR_CODES}. */
export type ErrorCode = (typeof ERROR_CODES)[number];

/** The base class of every error runwarden throws on purpose. */
export class RunwardenError extends Error {
  /** A code from {@link ERROR_CODES}, or an errno name for {@link NativeError}. */
  readonly code: string;
  constructor(message: string, code: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'RunwardenError';
    this.code = code;
  }
}

/**
 * A failure reported by the kernel through the native addon. This class is
 * handed to the addon at load time (better-sqlite3 style), so every error the
 * native side throws is an instance of it with the errno name in `.code`, the
 * number in `.errno` and the failing call in `.syscall`. Expected answers
 * (granted, contended, ESRCH) are values and never arrive here.
 */
export class NativeError extends RunwardenError {
  /** The kernel's errno number, when the addon had one. */
  readonly errno: number | undefined;
  /** The system call that failed (`open`, `flock`, ...), when the addon named it. */
  readonly syscall: string | undefined;
  constructor(message: string, code: string, errno?: number, syscall?: string) {
    super(message, code);
    this.name = 'NativeError';
    this.errno = errno;
    this.syscall = syscall;
  }
}

/**
 * The native addon could not be loaded (`ERR_RUNWARDEN_NATIVE`); the message
 * names every path that was tried.
 */
export class AddonLoadError extends RunwardenError {
  /** The code of this class of failure, from {@link ERROR_CODES}. */
  declare readonly code: 'ERR_RUNWARDEN_NATIVE';
  constructor(message: string) {
    super(message, 'ERR_RUNWARDEN_NATIVE');
    this.name = 'AddonLoadError';
  }
}

/** This platform has no flock(2), so no lock can be taken (`ENOFLOCK`). */
export class UnsupportedPlatformError extends RunwardenError {
  /** The code of this class of failure, from {@link ERROR_CODES}. */
  declare readonly code: 'ENOFLOCK';
  constructor(message: string) {
    super(message, 'ENOFLOCK');
    this.name = 'UnsupportedPlatformError';
  }
}

/** Options for {@link LockHeldError}; all but `path` describe why it refused. */
export interface LockHeldDetails {
  /** The lock file that was refused. */
  path: string;
  /** The holder's pid label; left out for a legacy file whose pid may be alive (see {@link LockHeldError.pid}). */
  pid?: number | undefined;
  /** The file is a pre-flock lock file (default false). */
  legacy?: boolean;
  /** A legacy file's pid is affirmatively gone (default false). */
  pidGone?: boolean;
  /** A newer version wrote the file (default false). */
  future?: boolean;
}

/**
 * `acquireLock` refused because the run is (or may be) owned by another leg
 * (CONTRACT §4.1). Three shapes, told apart by the flags:
 * - `legacy`: a pre-flock lock file; its existence is the lock and a human
 *   decides. `pidGone` says its pid is affirmatively gone ("very likely
 *   stale"); `pid` is set only then, because a live pid must never be shown
 *   as something to act on.
 * - `future`: a newer version wrote the file; nothing here may judge it.
 * - neither: a live leg holds the flock; `pid` is its label from the file.
 */
export class LockHeldError extends RunwardenError {
  /** The code of this class of failure, from {@link ERROR_CODES}. */
  declare readonly code: 'ELOCKHELD';
  /** The lock file that was refused. */
  readonly path: string;
  /**
   * The holder's pid, as a label read from the file: a live leg's, or a
   * legacy file's whose pid is gone. Undefined otherwise, so a live pid is
   * never offered as something to kill or clean up after.
   */
  readonly pid: number | undefined;
  /** A pre-flock lock file: its existence is the lock, and a human decides. */
  readonly legacy: boolean;
  /** With `legacy`: the file's pid is affirmatively gone, so the file is very likely stale. */
  readonly pidGone: boolean;
  /** A newer version wrote the file; this version may not judge it. */
  readonly future: boolean;
  constructor(message: string, details: LockHeldDetails) {
    super(message, 'ELOCKHELD');
    this.name = 'LockHeldError';
    this.path = details.path;
    this.pid = details.pid;
    this.legacy = details.legacy ?? false;
    this.pidGone = details.pidGone ?? false;
    this.future = details.future ?? false;
  }
}

/** The codes a {@link LockFileError} carries. */
export type LockFileErrorCode = 'ENOTREGULAR' | 'ELOCKREPLACED' | 'ELOCKIO';

/**
 * The lock path cannot be used as a lock: it is not a regular file
 * (`ENOTREGULAR`), it was replaced or deleted while this process was
 * locking it (`ELOCKREPLACED`), or the kernel refused to create the run
 * directory or to open, read or write the lock file (`ELOCKIO`: `errno`
 * names why, e.g. EACCES, EROFS, ENOSPC, and `syscall` the call). Nothing
 * is locked when this is thrown.
 */
export class LockFileError extends RunwardenError {
  /** The code of this class of failure, from {@link ERROR_CODES}. */
  declare readonly code: LockFileErrorCode;
  /** The lock path that could not be used. */
  readonly path: string;
  /** For `ENOTREGULAR`: what the path is instead of a regular file. */
  readonly kind: FileKind | undefined;
  /** For `ELOCKIO`: the errno name the kernel reported. */
  readonly errno: string | undefined;
  /** For `ELOCKIO`: the failing call (`mkdir`, `open`, `write`, …), when known. */
  readonly syscall: string | undefined;
  constructor(message: string, code: LockFileErrorCode, path: string, kind?: FileKind, detail: { errno?: string | undefined; syscall?: string | undefined } = {}) {
    super(message, code);
    this.name = 'LockFileError';
    this.path = path;
    this.kind = kind;
    this.errno = detail.errno;
    this.syscall = detail.syscall;
  }
}

/** How a leg found out that it no longer owns its run (see {@link LockLostError}). */
export type LockLostReason = 'lock-missing' | 'lock-replaced' | 'run-dir-gone';

/**
 * A leg (`startLeg`) found that it no longer owns its run, and refused to
 * write (`ELOCKLOST`; CONTRACT §4.5). `reason`:
 * - `lock-missing`: `resume.lock` was removed while the leg held it; the
 *   leg's flock is on a file no one else can see, so a second leg could
 *   start beside it.
 * - `lock-replaced`: the file at the path was replaced and the leg could
 *   not take the lock on the new one (another process holds it: a second
 *   owner is in).
 * - `run-dir-gone`: the run directory was removed or replaced; the leg's
 *   events would no longer land where readers look.
 * The leg writes nothing more once this is thrown; releasing it is still safe.
 */
export class LockLostError extends RunwardenError {
  /** The code of this class of failure, from {@link ERROR_CODES}. */
  declare readonly code: 'ELOCKLOST';
  /** The leg's lock file (for `run-dir-gone`, the one in the directory that went). */
  readonly path: string;
  /** How the leg found out; see the class comment. */
  readonly reason: LockLostReason;
  constructor(message: string, path: string, reason: LockLostReason) {
    super(message, 'ELOCKLOST');
    this.name = 'LockLostError';
    this.path = path;
    this.reason = reason;
  }
}

/**
 * A wait was cancelled through its AbortSignal (`ABORT_ERR`). Its `name` is
 * `AbortError` and its `code` `ABORT_ERR`, as Node's own cancelled calls
 * have, so code written for those recognises it too; `cause` is the
 * signal's `reason`. Nothing was taken or changed.
 */
export class AbortError extends RunwardenError {
  /** The code of this class of failure, from {@link ERROR_CODES}. */
  declare readonly code: 'ABORT_ERR';
  constructor(message: string, options?: ErrorOptions) {
    super(message, 'ABORT_ERR', options);
    this.name = 'AbortError';
  }
}

/**
 * A file in a run directory cannot be used or read as runwarden needs it:
 * `ENOTREGULAR` (a FIFO, directory, symlink, socket or device where a
 * regular file should be) or `EREAD` (the kernel refused to open or read
 * it; `errno` names why). Nothing was written.
 */
export class RunFileError extends RunwardenError {
  /** The code of this class of failure, from {@link ERROR_CODES}. */
  declare readonly code: 'ENOTREGULAR' | 'EREAD';
  /** The run file that could not be used. */
  readonly path: string;
  /** For `ENOTREGULAR`: what the path is. */
  readonly kind: FileKind | undefined;
  /** For `EREAD`: the errno name (EACCES, EIO, …). */
  readonly errno: string | undefined;
  constructor(message: string, code: 'ENOTREGULAR' | 'EREAD', path: string, detail: { kind?: FileKind | undefined; errno?: string | undefined } = {}) {
    super(message, code);
    this.name = 'RunFileError';
    this.path = path;
    this.kind = detail.kind;
    this.errno = detail.errno;
  }
}

/**
 * Why a stream cannot be read at all (CONTRACT §2.2).
 * - `ELINETOOLONG`: a line longer than the 1 MiB cap ("corrupt or foreign").
 * - `ENEWERSCHEMA`: a line whose `schema` is newer than this version reads.
 * - `ENOTREGULAR`: the path is a FIFO, directory, symlink, socket or device.
 * - `EREAD`: the kernel refused to open or read it, or it shrank or was
 *   replaced while being read.
 */
export type StreamErrorCode = 'ELINETOOLONG' | 'ENEWERSCHEMA' | 'ENOTREGULAR' | 'EREAD';

/** The stream exists but cannot be read; nothing about the run may be derived from it. */
export class StreamError extends RunwardenError {
  /** The code of this class of failure, from {@link ERROR_CODES}. */
  declare readonly code: StreamErrorCode;
  /** The stream's path (a run's `events.jsonl`). */
  readonly path: string;
  /** A byte offset inside the offending line, when a line is to blame. */
  readonly offset: number | undefined;
  /** For `EREAD` from the kernel: the errno name (EACCES, EIO, …). */
  readonly errno: string | undefined;
  constructor(message: string, code: StreamErrorCode, path: string, offset?: number, errno?: string) {
    super(message, code);
    this.name = 'StreamError';
    this.path = path;
    this.offset = offset;
    this.errno = errno;
  }
}

/** Why a run could not be reported, grouped for the listing's closing line. */
export type SkipKind = 'unreadable-stream' | 'unreadable-snapshot' | 'permission-denied' | 'not-a-directory' | 'symlink' | 'no-descriptors' | 'error';

/** A run directory exists but no truthful report can be made for it (`ERUNUNREADABLE`). */
export class RunUnreadableError extends RunwardenError {
  /** The code of this class of failure, from {@link ERROR_CODES}. */
  declare readonly code: 'ERUNUNREADABLE';
  /** The run that could not be reported. */
  readonly runId: string;
  /** Why, in the groups the listing counts. */
  readonly kind: SkipKind;
  constructor(runId: string, message: string, kind: SkipKind) {
    super(message, 'ERUNUNREADABLE');
    this.name = 'RunUnreadableError';
    this.runId = runId;
    this.kind = kind;
  }
}

/**
 * A write to a run's file failed or fell short (`EWRITE`; `errno` names the
 * kernel's reason when there is one), or a writer was used after it was
 * closed (`ECLOSED`).
 */
export class WriteError extends RunwardenError {
  /** The code of this class of failure, from {@link ERROR_CODES}. */
  declare readonly code: 'EWRITE' | 'ECLOSED';
  /** The file (or, when a run directory could not be made, the level) that failed. */
  readonly path: string;
  /** The kernel's reason as an errno name (`ENOSPC`, `EROFS`, ...); undefined for `ECLOSED` and short writes. */
  readonly errno: string | undefined;
  constructor(message: string, code: 'EWRITE' | 'ECLOSED', path: string, errno?: string) {
    super(message, code);
    this.name = 'WriteError';
    this.path = path;
    this.errno = errno;
  }
}

/** A run id or runs root that cannot be used (empty, `.`, `..`, escaping the root, …): `EBADRUNID`. */
export class RunIdError extends RunwardenError {
  /** The code of this class of failure, from {@link ERROR_CODES}. */
  declare readonly code: 'EBADRUNID';
  constructor(message: string) {
    super(message, 'EBADRUNID');
    this.name = 'RunIdError';
  }
}

/** The codes a {@link ProperLockfileError} carries: proper-lockfile 4.x's own. */
export type ProperLockfileErrorCode = 'ELOCKED' | 'ENOTACQUIRED' | 'ERELEASED' | 'ECOMPROMISED' | 'ESYNC';

/**
 * An error of `runwarden/lockfile`, proper-lockfile's API (docs/lockfile.md).
 * Code and message are proper-lockfile's, so code written for it branches the
 * same way: `ELOCKED` "Lock file is already being held" (with `file`),
 * `ENOTACQUIRED` "Lock is not acquired/owned by you", `ERELEASED` "Lock is
 * already released", `ESYNC` "Cannot use retries with the sync api", and
 * `ECOMPROMISED`, handed to `onCompromised` when the lock directory or its
 * sidecar file was removed or replaced by someone else (its message says
 * which). The kernel's own refusals (ENOENT, EACCES, EROFS, ENOSPC, …) are
 * Node's fs errors, as proper-lockfile passes them on.
 */
export class ProperLockfileError extends RunwardenError {
  /** The code of this class of failure, from {@link ERROR_CODES}. */
  declare readonly code: ProperLockfileErrorCode;
  /** For `ELOCKED`: the file whose lock is held, resolved as the call resolved it. */
  readonly file: string | undefined;
  constructor(message: string, code: ProperLockfileErrorCode, file?: string) {
    super(message, code);
    this.name = 'ProperLockfileError';
    this.file = file;
  }
}

/** True for errno names that mean "not allowed" rather than "broken". */
export function isPermissionErrno(errno: string | undefined): boolean {
  return errno === 'EACCES' || errno === 'EPERM';
}
