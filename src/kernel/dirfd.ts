/**
 * Directories by descriptor (CONTRACT §1.3): every read and write under a runs
 * root is relative to a descriptor of the run directory, opened once without
 * following a link at its last component, and every file in it is opened
 * with openat(2) and O_NOFOLLOW (native/dirfd.cc).
 *
 * Why: checking a path and then opening it by path leaves a window in which
 * the directory can be swapped for a symlink to anywhere (renameat2 with
 * RENAME_EXCHANGE), and the open would follow it outside the root. A
 * descriptor names the directory that was opened, whatever holds its name
 * afterwards, so no rename, swap or replacement can redirect what is read
 * through it.
 *
 * Paths may be Buffers: a name that is not valid UTF-8 reaches the kernel
 * byte for byte. Every descriptor opened here is close-on-exec, and every
 * caller closes what it opens (try/finally).
 *
 * Internal to runwarden (not exported from the package).
 */
import { lstatSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { NativeError } from '../contract/errors.js';
import { nameBytes } from '../contract/names.js';
import { kindOfStats, type FileKind } from './filekind.js';
import { native } from './native.js';

/** A path the kernel takes as given: a string (UTF-8) or a Buffer (exact bytes). */
export type KernelPath = string | Buffer;

/**
 * The exact bytes of the run directory whose path is `dir`: its last
 * component is a shown name (contract/names.ts: `\xHH` for a byte that is
 * not UTF-8, `\\` for a backslash), read back into the bytes it stands
 * for; the components above it (the runs root) are taken as given. A path
 * whose last component holds no backslash is returned unchanged.
 */
const DOT = Buffer.from('.');
const DOTDOT = Buffer.from('..');

export function runDirPath(dir: string): KernelPath {
  const name = basename(dir);
  if (!name.includes('\\')) return dir;
  const bytes = nameBytes(name);
  // A shown name never stands for '/', NUL, '.' or '..' (names.ts); a name that would is taken literally.
  if (bytes.includes(0x2f) || bytes.includes(0) || bytes.equals(DOT) || bytes.equals(DOTDOT)) return dir;
  const parent = dirname(dir);
  return Buffer.concat([Buffer.from(parent.endsWith('/') ? parent : `${parent}/`, 'utf8'), bytes]);
}

/** The exact path of the file `file` in the run directory `dir` (see {@link runDirPath}). */
export function runFilePath(dir: string, file: string): KernelPath {
  const d = runDirPath(dir);
  return typeof d === 'string' ? `${d}/${file}` : Buffer.concat([d, Buffer.from(`/${file}`, 'utf8')]);
}

/**
 * Opens the directory at `path` without following a link at its last
 * component (O_DIRECTORY|O_NOFOLLOW|O_CLOEXEC). Throws NativeError with the
 * kernel's code: ENOENT, ENOTDIR (also what linux answers for a symlink
 * there: see {@link kindOfEntry} to tell which), ELOOP, EACCES …
 */
export function openDirNoFollow(path: KernelPath): number {
  return native().openDirNoFollow(path);
}

/**
 * Opens the entry `name` of the directory open as `dirfd`, with `flags`
 * (Node's fs.constants) plus O_NOFOLLOW|O_CLOEXEC, always. `name` is one
 * entry: no '/', not '.' or '..'. Throws NativeError.
 */
export function openAt(dirfd: number, name: KernelPath, flags: number, mode?: number): number {
  return native().openAt(dirfd, name, flags, mode);
}

/** fstatfs of an open descriptor: linux f_type, darwin f_fstypename. Throws NativeError. */
export function fsTypeOfFd(fd: number): number | string {
  return native().fsTypeFd(fd);
}

/** renameat(2) of two entries of the directory open as `dirfd`. Throws NativeError. */
export function renameAt(dirfd: number, from: string, to: string): void {
  native().renameAt(dirfd, from, to);
}

/** unlinkat(2) of an entry (never a directory): true when removed, false when absent. Throws NativeError. */
export function unlinkAt(dirfd: number, name: string): boolean {
  return native().unlinkAt(dirfd, name);
}

/** The identity of the entry `name` itself (fstatat, no link followed), or undefined when absent. Throws NativeError. */
export function identityAt(dirfd: number, name: string): { dev: bigint; ino: bigint } | undefined {
  const id = native().identityAt(dirfd, name);
  return id === null ? undefined : { dev: id[0], ino: id[1] };
}

/** What is at `path` itself (lstat: a symlink is not followed), or undefined when nothing is. For messages only. */
export function kindOfEntry(path: KernelPath): FileKind | undefined {
  try {
    return kindOfStats(lstatSync(path));
  } catch {
    return undefined;
  }
}

/** The kernel's code of a failed native call (ENOENT …), or `EIO` when it has none. */
export function errnoCode(err: unknown): string {
  if (err instanceof NativeError && typeof err.code === 'string') return err.code;
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : 'EIO';
}

/** Closes a descriptor this process opened, ignoring errors (nothing is written through it here). */
export function closeFd(fd: number): void {
  try {
    // The addon's close: a worker thread's fs warns when it closes a descriptor it did not open.
    native().closeFd(fd);
  } catch (e) {
    // The kernel's refusal (EIO on a network filesystem): nothing was written through it here.
    // Anything else (a stale addon without closeFd) must not turn into a silent leak.
    if (!(e instanceof NativeError)) throw e;
  }
}

/**
 * Runs `fn` with a descriptor of the directory at `path` (opened by
 * {@link openDirNoFollow}) and closes it however `fn` ends.
 */
export function withDir<T>(path: KernelPath, fn: (dirfd: number) => T): T {
  const fd = openDirNoFollow(path);
  try {
    return fn(fd);
  } finally {
    closeFd(fd);
  }
}
