/**
 * The read-time probe (CONTRACT §4.2): is the leg that owns this lock alive?
 *
 * Invariants this module keeps:
 * - Three answers only, and `free` needs an affirmative fact: a shared lock
 *   actually granted on a marked file on a known-local filesystem, or a
 *   pre-flock file whose strictly parsed pid kill(2) reports gone (ESRCH).
 *   Every doubt, error or surprise is `unknown`, which callers read as the
 *   pre-existing answer (an open leg is in flight). A false "dead" is the
 *   dangerous direction; nothing here can produce one from a failure.
 * - It creates, writes, truncates, renames and removes nothing: the file is
 *   opened read-only without O_CREAT, and only a shared lock is taken, so a
 *   probe never contends with another probe.
 * - It never blocks: the open is non-blocking (a FIFO answers at once) and
 *   no-follow, the lock attempt is non-blocking.
 * - On Windows the lock is LockFileEx (kernel/system.ts `lock`), and a free
 *   one is `free` only on a file whose lock label says its writer took it
 *   (contract/marker.ts hasLockLabel); otherwise `unknown`, `unlabeled-lock`.
 * - It never opens the file on a filesystem outside the known-local list:
 *   the run directory's filesystem is judged, and the lock file's own (a
 *   single file can be bind-mounted from a FUSE or network filesystem into a
 *   local directory), looked at without opening it (linux statx: an entry
 *   that is no mount root shares the directory's mount; a mount root is
 *   judged through O_PATH); the file is opened only on the judged mount
 *   (linux openat2 RESOLVE_NO_XDEV), or else its descriptor must be the file
 *   looked at (device and inode) or is judged again before any flock. A mount
 *   judged local is remembered by the id linux never reuses, so repeated
 *   probes skip the directory's fstatfs (CONTRACT §4.2 step 2).
 * - It follows no link: the run directory is opened O_DIRECTORY|O_NOFOLLOW
 *   and the lock file relative to it (openat, O_NOFOLLOW), so a directory
 *   swapped for a symlink is refused, never probed through.
 */
import { basename, dirname } from 'node:path';
import { kindOfEntry, runDirPath, runFilePath } from '../kernel/dirfd.js';
import { errnoName } from '../kernel/errno.js';
import { kindAt, kindOfMode } from '../kernel/filekind.js';
import { describeFsType } from '../kernel/fsgate.js';
import { classifyHead, hasLockLabel, HEAD_BYTES, parseLegacyPid } from '../contract/marker.js';
import { fsTypeOf, hasFlock, localFsList, lockPrimitive, pidPresence, probeFacts, probeFactsAt, probeSetup } from '../kernel/flock.js';
import { nativeConstants, type NativeConstants } from '../kernel/native.js';
import type { FreeReason, Liveness, LivenessAnswer, ProbeReason, UnknownReason } from '../contract/types.js';

export { PROBE_REASONS, type Liveness, type ProbeReason } from '../contract/types.js';
/** errno number to name; kept exported here for the modules that took it from the probe. */
export { errnoName } from '../kernel/errno.js';

/**
 * A probe's answer: a liveness with its reason, paired (checking
 * `liveness` narrows `reason`). `detail` adds facts (an errno name, a file
 * type) where there are any.
 */
export type ProbeResult = Readonly<
  LivenessAnswer & {
    /** Facts behind the reason, for a human (an errno name, a file type, a filesystem); absent when there are none. */
    detail?: string;
  }
>;

/** Test seams for what cannot be produced on this machine. */
export interface ProbeOptions {
  /**
   * Replace the known-local filesystem list (linux magics as numbers,
   * darwin names as strings). Lets a test stand in for a network
   * filesystem where none can be mounted.
   */
  localFsTypes?: readonly (number | string)[];
}

const HELD: ProbeResult = Object.freeze({ liveness: 'held', reason: 'flock-held' });
const FREE: ProbeResult = Object.freeze({ liveness: 'free', reason: 'flock-free' });

