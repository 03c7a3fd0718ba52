/**
 * What a test writes or runs the same way on every system the suite runs on, linux, darwin and
 * Windows (the Wine lane): the bytes a released leg leaves in its lock file, and commands that
 * need no shell. Written out from the contract, never taken from src/.
 */
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { ROOT } from './lock-procs.js';

/**
 * The bytes a runwarden leg leaves in resume.lock on this system (CONTRACT §4.1 step 4): the marker
 * and the pid, and on Windows the lock label `locked-by LockFileEx` (§5.8 rule 2). A file of these
 * bytes whose lock nobody holds is what a leg that ended left: `free`. On Windows a marked file
 * without the label reads `unknown` (`unlabeled-lock`: test/windows.test.ts covers that kind).
 */
export function leftByLeg(pid = 4242): string {
  return `oh-my-graph-lock 1\n${pid}\n${process.platform === 'win32' ? 'locked-by LockFileEx\n' : ''}`;
}

/** A released leg's lock file, pid 4242: {@link leftByLeg}. */
export const RELEASED = leftByLeg();

/** A command that exits with `code` at once, with no shell: Node itself (`true` and `sh` are POSIX). */
export function exitWith(code: number): string[] {
  return [process.execPath, '-e', `process.exit(${code})`];
}

/** A command that creates the empty file `path` and exits 0, with no shell (`touch` is POSIX). */
export function touching(path: string): string[] {
  return [process.execPath, '-e', `require('fs').writeFileSync(${JSON.stringify(path)}, '')`];
}

/** A command that runs until it is killed, with no shell (`sleep` is POSIX). */
export const RUNS_ON: readonly string[] = [process.execPath, '-e', 'setInterval(() => {}, 1 << 30)'];

/** A command that waits until the file `gate` exists, then exits 0 (the POSIX tests' `while [ ! -e gate ]` loop). */
export function untilExists(gate: string): string[] {
  return [process.execPath, '-e', `const fs = require('fs'); const t = setInterval(() => { if (fs.existsSync(${JSON.stringify(gate)})) { clearInterval(t); } }, 20);`];
}

/**
 * The built library's entry as an import specifier for `node -e`: a file: URL, which Node for
 * Windows needs (an absolute path with a drive letter is not a URL it loads).
 */
export const DIST_URL = pathToFileURL(join(ROOT, 'dist', 'index.js')).href;

/**
 * The reason a test of a name whose file another handle holds open (renamed over, unlinked, its
 * directory removed) skips under Wine, which shows the older Windows semantics.
 */
export const OPEN_NAME_UNDER_WINE =
  'not-wine: a name whose file another handle holds open, renamed over or unlinked (Wine 8 refuses the rename, EPERM, and keeps an unlinked file at its name until its last handle closes; Windows 10 and later can remove the name at once, with POSIX semantics on NTFS)';
