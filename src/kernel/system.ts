/**
 * What this system offers, asked of the addon, never guessed from `process.platform`: the same
 * TypeScript then takes its darwin paths wherever the addon is darwin's (a Mac, or the XNU model
 * build on linux, scripts/darwin-model.mjs), and its linux paths wherever it is linux's.
 *
 * - `procfs`: a /proc to read (/proc/locks, /proc/<pid>/fd, /proc/<pid>/environ). darwin has none.
 * - `closeWrite`: the change notifier says when the last writable descriptor of a file was closed
 *   (inotify IN_CLOSE_WRITE). kqueue has no such notice: a leg's death is found through its
 *   process's exit, or by probing again.
 * - `holderTable`: where the holders of a lock file are found: `proc-locks` (the kernel's flock
 *   table and /proc/<pid>/fd), `libproc` (darwin: which processes of this user hold which files
 *   open, and whether for writing; no lock table), or `none`.
 * - `watchHoldsDescriptor`: each watch of the change notifier holds a descriptor of this process
 *   (kqueue EVFILT_VNODE), so watches are budgeted (kernel/notify.ts).
 * - `exitWatchHoldsDescriptor`: each watch of a process's exit holds a descriptor of this process
 *   (a pidfd, linux); kqueue EVFILT_PROC holds none (darwin kqueue(2): its identifier is the
 *   process ID, not a descriptor).
 * - `lock`: the lock a leg takes: `flock` (flock(2), linux and darwin), `LockFileEx` (Windows: one
 *   byte of the lock file, exclusive for a leg, shared and fail-immediately for a probe), or `none`.
 * - `entryWrites`: a directory watch tells writes to the files in it, by name (inotify IN_MODIFY).
 *   kqueue's directory NOTE_WRITE fires only when an entry is created, removed or renamed
 *   (kqueue(2)): an append to a file is told only by a watch on that file.
 * - `oneLockList`: flock(2) locks and fcntl(2) record locks are one list per file, so a record lock
 *   of another process keeps a flock out (darwin: xnu's lf_getblock does not tell them apart);
 *   apart on linux, where only a flock blocks a flock.
 */
import { native } from './native.js';

export interface SystemFacts {
  readonly procfs: boolean;
  readonly closeWrite: boolean;
  readonly holderTable: 'proc-locks' | 'libproc' | 'none';
  readonly watchHoldsDescriptor: boolean;
  readonly exitWatchHoldsDescriptor: boolean;
  readonly entryWrites: boolean;
  readonly lock: 'flock' | 'LockFileEx' | 'none';
  readonly oneLockList: boolean;
}

let facts: SystemFacts | undefined;

/** The facts of the loaded addon's system (an older addon without `system`: read from its platform). */
export function systemFacts(): SystemFacts {
  if (facts !== undefined) return facts;
  const n = native();
  const sys: NonNullable<typeof n.system> = n.system ?? { procfs: n.platform === 'linux', holderTable: n.platform === 'linux' ? 'proc-locks' : 'none' };
  facts = Object.freeze({
    procfs: sys.procfs,
    closeWrite: n.notify.mask['closeWrite'] !== undefined,
    holderTable: sys.holderTable,
    watchHoldsDescriptor: n.notify.backend === 'kqueue',
    exitWatchHoldsDescriptor: n.notify.exitBackend === 'pidfd',
    entryWrites: n.notify.backend === 'inotify',
    lock: sys.lock ?? (n.hasFlock ? 'flock' : 'none'),
    oneLockList: sys.oneLockList ?? false,
  });
  return facts;
}
