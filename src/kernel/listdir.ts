/**
 * A directory's entries, as the kernel lists them, in one crossing
 * (native/runfiles.cc readDirSorted): the names in byte order as latin1
 * strings (one character per byte: the exact bytes, whatever their
 * encoding) and one kind letter each, from `d_type` or `fstatat` without
 * following a link. No Buffer or Dirent per entry, which at 100,000 runs
 * would be tens of MB. Throws NativeError (ENOENT, ENOTDIR, EACCES …).
 */
import type { KernelPath } from './dirfd.js';
import { native } from './native.js';

/** The entries of `path`, ascending byte order: `names[i]` (latin1) and `kinds[i]` (d, l, f, p, s, c, b, ?). */
export function readDirSorted(path: KernelPath): { names: string[]; kinds: string } {
  return native().readDirSorted(path);
}
