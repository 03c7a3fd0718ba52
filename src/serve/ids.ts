/**
 * Run ids as they arrive over HTTP (CONTRACT §1.1: over HTTP only run ids are
 * accepted, and nothing outside the root is ever read or served).
 *
 * Invariant: a string that passes {@link checkRunId} names at most one
 * directory entry directly inside the root. It holds no path separator, no
 * NUL, and is not `.` or `..`, nor stands for one through an escape of the
 * shown name (contract/names.ts), so `join(root, id)` cannot leave the root;
 * {@link resolveRunDir} then refuses anything that is not a real directory
 * there (a symlink could point anywhere, so it is refused too).
 */
import { lstatSync } from 'node:fs';
import { join } from 'node:path';
import { nameBytes } from '../contract/names.js';
import { runIdProblem } from '../contract/runid.js';
import { runDirPath } from '../kernel/dirfd.js';

/** Longest directory name most filesystems allow (NAME_MAX), in bytes. */
const NAME_MAX = 255;

/**
 * Why a run id was refused, or undefined when it is acceptable: the
 * command line's rules (runIdProblem: not empty, not `.`/`..`, no `/`, no
 * NUL), plus two that only matter for ids arriving over HTTP.
 */
export function checkRunId(id: string): string | undefined {
  const problem = runIdProblem(id);
  if (problem !== undefined) return problem;
  // A backslash starts an escape of the shown name (contract/names.ts); runIdProblem checked what it stands for.
  if (nameBytes(id).length > NAME_MAX) return 'run id is longer than a directory name can be';
  return undefined;
}

/**
 * Decodes one percent-encoded path segment. Returns undefined for a malformed
 * encoding (a lone `%`, invalid UTF-8), which callers answer with 400.
 */
export function decodeSegment(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

/** The outcome of resolving a run id to its directory. */
export type RunDirLookup =
  | { ok: true; dir: string }
  | { ok: false; status: 400 | 404; code: 'bad-run-id' | 'not-found'; message: string };

/**
 * Resolves a run id to `<root>/<id>` if, and only if, it is a valid id and
 * that entry is a directory (not a symlink). Reads one lstat; writes nothing.
 */
export function resolveRunDir(root: string, id: string): RunDirLookup {
  const bad = checkRunId(id);
  if (bad !== undefined) return { ok: false, status: 400, code: 'bad-run-id', message: bad };
  const dir = join(root, id);
  try {
    const st = lstatSync(runDirPath(dir));
    if (st.isDirectory()) return { ok: true, dir };
    return { ok: false, status: 404, code: 'not-found', message: `no run "${id}" under the root (not a directory)` };
  } catch {
    return { ok: false, status: 404, code: 'not-found', message: `no run "${id}" under the root` };
  }
}
