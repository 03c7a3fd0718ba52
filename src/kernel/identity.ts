/**
 * File identities, for noticing that a file changed without reading it: each
 * file's lstat device, inode, size and mtime (or the errno that kept lstat
 * from answering), many files per native call (native/identity.cc).
 *
 * An identity is a run of {@link identityStride} numbers in a Float64Array.
 * Two identities are equal when every slot is: the same file (device and
 * inode), neither grown nor shrunk, not written since (mtime), or absent for
 * the same reason. Nothing here allocates per file, which is the point: the
 * live engine compares every followed run's files on each safety pass.
 */
import { runDirPath, type KernelPath } from './dirfd.js';
import { native } from './native.js';

/** How many slots one file's identity takes. */
export function identityStride(): number {
  return native().fileIdentityStride;
}

/** A zeroed buffer for `files` identities (never equal to a real one: a found file has a nonzero inode). */
export function identityBuffer(files: number): Float64Array {
  return new Float64Array(files * identityStride());
}

/**
 * Writes the identity of `dirs[i]/names[j]` for every directory and name
 * into `out`, file (i, j) at `(i * names.length + j) * identityStride()`.
 * Each directory's last component is a shown name (kernel/dirfd.ts
 * runDirPath): the files of the directory it stands for are looked at, by
 * its exact bytes. A list without a backslash is passed as it is.
 */
export function readIdentities(dirs: readonly string[], names: readonly string[], out: Float64Array): void {
  let exact: KernelPath[] | undefined;
  for (let i = 0; i < dirs.length; i++) {
    const d = dirs[i] as string;
    if (exact === undefined && !d.includes('\\')) continue;
    exact ??= dirs.slice(0, i);
    exact.push(runDirPath(d));
  }
  native().fileIdentities(exact ?? dirs, names, out);
}

/**
 * Compares `kept` (all its slots) with as many slots of `fresh` from slot
 * `at`; when they differ, copies them into `kept`. Returns whether they
 * differed.
 */
export function takeIfChanged(fresh: Float64Array, at: number, kept: Float64Array): boolean {
  const n = kept.length;
  let i = 0;
  while (i < n && fresh[at + i] === kept[i]) i++;
  if (i === n) return false;
  kept.set(fresh.subarray(at, at + n));
  return true;
}
