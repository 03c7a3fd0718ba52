/**
 * Opening a run's files for reading, the one way every reader does it
 * (CONTRACT §1.2: readers create, write and remove nothing).
 *
 * Invariants this module keeps, and why:
 * - Read-only, never created: O_RDONLY without O_CREAT, so a reader can
 *   never leave a file behind.
 * - Never blocks: O_NONBLOCK, so a FIFO planted where a file should be opens
 *   at once instead of waiting for a writer; the fstat check then refuses it
 *   before any read could wait.
 * - Never follows a symlink, neither at the file nor at the run directory:
 *   the directory is opened once with O_DIRECTORY|O_NOFOLLOW and the file
 *   relative to it with openat(2) and O_NOFOLLOW (kernel/dirfd.ts), so a
 *   link, or a directory swapped for one while it is read, cannot send a
 *   read outside the runs root.
 * - Close-on-exec: the addon adds O_CLOEXEC to every open, so no child inherits it.
 * - Only regular files are read; anything else is an error naming what it is.
 *
 * Internal to runwarden (not exported from the package).
 */
import { constants, fstatSync, readSync, type Stats } from 'node:fs';
import { basename, dirname } from 'node:path';
import { RunFileError } from '../contract/errors.js';
import { closeFd, errnoCode, kindOfEntry, openAt, openDirNoFollow, runDirPath } from './dirfd.js';
import { kindAt, kindOfStats } from './filekind.js';

const READ_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK;

/** An open regular file: its descriptor and the size fstat reported at open. */
export interface OpenFile {
  readonly fd: number;
  readonly size: number;
  readonly stats: Stats;
}

/**
 * Opens `path` for reading under the rules above: its directory without
 * following a link, then the file in it ({@link openForReadAt}), and closes
 * the directory again. The directory's last component is a shown name
 * (kernel/dirfd.ts runDirPath). Returns `undefined` when nothing is there (ENOENT, or
 * a parent that is not a directory: ENOTDIR), because for a run's files
 * absence is a fact, not an error. Throws RunFileError (`ENOTREGULAR` or
 * `EREAD`) for anything present but unreadable, and (`ENOTREGULAR`, kind
 * `symlink`) when the directory is a symlink. `label` names the file in
 * messages (e.g. "events.jsonl").
 */
export function openForRead(path: string, label: string): OpenFile | undefined {
  const dir = runDirPath(dirname(path));
  let dirfd: number;
  try {
    dirfd = openDirNoFollow(dir);
  } catch (err) {
    const code = errnoCode(err);
    const kind = code === 'ENOTDIR' || code === 'ELOOP' ? kindOfEntry(dir) : undefined;
    if (kind === 'symlink') throw new RunFileError(`the directory of ${label} is a symlink; links under the runs root are not followed`, 'ENOTREGULAR', path, { kind });
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    throw new RunFileError(`cannot open the directory of ${label}: ${code}`, 'EREAD', path, { errno: code });
  }
  try {
    return openForReadAt(dirfd, basename(path), label, path);
  } finally {
    closeFd(dirfd);
  }
}

/**
 * Opens the entry `name` of the directory open as `dirfd` for reading, under
 * the rules above (openat with O_NOFOLLOW). `path` names the file in errors
 * (it is never opened). Answers as {@link openForRead}.
 */
export function openForReadAt(dirfd: number, name: string, label: string, path: string): OpenFile | undefined {
  let fd: number;
  try {
    fd = openAt(dirfd, name, READ_FLAGS);
  } catch (err) {
    const code = errnoCode(err);
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    // With O_NOFOLLOW, ELOOP means the entry is a symlink; ENXIO, a socket.
    const kind = code === 'ELOOP' ? 'symlink' : code === 'ENXIO' ? 'socket' : code === 'EOPNOTSUPP' ? kindAt(path) : undefined;
    if (kind !== undefined && kind !== 'file') {
      throw new RunFileError(`${label} is a ${kind}, not a regular file`, 'ENOTREGULAR', path, { kind });
    }
    throw new RunFileError(`cannot open ${label}: ${code}`, 'EREAD', path, { errno: code });
  }
  let st: Stats;
  try {
    st = fstatSync(fd);
  } catch (err) {
    closeFd(fd);
    const code = (err as NodeJS.ErrnoException).code ?? 'EIO';
    throw new RunFileError(`cannot stat ${label}: ${code}`, 'EREAD', path, { errno: code });
  }
  if (!st.isFile()) {
    closeFd(fd);
    const kind = kindOfStats(st);
    throw new RunFileError(`${label} is a ${kind}, not a regular file`, 'ENOTREGULAR', path, { kind });
  }
  return { fd, size: st.size, stats: st };
}

/**
 * Reads up to `length` bytes at `position` into `buf` at `offset`; a short
 * read is the end of the (regular) file. Returns the
 * number of bytes read. Throws RunFileError (`EREAD`) on an I/O error; `label`
 * names the file in the message and `path` in the error.
 */
export function readAt(fd: number, buf: Buffer, offset: number, length: number, position: number, label: string, path: string = label): number {
  let done = 0;
  while (done < length) {
    let n: number;
    try {
      n = readSync(fd, buf, offset + done, length - done, position + done);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'EIO';
      throw new RunFileError(`cannot read ${label}: ${code}`, 'EREAD', path, { errno: code });
    }
    done += n;
    // A regular file (the only kind read here) returns fewer bytes than asked only at its end:
    // asking again would cost one more system call to learn the same.
    if (n === 0 || n < length - (done - n)) break;
  }
  return done;
}

/** Closes a descriptor, ignoring errors (nothing was written through it). */
export function closeQuietly(fd: number): void {
  try {
    closeFd(fd);
  } catch {
    /* a read-only descriptor: nothing to lose */
  }
}
