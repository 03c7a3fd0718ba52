/**
 * The lock layer's kernel calls (lock/acquire.ts, lock/probe.ts): flock(2)
 * on a descriptor, the probe's system-call sequence in one crossing
 * (native/probe.cc), and the few facts the lock rules ask for around them.
 * Thin on purpose: each answers the addon's fact as a value and throws only
 * what the addon throws; what an answer means is decided in lock/.
 *
 * Why a file of its own: only kernel/ touches the addon object
 * (kernel/native.ts native()), so every layer above reaches the kernel
 * through named functions like these (test/layout.test.ts checks it).
 */
import type { KernelPath } from './dirfd.js';
import { isKnownLocalFs, nativeLocalList } from './fsgate.js';
import { native, type ProcessPresence } from './native.js';
import { systemFacts } from './system.js';

/** Whether this platform has flock(2) at all (the addon says; false on platforms of native/fs_other.cc). */
export function hasFlock(): boolean {
  return native().hasFlock;
}

/** The lock a leg takes here: `flock`, `LockFileEx` (Windows) or `none` (kernel/system.ts). */
export function lockPrimitive(): 'flock' | 'LockFileEx' | 'none' {
  return systemFacts().lock;
}

/** The known-local filesystem list in the addon's form for this platform (kernel/fsgate.ts), or `override` in that form. */
export function localFsList(kind: 'magic' | 'name', override?: readonly (number | string)[]): Uint32Array | string[] {
  return nativeLocalList(kind, override, native().platform);
}

/** flock(fd, op), non-blocking, `op` one of `nativeConstants().flockOp`: true when granted, false when contended. Throws NativeError. */
export function flock(fd: number, op: number): boolean {
  return native().flock(fd, op);
}

/**
 * The pid of another process whose record lock (fcntl(2), lockf(3)) keeps a flock of kind `op`
 * (`nativeConstants().flockOp` Shared or Exclusive) out of the file open as `fd`, where flock and
 * record locks are one list (darwin); undefined when a flock keeps it out, when nothing does, where
 * the two are apart (linux: no call is made), or when it cannot be told.
 */
export function recordLockHolder(fd: number, op: number): number | undefined {
  const n = native();
  if (n.system?.oneLockList !== true || typeof n.recordLockHolder !== 'function') return undefined;
  try {
    const pid = n.recordLockHolder(fd, op);
    return pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** kill(pid, 0) classified, for a pid read from a lock file: `gone`, `present` or `unknown`. */
export function pidPresence(pid: number): ProcessPresence {
  return native().pidProbe(pid);
}

/**
 * Whether the lock taken on files in the directory `path` is this system's own (CONTRACT §4.2 step 2):
 * its filesystem is on the known-local list of the addon's platform. Throws NativeError.
 */
export function isKnownLocalDir(path: KernelPath): boolean {
  return isKnownLocalFs(native().fsType(path), native().platform);
}

/** The filesystem type of a path (linux statfs f_type, darwin f_fstypename). Throws NativeError. */
export function fsTypeOf(path: KernelPath): number | string {
  return native().fsType(path);
}

/**
 * Registers, once, the known-local filesystem list and the two buffers every
 * later {@link probeFacts} call fills (`out` needs `constants.outLength` slots).
 */
export function probeSetup(localTypes: Uint32Array | string[], head: Buffer, out: Float64Array): void {
  native().probeSetup(localTypes, head, out);
}

/** The probe's sequence (CONTRACT §4.2 steps 2–5) on a lock file's path: the stage it ended at; the facts are in probeSetup's buffers. */
export function probeFacts(lockPath: KernelPath, localTypes?: Uint32Array | string[]): number {
  return localTypes === undefined ? native().probeFacts(lockPath) : native().probeFacts(lockPath, localTypes);
}

/** {@link probeFacts} for the entry `name` of the directory open as `dirfd`. */
export function probeFactsAt(dirfd: number, name: KernelPath, localTypes?: Uint32Array | string[]): number {
  return localTypes === undefined ? native().probeFactsAt(dirfd, name) : native().probeFactsAt(dirfd, name, localTypes);
}
