/**
 * Kernel facts for library users, with arguments validated here before any
 * native call so that a bad argument is a clear TypeError/RangeError, never a
 * stray signal: kill(0, …) and kill(-1, …) address groups, not one process.
 */
import { native, type ProcessPresence } from './native.js';

export type { ProcessPresence } from './native.js';

/** kill(pid, 0) classified: `gone` (ESRCH), `present` (exists, even if not ours), `unknown`. */
export function processPresence(pid: number): ProcessPresence {
  if (!Number.isInteger(pid) || pid < 1 || pid > 2 ** 31 - 1) {
    throw new RangeError(`pid must be an integer from 1 to 2^31-1, got ${String(pid)}`);
  }
  return native().pidProbe(pid);
}

/** kill(-pgid, 0) classified: does any process remain in that process group? */
export function groupPresence(pgid: number): ProcessPresence {
  if (!Number.isInteger(pgid) || pgid < 2 || pgid > 2 ** 31 - 1) {
    throw new RangeError(`pgid must be an integer from 2 to 2^31-1, got ${String(pgid)}`);
  }
  return native().groupProbe(pgid);
}

/** The filesystem type of `dir`: linux statfs f_type, darwin f_fstypename. Throws NativeError. */
export function filesystemType(dir: string): number | string {
  if (typeof dir !== 'string' || dir.length === 0) throw new TypeError('dir must be a non-empty string');
  return native().fsType(dir);
}
