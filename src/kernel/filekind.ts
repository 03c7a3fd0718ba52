/**
 * What a path is, named the one way every message names it. Readers and the
 * acquire path refuse anything but a regular file, and they describe what
 * they found (a FIFO, a symlink, …) with these words.
 */
import { lstatSync, type Stats } from 'node:fs';
import type { FileKind } from '../contract/types.js';

export type { FileKind };

/** The kind from a Stats (lstat or fstat). */
export function kindOfStats(st: Stats): FileKind {
  if (st.isFile()) return 'file';
  if (st.isDirectory()) return 'directory';
  if (st.isSymbolicLink()) return 'symlink';
  if (st.isFIFO()) return 'fifo';
  if (st.isSocket()) return 'socket';
  if (st.isCharacterDevice()) return 'character device';
  if (st.isBlockDevice()) return 'block device';
  return 'unknown';
}

/** The kind from an st_mode, as the addon reports it. */
export function kindOfMode(mode: number): FileKind {
  switch (mode & 0o170000) {
    case 0o100000:
      return 'file';
    case 0o040000:
      return 'directory';
    case 0o010000:
      return 'fifo';
    case 0o120000:
      return 'symlink';
    case 0o140000:
      return 'socket';
    case 0o020000:
      return 'character device';
    case 0o060000:
      return 'block device';
    default:
      return 'unknown';
  }
}

/** The kind of `path` itself (a symlink is not followed), or undefined if nothing is there. */
export function kindAt(path: string): FileKind | undefined {
  try {
    return kindOfStats(lstatSync(path));
  } catch {
    return undefined;
  }
}
