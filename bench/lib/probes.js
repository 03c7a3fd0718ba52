/**
 * Every way the bench asks "is the leg that owns this lock alive?", each as a
 * function of the lock path that answers 'held' (alive), 'free' (gone) or
 * 'unknown'. runwarden's own probeLock is one of them; the rest are what the
 * bench compares it with:
 *
 * - composed probes: the same CONTRACT §4.2 steps built from node:fs calls plus the
 *   addon's single-purpose flock/fsType, once with LOCK_SH (to price the
 *   composition) and once with LOCK_EX|LOCK_NB (the design's rejected
 *   alternative, which exists only here, in the bench);
 * - the peers a Node user would reach for: proper-lockfile's checkSync (a
 *   `<path>.lock` directory and its mtime), fs-ext's flockSync, and a pid
 *   check with process.kill(pid, 0).
 *
 * They answer from the kernel exactly as their libraries do; none of them is
 * made smarter or dumber than it is.
 */
import { closeSync, constants, openSync, readFileSync, readSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { classifyHead, LINUX_LOCAL_FS, probeLock } from '../../dist/index.js';
import { native, nativeConstants } from '../../dist/kernel/native.js';

const require = createRequire(import.meta.url);

const RO = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW;
const head = Buffer.alloc(128);

/** runwarden's probe, reduced to its liveness word. */
export function probeShared(lockPath) {
  return probeLock(lockPath).liveness;
}

/**
 * CONTRACT §4.2 composed in JS: statfs (native fsType) against the local list, open
 * (libuv adds O_CLOEXEC), pread 128 at 0, marker check, flock with the op
 * named `opName` (`Shared` = LOCK_SH|LOCK_NB, `Exclusive` = LOCK_EX|LOCK_NB,
 * numbered by the addon's constants.flockOp), unlock when granted, close.
 * It skips the fstat file-type check the real probe makes (the bench's
 * files are regular), so it makes one syscall fewer than the floor.
 */
function composed(opName) {
  return function probe(lockPath) {
    const n = native();
    const ops = nativeConstants().flockOp;
    const op = ops[opName];
    let type;
    try {
      type = n.fsType(dirname(lockPath));
    } catch {
      return 'unknown';
    }
    if (!LINUX_LOCAL_FS.has(type)) return 'unknown';
    let fd;
    try {
      fd = openSync(lockPath, RO);
    } catch {
      return 'unknown';
    }
    try {
      const len = readSync(fd, head, 0, head.length, 0);
      if (classifyHead(head, len) !== 'marked') return 'unknown';
      if (n.flock(fd, op)) {
        n.flock(fd, ops.Unlock);
        return 'free';
      }
      return 'held';
    } catch {
      return 'unknown';
    } finally {
      closeSync(fd);
    }
  };
}

/** The same steps as the real probe, from node:fs + the addon's flock, with LOCK_SH. */
export const probeComposedShared = composed('Shared');
/** The design runwarden does not use: the same, with LOCK_EX|LOCK_NB. Exists only in the bench, to compare. */
export const probeExclusive = composed('Exclusive');

/**
 * proper-lockfile's answer: checkSync is true while `<path>.lock` exists and
 * its mtime is younger than `stale` ms (its default is 10 s, minimum 2 s).
 */
export function properLockfileCheck(stale) {
  const lockfile = require('proper-lockfile');
  const opts = { stale };
  return function probe(lockPath) {
    try {
      return lockfile.checkSync(lockPath, opts) ? 'held' : 'free';
    } catch {
      return 'unknown';
    }
  };
}

/** fs-ext's flockSync on a fresh fd: 'shnb' granted means no exclusive holder. Contention throws EAGAIN. */
export function fsExtFlock() {
  const fsext = require('fs-ext');
  return function probe(lockPath) {
    let fd;
    try {
      fd = openSync(lockPath, 'r');
    } catch {
      return 'unknown';
    }
    try {
      fsext.flockSync(fd, 'shnb');
      fsext.flockSync(fd, 'un');
      return 'free';
    } catch (err) {
      return err.code === 'EAGAIN' || err.code === 'EWOULDBLOCK' ? 'held' : 'unknown';
    } finally {
      closeSync(fd);
    }
  };
}

/** process.kill(pid, 0) on a known pid: success or EPERM says a process by that number exists. */
export function killCheck(pid) {
  try {
    process.kill(pid, 0);
    return 'held';
  } catch (err) {
    return err.code === 'ESRCH' ? 'free' : err.code === 'EPERM' ? 'held' : 'unknown';
  }
}

/** The last line of the lock file that is all digits (the pid under either format), or undefined. */
export function pidFromFile(lockPath) {
  const text = readFileSync(lockPath, 'latin1');
  const lines = text.split('\n');
  for (let i = lines.length - 1; i >= 0; i--) {
    const s = lines[i].trim();
    if (/^[1-9][0-9]*$/.test(s)) return Number(s);
  }
  return undefined;
}

/** The naive pid check a tool without flock does: read the pid from the file, then kill(pid, 0). */
export function pidFileCheck(lockPath) {
  let pid;
  try {
    pid = pidFromFile(lockPath);
  } catch {
    return 'unknown';
  }
  return pid === undefined ? 'unknown' : killCheck(pid);
}
