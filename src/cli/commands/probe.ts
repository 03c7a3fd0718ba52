/** `runwarden probe PATH`: the three-valued answer for a lock file or run directory. */
import { lstatSync, realpathSync, statSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import type { Command } from 'commander';
import { LOCK_FILE } from '../../contract/marker.js';
import { runDirPath } from '../../kernel/dirfd.js';
import { probeLock, type ProbeResult } from '../../lock/probe.js';
import { JSON_SCHEMA } from '../../contract/types.js';
import { out, printJson } from '../io.js';
import { printable, quietOnClosedPipe } from '../term.js';

const MEANING: Record<ProbeResult['liveness'], string> = {
  held: 'a live leg holds the lock',
  free: 'no leg holds the lock; its writer is gone',
  unknown: 'cannot tell; an open leg keeps reading as in flight',
};

/**
 * A directory means its resume.lock; anything else, and anything named
 * resume.lock whatever it is, is the lock path itself.
 */
export function lockPathFor(path: string): string {
  let abs = resolve(path);
  if (basename(abs) === LOCK_FILE) return abs;
  try {
    // PATH is the user's own: a link to a run directory is resolved once here; the probe then follows none.
    if (lstatSync(runDirPath(abs)).isSymbolicLink()) abs = realpathSync(abs);
    if (statSync(runDirPath(abs)).isDirectory()) return join(abs, LOCK_FILE);
  } catch {
    /* missing or unreadable: probe it as given, which answers unknown */
  }
  return abs;
}

export function registerProbe(program: Command): void {
  program
    .command('probe')
    .summary('ask whether the leg holding a run lock is alive')
    .description(
      'Probe a run lock with a shared, non-blocking flock and print held, free or unknown with the reason.\n\n' +
        'PATH is a run directory (its resume.lock is probed) or a lock file. The probe never creates, ' +
        'writes or removes anything, and never opens the file on a filesystem not known to be local.\n\n' +
        'Exit status is 0 for every answer; 1 only on an unexpected error.',
    )
    .argument('<path>', 'run directory or lock file')
    .option('--json', 'print {"schema","path","liveness","reason"}')
    .action((path: string, opts: { json?: boolean }) => {
      quietOnClosedPipe();
      const lockPath = lockPathFor(path);
      const r = probeLock(lockPath);
      if (opts.json) {
        printJson({ schema: JSON_SCHEMA, path: lockPath, liveness: r.liveness, reason: r.reason });
        return;
      }
      const detail = r.detail ? `, ${r.detail}` : '';
      out(`${r.liveness}  (${r.reason}${printable(detail)})  ${printable(lockPath)}`);
      out(`  ${MEANING[r.liveness]}`);
    });
}