function answer(liveness: 'free', reason: FreeReason, detail?: string): ProbeResult;
function answer(liveness: 'unknown', reason: UnknownReason, detail?: string): ProbeResult;
function answer(liveness: Liveness, reason: ProbeReason, detail?: string): ProbeResult {
  // The overloads above pair each liveness with its reasons at every call.
  return Object.freeze(detail === undefined ? { liveness, reason } : { liveness, reason, detail }) as ProbeResult;
}

// Reused across calls: probes are synchronous, so one buffer serves all.
// Registered with the addon once (probeSetup), so a probe passes only paths.
// `out` is sized, and read, by the addon's own constants (outLength, outSlot).
const head = Buffer.alloc(HEAD_BYTES);
let out = new Float64Array(0);
let k: NativeConstants | undefined;

/**
 * Probes the lock file at `lockPath` (its directory is the run directory)
 * and answers held / free / unknown with a reason. Never throws for anything
 * the file system does; only a broken installation (the addon cannot load)
 * or a non-string argument throws.
 */
export function probeLock(lockPath: string, options?: ProbeOptions): ProbeResult {
  if (typeof lockPath !== 'string' || lockPath.length === 0) {
    throw new TypeError('probeLock(lockPath): lockPath must be a non-empty string');
  }
  if (lockPath.includes('\0')) return answer('unknown', 'open-error', 'path contains a NUL byte');
  if (!hasFlock()) return answer('unknown', 'unsupported-platform', `no flock(2) on ${process.platform}`);
  const k = setup();
  // The run directory's last component is a shown name (kernel/dirfd.ts): probe its exact bytes.
  // A path with no backslash and no trailing slash is already those bytes (the addon splits it as
  // dirname/basename do), so the common case skips building the same string again.
  const exact = lockPath.includes('\\') || lockPath.endsWith('/') ? runFilePath(dirname(lockPath), basename(lockPath)) : lockPath;
  let stage: number;
  try {
    stage =
      options?.localFsTypes === undefined
        ? probeFacts(exact)
        : probeFacts(exact, localFsList(k.fsTypeKind, options.localFsTypes));
  } catch (err) {
    // Only argument problems (e.g. an over-long path) throw from the addon.
    const code = (err as { code?: string }).code ?? 'error';
    return answer('unknown', 'open-error', code);
  }
  return judge(k, stage, lockPath);
}

/**
 * {@link probeLock} for the lock file `name` of the run directory open as
 * `dirfd` (kernel/dirfd.ts), so that the directory a reader has open is the
 * one probed, whatever is renamed meanwhile. `lockPath` names it in details
 * and is never opened. Internal: the status layer's inspection calls it.
 */
export function probeLockAt(dirfd: number, name: string, lockPath: string, options?: ProbeOptions): ProbeResult {
  if (!hasFlock()) return answer('unknown', 'unsupported-platform', `no flock(2) on ${process.platform}`);
  const k = setup();
  let stage: number;
  try {
    stage =
      options?.localFsTypes === undefined
        ? probeFactsAt(dirfd, name)
        : probeFactsAt(dirfd, name, localFsList(k.fsTypeKind, options.localFsTypes));
  } catch (err) {
    const code = (err as { code?: string }).code ?? 'error';
    return answer('unknown', 'open-error', code);
  }
  return judge(k, stage, lockPath);
}

/** Registers the probe's buffers with the addon once, and returns its checked constants. */
function setup(): NativeConstants {
  if (k === undefined) {
    const c = nativeConstants();
    out = new Float64Array(c.outLength);
    probeSetup(localFsList(c.fsTypeKind), head, out);
    k = c;
  }
  return k;
}

