/**
 * Keeping disk space for writes yet to come: the blocks of a byte range of
 * an open file are allocated now, the file's size unchanged, so a later
 * write into that range needs no new block and cannot fail for want of
 * space (src/write/append.ts keeps room for a leg's closing events this way).
 *
 * The answer is a fact, never a decision: `reserved`; `unsupported` where
 * this filesystem or platform cannot preallocate (ramfs, ext2, many FUSE and
 * network filesystems) or the kernel refused for another reason (its errno
 * is kept in `why`): a caller goes on without; `ENOSPC` / `EDQUOT` when there
 * is no room or no quota left for the range.
 */
import { NativeError } from '../contract/errors.js';
import { native } from './native.js';

export type Reservation =
  | { readonly outcome: 'reserved' }
  | { readonly outcome: 'unsupported'; readonly why: string }
  | { readonly outcome: 'ENOSPC' | 'EDQUOT' };

/** Reserves `[offset, offset + length)` of the open regular file `fd` (see the module comment). */
export function reserveSpace(fd: number, offset: number, length: number): Reservation {
  let answer;
  try {
    answer = native().reserveSpace(fd, offset, length);
  } catch (e) {
    // EIO, EPERM (an immutable file), EBADF …: a reservation is a safety net, not
    // a precondition; the write that follows meets the same kernel and says why.
    if (e instanceof NativeError && e.syscall !== undefined) return { outcome: 'unsupported', why: e.code };
    throw e;
  }
  if (answer === 'unsupported') return { outcome: 'unsupported', why: 'EOPNOTSUPP' };
  return { outcome: answer };
}
