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
 * - Never follows a symlink at the last component (O_NOFOLLOW): a link in a
 *   run directory could point anywhere, including outside the runs root.
 * - Close-on-exec: libuv adds O_CLOEXEC to every open, so no child inherits it.
 * - Only regular files are read; anything else is an error naming what it is.
 *
 * Internal to runwarden (not exported from the package).
 */
import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from 'node:fs';
import { RunFileError } from '../contract/errors.js';
import { kindAt, kindOfStats } from './filekind.js';

const READ_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW;

/** An open regular file: its descriptor and the size fstat reported at open. */
export interface OpenFile {
  readonly fd: number;
  readonly size: number;
  readonly stats: Stats;
}

/**
 * Opens `path` for reading under the rules above. Returns `undefined` when
 * nothing is there (ENOENT, or a parent that is not a directory: ENOTDIR),
 * because for a run's files absence is a fact, not an error. Throws
 * RunFileError (`ENOTREGULAR` or `EREAD`) for anything present but unreadable. `label` names the file in
 * messages (e.g. "events.jsonl").
 */
export function openForRead(path: string, label: string): OpenFile | undefined {
  let fd: number;
  try {
    fd = openSync(path, READ_FLAGS);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'EIO';
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    if (code === 'ELOOP' || code === 'ENXIO' || code === 'EOPNOTSUPP' || code === 'EISDIR') {
      const kind = kindAt(path);
      if (kind !== undefined && kind !== 'file') {
        throw new RunFileError(`${label} is a ${kind}, not a regular file`, 'ENOTREGULAR', path, { kind });
      }
    }
    throw new RunFileError(`cannot open ${label}: ${code}`, 'EREAD', path, { errno: code });
  }
  let st: Stats;
  try {
    st = fstatSync(fd);
  } catch (err) {
    closeSync(fd);
    const code = (err as NodeJS.ErrnoException).code ?? 'EIO';
    throw new RunFileError(`cannot stat ${label}: ${code}`, 'EREAD', path, { errno: code });
  }
  if (!st.isFile()) {
    closeSync(fd);
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
    closeSync(fd);
  } catch {
    /* a read-only descriptor: nothing to lose */
  }
}