/** Turns the addon's stage (and its `out` slots) into an answer. */
function judge(k: NativeConstants, stage: number, lockPath: string): ProbeResult {
  const { stage: S, outSlot: O } = k;
  switch (stage) {
    case S.SharedGranted:
    case S.SharedContended:
    case S.SharedError:
      return judgeHead(k, stage, out[O.headLength] as number, out[O.fileSize] as number);
    case S.FsNotLocal:
      return answer('unknown', 'fs-not-local', k.fsTypeKind === 'name' ? safeFsType(dirname(lockPath)) : describeFsType(out[O.fsType] as number));
    case S.FsError: {
      const name = errnoName(out[O.errno] as number);
      if (name === 'ENOENT') return answer('unknown', 'missing', 'no run directory');
      // The run directory is opened O_DIRECTORY|O_NOFOLLOW: a symlink there answers ENOTDIR (linux) or ELOOP.
      if ((name === 'ENOTDIR' || name === 'ELOOP') && kindOfEntry(runDirPath(dirname(lockPath))) === 'symlink') {
        return answer('unknown', 'open-error', 'the run directory is a symlink; links are not followed');
      }
      return answer('unknown', 'fs-error', `${name === 'ENOTDIR' || name === 'ELOOP' ? 'open' : 'statfs'}: ${name}`);
    }
    case S.OpenError: {
      const name = errnoName(out[O.errno] as number);
      if (name === 'ENOENT') return answer('unknown', 'missing', 'no lock file');
      if (name === 'ELOOP' || name === 'ENXIO' || name === 'EISDIR') {
        const kind = name === 'ELOOP' ? 'symlink' : kindAt(lockPath);
        if (kind !== undefined && kind !== 'file') return answer('unknown', 'not-regular-file', kind);
      }
      return answer('unknown', 'open-error', `open: ${name}`);
    }
    case S.NotRegular:
      return answer('unknown', 'not-regular-file', kindOfMode(out[O.mode] as number));
    case S.ReadError:
      return answer('unknown', 'read-error', `pread: ${errnoName(out[O.errno] as number)}`);
    case S.NoFlock:
      return answer('unknown', 'unsupported-platform', `no flock(2) on ${process.platform}`);
    default:
      return answer('unknown', 'flock-error', `unexpected native stage ${stage}`);
  }
}

function safeFsType(dir: string): string {
  try {
    return describeFsType(fsTypeOf(runDirPath(dir)));
  } catch {
    return 'unknown type';
  }
}

/** Decides from the head bytes and the shared-lock answer (CONTRACT §4.2 step 6). */
function judgeHead(k: NativeConstants, stage: number, len: number, size: number): ProbeResult {
  switch (classifyHead(head, len)) {
    case 'marked': {
      if (stage === k.stage.SharedGranted) {
        // Windows: oh-my-graph's own build writes the marker and takes no lock, so a free lock
        // proves a dead leg only where the file says its writer took one (CONTRACT §4.2 step 6).
        if (lockPrimitive() === 'LockFileEx' && !hasLockLabel(head, len)) {
          return answer('unknown', 'unlabeled-lock', 'the lock file does not say its writer took a Windows lock');
        }
        return FREE;
      }
      // Where flock and record locks are one list (darwin), the shared lock may have been kept out by
      // another process's fcntl(2)/lockf(3) lock, which is no leg's: say whose, never `held`.
      const recordLock = out[k.outSlot.recordLockPid] as number;
      if (stage === k.stage.SharedContended && recordLock > 0) {
        return answer('unknown', 'record-lock', `pid ${recordLock} holds a record lock (fcntl or lockf) on the lock file, which keeps flock(2) out on this system`);
      }
      if (stage === k.stage.SharedContended) return HELD;
      return answer('unknown', 'flock-error', `flock: ${errnoName(out[k.outSlot.errno] as number)}`);
    }
    case 'future':
      return answer('unknown', 'future-marker', head.subarray(0, Math.min(len, head.indexOf(0x0a) >>> 0)).toString('latin1'));
    case 'empty':
      return answer('unknown', 'empty-file');
    case 'unmarked': {
      const pid = parseLegacyPid(head, len, size);
      if (pid === undefined) return answer('unknown', 'legacy-unparsable');
      const presence = pidPresence(pid);
      if (presence === 'gone') return answer('free', 'legacy-pid-gone', `pid ${pid}`);
      // A pid that exists may be a recycled stranger: it is never shown.
      if (presence === 'present') return answer('unknown', 'legacy-pid-alive');
      return answer('unknown', 'legacy-pid-unknown');
    }
  }
}
