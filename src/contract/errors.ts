/**
 * The error classes runwarden throws. Every one has a stable string `.code`,
 * so callers branch on codes, never on message text.
 */

/**
 * A failure reported by the kernel through the native addon. This class is
 * handed to the addon at load time (better-sqlite3 style), so every error the
 * native side throws is an instance of it with the errno name in `.code`, the
 * number in `.errno` and the failing call in `.syscall`. Expected answers
 * (granted, contended, ESRCH) are values and never arrive here.
 */
export class NativeError extends Error {
  readonly code: string;
  readonly errno: number | undefined;
  readonly syscall: string | undefined;
  constructor(message: string, code: string, errno?: number, syscall?: string) {
    super(message);
    this.name = 'NativeError';
    this.code = code;
    this.errno = errno;
    this.syscall = syscall;
  }
}

/** Options for {@link LockHeldError}; all but `path` describe why it refused. */
export interface LockHeldDetails {
  path: string;
  pid?: number | undefined;
  legacy?: boolean;
  pidGone?: boolean;
  future?: boolean;
}

/**
 * `acquireLock` refused because the run is (or may be) owned by another leg.
 * Three shapes, told apart by the flags:
 * - `legacy`: a pre-flock lock file; its existence is the lock and a human
 *   decides. `pidGone` says its pid is affirmatively gone ("very likely
 *   stale"); `pid` is set only then, because a live pid must never be shown
 *   as something to act on.
 * - `future`: a newer version wrote the file; nothing here may judge it.
 * - neither: a live leg holds the flock; `pid` is its label from the file.
 */
export class LockHeldError extends Error {
  readonly code = 'ELOCKHELD' as const;
  readonly path: string;
  readonly pid: number | undefined;
  readonly legacy: boolean;
  readonly pidGone: boolean;
  readonly future: boolean;
  constructor(message: string, details: LockHeldDetails) {
    super(message);
    this.name = 'LockHeldError';
    this.path = details.path;
    this.pid = details.pid;
    this.legacy = details.legacy ?? false;
    this.pidGone = details.pidGone ?? false;
    this.future = details.future ?? false;
  }
}

import type { FileKind } from '../kernel/filekind.js';

export type { FileKind } from '../kernel/filekind.js';

/**
 * The lock path cannot be used as a lock: it is not a regular file
 * (`ENOTREGULAR`), or it was replaced or deleted while this process was
 * locking it (`ELOCKREPLACED`). Nothing was locked when this is thrown.
 */
export class LockFileError extends Error {
  readonly code: 'ENOTREGULAR' | 'ELOCKREPLACED';
  readonly path: string;
  readonly kind: FileKind | undefined;
  constructor(message: string, code: 'ENOTREGULAR' | 'ELOCKREPLACED', path: string, kind?: FileKind) {
    super(message);
    this.name = 'LockFileError';
    this.code = code;
    this.path = path;
    this.kind = kind;
  }
}

/**
 * A file in a run directory cannot be used as runwarden needs it (e.g. a
 * FIFO or symlink where events.jsonl should be). Nothing was written.
 */
export class RunFileError extends Error {
  readonly code: string;
  readonly path: string;
  constructor(message: string, code: string, path: string) {
    super(message);
    this.name = 'RunFileError';
    this.code = code;
    this.path = path;
  }
}
