/**
 * Removing a test's temp directory even when the test made parts of it
 * unreadable or unsearchable (mode 000 directories, as the permission tests
 * do): as any user but root, rmSync stops at EACCES there. Every directory's
 * owner bits are restored to rwx first, top down, without following symlinks;
 * file modes do not matter for removal, so files are left as they are.
 */
import { chmodSync, lstatSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';

function restoreDirs(dir: string): void {
  let mode: number;
  try {
    const st = lstatSync(dir);
    if (!st.isDirectory()) return;
    mode = st.mode & 0o7777;
  } catch {
    return; // already gone
  }
  if ((mode & 0o700) !== 0o700) {
    try {
      chmodSync(dir, mode | 0o700);
    } catch {
      /* not ours to change: rmSync will say so */
    }
  }
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) restoreDirs(join(dir, name));
}

/** Removes `dir` and everything under it, restoring directory permissions first. */
export function removeTree(dir: string): void {
  restoreDirs(dir);
  rmSync(dir, { recursive: true, force: true });
}
