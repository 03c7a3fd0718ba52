/**
 * Keeping a running leg visible to readers (CONTRACT §4.5). The lock a leg
 * holds is on an inode; readers probe a path. A restore, an rsync of the
 * runs tree, `tar -x` or an editor's save can put a new inode at that path
 * while the leg runs, and then every reader would find the path's lock free
 * and a second leg could start. The guard notices that at once and heals
 * it: it takes the lock on the file now at the path. It also notices the
 * run directory itself vanishing or being replaced, which cannot be healed
 * (the leg's events are no longer where readers look) and is reported.
 *
 * Notice comes from the kernel: `fs.watch` on the run directory (inotify on
 * linux, kqueue/FSEvents on darwin) reports every rename and create there;
 * a slow interval re-checks in case a notification is missed or watching is
 * refused. A check is two lstats.
 */
import { watch, lstatSync, type FSWatcher } from 'node:fs';
import { LockHeldError } from '../contract/errors.js';
import { runDirPath } from '../kernel/dirfd.js';
import type { HeldLock } from '../lock/acquire.js';

/** The safety re-check interval (ms), for a notification that never came. */
export const GUARD_RECHECK_MS = 250;

/** A running guard. */
export interface LegGuard {
  /** The run directory was removed or replaced while the leg ran. */
  readonly runDirLost: boolean;
  /** How many times the lock was retaken on a replaced or removed lock file. */
  readonly retaken: number;
  /** Checks now (also called on every notification and interval). */
  check(): void;
  /** Stops watching. */
  stop(): void;
}

/**
 * Guards `lock`, the lock of the run in `runDir`, until stopped. `notice`
 * receives one line for each thing worth telling the user.
 */
export function guardLeg(runDir: string, lock: HeldLock, notice: (line: string) => void): LegGuard {
  const exact = runDirPath(runDir); // names are bytes: the shown name's own bytes
  const start = lstatSync(exact, { bigint: true });
  let runDirLost = false;
  let retaken = 0;
  let stopped = false;
  let conflict = false;
  let missingSaid = false;

  const check = (): void => {
    if (stopped || runDirLost || !lock.held) return;
    let now;
    try {
      now = lstatSync(exact, { bigint: true });
    } catch {
      now = undefined;
    }
    if (now === undefined || now.ino !== start.ino || now.dev !== start.dev) {
      runDirLost = true;
      notice(`the run directory ${runDir} was removed or replaced while this leg ran; readers can no longer see this leg, and its verdict cannot be recorded there`);
      return;
    }
    try {
      const before = lock.retake();
      if (before === 'replaced') {
        retaken++;
        conflict = false;
        notice(`resume.lock was replaced while this leg ran (a restore or sync?); the leg now holds the lock on the file at ${lock.path}`);
      } else if (before === 'missing' && !missingSaid) {
        missingSaid = true;
        notice(`resume.lock was removed while this leg ran; readers cannot judge this run until a leg takes its lock again`);
      }
    } catch (e) {
      if (!conflict) {
        conflict = true;
        const why = e instanceof LockHeldError ? e.message : e instanceof Error ? e.message : String(e);
        notice(`resume.lock was replaced while this leg ran, and the leg could not take the lock on the new file: ${why}`);
      }
    }
  };

  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(exact, { persistent: false }, () => check());
    watcher.on('error', () => {
      watcher?.close();
      watcher = undefined;
    });
  } catch {
    watcher = undefined; // the interval below still checks
  }
  const timer = setInterval(check, GUARD_RECHECK_MS);
  timer.unref();

  return {
    get runDirLost() {
      return runDirLost;
    },
    get retaken() {
      return retaken;
    },
    check,
    stop() {
      stopped = true;
      clearInterval(timer);
      watcher?.close();
    },
  };
}
