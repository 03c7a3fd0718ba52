/**
 * Where runs live and what names a run (CONTRACT §1.1): the runs root, run
 * ids, RUN arguments, and "newest first". Path arithmetic only: nothing here
 * touches the file system.
 */
import { homedir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { RunIdError } from './errors.js';
import { isPlainName, nameBytes } from './names.js';

/**
 * Descending byte order of names ("newest first"). Run ids are shown names
 * (names.ts), so they are compared as the bytes they stand for: a name with
 * the byte 0xff sorts where that byte sorts, not where its `\xff` would.
 */
export function compareNewestFirst(a: string, b: string): number {
  return Buffer.compare(nameBytes(b), nameBytes(a));
}

/**
 * A string whose UTF-16 order is the byte order of the name `shown` stands
 * for (CONTRACT §1.1 rule 6): the shown name itself when it is ASCII with no
 * backslash (no escape in it, so its characters are its bytes), else the
 * name's bytes as latin1 (one character per byte). For indexes that keep
 * names sorted without a Buffer per name; agrees with
 * {@link compareNewestFirst}.
 */
export function nameOrderKey(shown: string): string {
  return isPlainName(shown) ? shown : nameBytes(shown).toString('latin1');
}

/**
 * The runs root, first match wins: `rootOption` (the `--root` option);
 * `$OMG_HOME/runs` when OMG_HOME is set and non-empty;
 * `$HOME/.oh-my-graph/runs`. Always absolute. Throws RunIdError for an
 * empty `rootOption`.
 */
export function resolveRoot(rootOption?: string, env: NodeJS.ProcessEnv = process.env): string {
  if (rootOption !== undefined) {
    if (rootOption === '') throw new RunIdError('--root must not be empty');
    return resolve(rootOption);
  }
  const omg = env['OMG_HOME'];
  if (omg !== undefined && omg !== '') return resolve(omg, 'runs');
  const home = env['HOME'] !== undefined && env['HOME'] !== '' ? env['HOME'] : homedir();
  return resolve(home, '.oh-my-graph', 'runs');
}

/** Why `id` is not a usable run id, or undefined when it is one. */
export function runIdProblem(id: string): string | undefined {
  if (typeof id !== 'string' || id === '') return 'a run id must not be empty';
  if (id === '.' || id === '..') return `"${id}" is not a run id`;
  if (id.includes('/')) return `a run id cannot contain "/" (got "${id}")`;
  if (id.includes('\0')) return 'a run id cannot contain a NUL byte';
  // A run id is a shown name (names.ts): what it stands for must be one directory entry too.
  const bytes = nameBytes(id);
  if (bytes.includes(0x2f) || bytes.includes(0)) return `a run id cannot stand for "/" or a NUL byte (got "${id}")`;
  const plain = bytes.toString('latin1');
  if (plain === '.' || plain === '..') return `"${id}" is not a run id`;
  return undefined;
}

/** True when `id` names a directory directly under a root. */
export function isValidRunId(id: string): boolean {
  return runIdProblem(id) === undefined;
}

/**
 * The directory of run `id` under `root`. Refuses anything that is not a
 * plain run id, and checks the joined path is directly inside the root, so
 * no id can reach outside it (the rule `serve` relies on).
 */
export function runDirForId(root: string, id: string): string {
  const problem = runIdProblem(id);
  if (problem !== undefined) throw new RunIdError(problem);
  const base = resolve(root);
  const dir = join(base, id);
  if (dirname(dir) !== base || basename(dir) !== id) throw new RunIdError(`run id "${id}" does not name a directory inside the runs root`);
  return dir;
}

/**
 * Whether a command-line RUN is a path rather than a run id (CONTRACT §1.1 rule 8): it holds a `/`;
 * on Windows also when it starts with a drive letter (`C:`), or holds a backslash that stands for
 * itself (not an escape of the shown name, names.ts), since no file name there can hold either.
 */
export function isRunPath(run: string, platform: NodeJS.Platform = process.platform): boolean {
  if (run.includes('/')) return true;
  if (platform !== 'win32') return false;
  return /^[A-Za-z]:/.test(run) || (run.includes('\\') && nameBytes(run).includes(0x5c));
}

/**
 * The run directory a command-line RUN names: a path ({@link isRunPath}) used
 * as given (made absolute); otherwise a run id under `root`. Throws
 * RunIdError for an empty id, `.`, `..` or a NUL byte.
 */
export function resolveRunArg(run: string, root: string): string {
  if (run.includes('\0')) throw new RunIdError('RUN cannot contain a NUL byte');
  if (isRunPath(run)) return resolve(run);
  return runDirForId(root, run);
}
